"""How long a pause must last before the turn is over, from what the signals say.

Pure arithmetic, no clocks or threads: unit-tested with numbers.  Each signal votes
between -1 (unfinished) and +1 (finished) and the votes add up: the words model (its
log P(end) mapped from ``words_incomplete_logp`` to ``words_complete_logp``), the text (a
tag or final particle +1, "?" or a question word +0.5) and, optionally, Smart Turn's
sound.  +1 or more is *complete* (a short wait), -1 or less *incomplete* (a long one),
between *uncertain*: never longer than the text rules would wait, as doubt is no evidence
that more words are coming.  A trailing and/so/um waits longest; with no model signal the
text rules decide ("?" or a tag twice in a row: the question wait).

The guess waits on evidence, not on the machine: finished words leave once the pause is
in, unsure ones after a pause longer than most between words, words that expect more just
before the endpoint.  Each wait is a ``[turns]`` setting; the numbers and their reasons:
decisions 0001, 0005, 0015, 0023 and 0032.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from app.core.config import TurnConfig

Verdict = Literal["complete", "uncertain", "incomplete", "thinking"]

LEARNED_PAUSE_FACTOR = 1.25
"""When unsure, wait a quarter longer than the longest pause the interviewer made inside
a question lately: their own rhythm, with room for a slightly longer one."""


@dataclass(frozen=True, slots=True)
class TextCues:
    """What the words themselves say, punctuation aside (the recogniser guesses it)."""

    tag: bool = False
    """Ends in an end word or a final particle: "…, right?", "you know", 对吧, 吗."""
    question: bool = False
    """Ends in "?" or holds a question word (什么, 怎么…)."""
    trailing: bool = False
    """Ends in a thinking word: and, so, but, um, 然后…"""
    question_streak: int = 0
    """Consecutive partials that ended in "?" or a tag (the text rules' question cue)."""
    asks: bool | None = None
    """The words as said ask or request (a question opener, "tell me…", 吗, 请…); False:
    a statement (in words a pass heard up to the voice's end); None: not read (the
    language has no lists, or the partial lags the voice)."""
    closed: bool = False
    """The newest partial heard all the voice and its words close a question: a tag, a
    final particle, or a question word before the closing mark (什么？, 吗, 呢)."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """Model signals for the current text/audio; None = missing, failed or not yet there."""

    words_logp: float | None = None
    sound_p: float | None = None
    words_pending: bool = False
    """The words model is scoring this text right now (its result is one call away)."""
    guess_confirmed: bool = False
    """The guess sent at this pause is held with its answer ready (low-latency mode), and
    every pass since the voice stopped heard the same question: an unsure verdict waits
    ``endpoint_confirmed_ms`` at most (decision 0032)."""


@dataclass(frozen=True, slots=True)
class Wait:
    verdict: Verdict
    endpoint_ms: float
    """Silence after the last voiced frame that ends the turn."""
    speculate_ms: float
    """Silence after which a current partial is sent as a guess."""
    score: float | None
    """Sum of the votes; None when the text rules decided (no model signal)."""
    ahead_ms: float | None = None
    """Silence after which the newest partial is guessed even though no pass has heard
    all the voice yet (words called finished); None: only a current partial is guessed."""


def words_vote(cfg: TurnConfig, logp: float) -> float:
    lo, hi = cfg.words_incomplete_logp, cfg.words_complete_logp
    return max(-1.0, min(1.0, -1.0 + 2.0 * (logp - lo) / (hi - lo)))


def decide(cfg: TurnConfig, cues: TextCues, evidence: Evidence,
           learned_pause_ms: float | None = None) -> Wait:
    """The wait for this text and these signals (all times in ms of silence)."""
    sound = evidence.sound_p if cfg.smart_turn_weight > 0 else None
    if cues.trailing and not cues.tag:
        return _wait(cfg, "thinking", cfg.endpoint_thinking_silence_ms, None)
    if cues.asks is False and cues.question_streak < 2:
        # a statement asks nothing: a preamble to the question, however finished it sounds;
        # unless pass after pass hears it rise ("你用过 Kubernetes？", "You've used Rust?")
        return _wait(cfg, "incomplete", cfg.endpoint_incomplete_ms, None)
    rules = (_wait(cfg, "complete", cfg.endpoint_question_silence_ms, None)
             if cues.question_streak >= 2 or cues.closed
             else _wait(cfg, "uncertain", cfg.endpoint_silence_ms, None))
    if evidence.words_logp is None and sound is None:
        if not cues.tag and (evidence.words_pending or not cues.question):
            # not called finished yet and may be called unfinished, or nothing in the words
            # says finished: a guess inside a gap between words is a wasted request
            hold = cfg.speculate_unsure_ms if cues.question else cfg.speculate_silence_ms
            return replace(rules, speculate_ms=min(rules.endpoint_ms, max(rules.speculate_ms, hold)))
        if rules.verdict == "complete":  # finished by the punctuation alone: after a pause
            return replace(rules, ahead_ms=min(rules.endpoint_ms, _pause_ms(cfg)))
        return rules
    asked = cues.question if cues.asks is None else cues.asks  # the words as said, where read
    score = 1.0 if cues.tag else 0.5 if asked else 0.0
    if evidence.words_logp is not None:
        if evidence.words_logp <= cfg.words_incomplete_logp and not cues.tag:
            # words the model calls unfinished are, whatever "?" the recogniser put after
            # them ("Could you tell me about?"): the question form says it asks, not that it ended
            return _wait(cfg, "incomplete", cfg.endpoint_incomplete_ms, score - 1.0)
        score += words_vote(cfg, evidence.words_logp)
    if sound is not None:
        score += cfg.smart_turn_weight * (2.0 * sound - 1.0)
    if score >= 1.0 - 1e-9:
        complete = _wait(cfg, "complete", cfg.endpoint_complete_ms, score)
        if evidence.words_logp is None:  # the sound and the text alone: after a pause, as the rules'
            return replace(complete, ahead_ms=min(complete.endpoint_ms, _pause_ms(cfg)))
        # the words model called these words finished: they may leave when the voice stops
        return replace(complete, speculate_ms=min(complete.endpoint_ms, float(cfg.speculate_finished_ms)),
                       ahead_ms=min(complete.endpoint_ms, float(cfg.speculate_ahead_ms)))
    if score <= -1.0 + 1e-9:
        return _wait(cfg, "incomplete", cfg.endpoint_incomplete_ms, score)
    middle = float(cfg.endpoint_uncertain_ms)
    leans_finished = score >= 0.0
    if leans_finished:
        # unsure is no reason to wait longer than the rules; signals that lean unfinished
        # are, whatever "?" the recogniser put after the words ("Could you tell me about?")
        middle = min(middle, rules.endpoint_ms)
        if evidence.guess_confirmed:
            # and every pass since the voice stopped heard the question whose answer is
            # held: the interviewer's earlier pauses do not stretch the wait
            return _wait(cfg, "uncertain", min(middle, float(cfg.endpoint_confirmed_ms)), score)
    if learned_pause_ms is not None:
        middle = max(middle, min(LEARNED_PAUSE_FACTOR * learned_pause_ms, cfg.endpoint_incomplete_ms))
    return _wait(cfg, "uncertain", middle, score)


def _pause_ms(cfg: TurnConfig) -> float:
    """A guess ahead of the pass on evidence weaker than the words model's: a pause, not a
    gap between words."""
    return float(max(cfg.speculate_ahead_ms, cfg.speculate_min_pause_ms))


def _wait(cfg: TurnConfig, verdict: Verdict, endpoint_ms: float, score: float | None) -> Wait:
    """``score`` None: the rules decided (no model voted), and they guess unsure words
    early (``decide`` holds back words with no question cue)."""
    if verdict == "complete" or (verdict == "uncertain" and score is None):
        speculate = float(cfg.speculate_min_pause_ms)
    elif verdict == "uncertain":
        speculate = float(max(cfg.speculate_min_pause_ms, cfg.speculate_unsure_ms))
    else:
        speculate = max(float(cfg.speculate_silence_ms), endpoint_ms - cfg.speculate_lead_ms)
    return Wait(verdict, float(endpoint_ms), min(speculate, endpoint_ms), score)
