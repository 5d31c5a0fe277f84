"""How long a pause must last before the turn is over, from what the signals say.

Pure arithmetic, no clocks or threads: unit-tested with numbers.  Each signal votes
between -1 (unfinished) and +1 (finished) and the votes add up:

- the words model: log P(end of turn) mapped linearly from ``words_incomplete_logp``
  (-1) to ``words_complete_logp`` (+1);
- the text: a tag or a final particle at the end ("right?", "you know", 对吧, 吗/呢/吧)
  +1, a question mark or a question word (什么/怎么/为什么/哪/多少) +0.5;
- the sound (Smart Turn, optional): ``smart_turn_weight`` × (2p − 1).

A sum of +1 or more is *complete* (end after a short silence, ~250 ms), -1 or less is
*incomplete* (long wait), between is *uncertain*: the middle wait, but never longer than
the text rules would wait for the same text (400 ms after "?" or a tag twice in a row):
doubt is no evidence that more words are coming, so it never makes a question wait
longer than the rules did, and once the guess sent at the pause is held with its answer
ready and every pass since the voice stopped heard that same question, words the model
only doubts (above ``words_incomplete_logp``) wait ``endpoint_confirmed_ms`` at most
(decision 0032); the interviewer's own longer pauses still stretch it.  A trailing and/so/um…
(a thinking pause) overrides the sum: the longest wait.  With no model signal at all
(not installed, failed to load, a language it was not checked on, or not scored yet)
the text rules decide: "?" or a tag twice in a row → the question wait, else the silence
wait (a Chinese sentence closed with "。" whose last sentence holds a question word
counts as "?": a wh-question needs no rising pitch, so the recogniser's mark is a guess).

The request should be on the wire before the endpoint fires.  Pauses of 150-250 ms
inside a question are common, and how many of them a guess lands in depends on how fast
the recogniser is, not on the speaker (a pass twice as fast guesses "What is your
biggest?" before "…weakness?"), so the guess waits on evidence, not on the machine:
words the words model calls finished (complete) are guessed at the first current
partial once the voice has paused for the hangover (``speculate_finished_ms``), words
finished by the text or the sound alone once the pause outlasts a gap between words
(``speculate_min_pause_ms``); words they are unsure of, or that the words model is
still scoring, after ``speculate_unsure_ms`` (a pause longer than most between words;
a text with no "?", question word or tag that no model has scored waits for
``speculate_silence_ms``); when more words are expected (incomplete, thinking),
``speculate_lead_ms`` before the endpoint.  A tag finishes a text by itself and never
waits for the model.

Those waits are for a *current* partial, one whose pass heard all the voice.  The
listener has every partial scored as it lands, so when the voice stops the newest one
usually has its verdict already; if it is *complete*, that exact text is guessed after
``speculate_ahead_ms`` of silence when no pass that will hear the pause is coming (the
endpointer's part): a finished question whose pause pass was given up, heard no words or
heard a voice that was not the last does not wait the silence endpoint.  Finished by
the rules alone ("?" or a tag twice in a row, no model), it waits for a pause
(``speculate_min_pause_ms``) at least, as the recogniser's punctuation is a guess.
Where the words model is unsure or has not spoken, only a current partial is guessed.
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
    rules = (_wait(cfg, "complete", cfg.endpoint_question_silence_ms, None) if cues.question_streak >= 2
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
    score = 1.0 if cues.tag else 0.5 if cues.question else 0.0
    if evidence.words_logp is not None:
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
    middle = min(float(cfg.endpoint_uncertain_ms), rules.endpoint_ms)  # unsure is no reason to wait longer
    doubted = evidence.words_logp is not None and evidence.words_logp > cfg.words_incomplete_logp
    if evidence.guess_confirmed and doubted:
        # its answer is ready, and the words are doubted, not called unfinished ("What is
        # it?" for "What is a…", where only the "?" lifts the sum): a question that goes
        # on costs a withdrawal
        middle = min(middle, float(cfg.endpoint_confirmed_ms))
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
