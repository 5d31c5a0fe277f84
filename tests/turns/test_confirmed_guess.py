"""An unsure turn whose held guess every pass since the voice stopped confirms ends
sooner (decision 0032): plain numbers on the audio clock."""

from __future__ import annotations

from app.core.config import TurnConfig
from app.turns.endpointer import Decision, Endpoint, Endpointer, Speculate
from app.turns.policy import Evidence, TextCues, decide
from tests.turns.test_policy import speak_until

SCALE = {"words_complete_logp": -10.0, "words_incomplete_logp": -16.0}
"""The policy's arithmetic on the scale its numbers here were written on (zero-shot log P:
-4 finished, -20 cut); the shipped thresholds meet the trained head in tests/turns/test_head.py."""
CFG = TurnConfig(**SCALE)
QUESTION = "What is the difference between TCP and UDP?"
UNSURE = -14.5
"""A log P(end) the words model gives a finished question it doubts (between
``words_incomplete_logp`` and ``words_complete_logp``, "?" or not)."""


def started(cfg: TurnConfig = CFG) -> Endpointer:
    ep = Endpointer(cfg, "en")
    ep.expect_words(True)  # the words model is loaded: a partial waits for its verdict
    ep.speech_started(1, 0.5)
    return ep


def silence_until(ep: Endpointer, start: float, end: float) -> list[tuple[float, Decision]]:
    out: list[tuple[float, Decision]] = []
    t = start
    while t < end - 1e-9:
        t = round(t + 0.03, 3)
        out += [(t, d) for d in ep.tick(t)]
    return out


def endpoint_at(decisions: list[tuple[float, Decision]]) -> float | None:
    return next((t for t, d in decisions if isinstance(d, Endpoint)), None)


def test_a_confirmed_guess_caps_only_the_unsure_wait() -> None:
    unsure = decide(CFG, TextCues(question=True), Evidence(words_logp=UNSURE, guess_confirmed=True))
    assert (unsure.verdict, unsure.endpoint_ms) == ("uncertain", CFG.endpoint_confirmed_ms)
    assert decide(CFG, TextCues(question=True), Evidence(words_logp=UNSURE)).endpoint_ms == 600
    # the interviewer's earlier, longer pauses do not stretch it once the words lean
    # finished (they stretch an unconfirmed wait)
    confirmed = decide(CFG, TextCues(question=True), Evidence(words_logp=UNSURE, guess_confirmed=True),
                       learned_pause_ms=800)
    assert confirmed.endpoint_ms == CFG.endpoint_confirmed_ms
    unconfirmed = decide(CFG, TextCues(question=True), Evidence(words_logp=UNSURE), learned_pause_ms=800)
    assert unconfirmed.endpoint_ms == 1000
    # more words expected, or finished already: nothing to shorten
    incomplete = decide(CFG, TextCues(), Evidence(words_logp=-20.0, guess_confirmed=True))
    assert incomplete.endpoint_ms == CFG.endpoint_incomplete_ms
    thinking = decide(CFG, TextCues(trailing=True), Evidence(words_logp=UNSURE, guess_confirmed=True))
    assert thinking.endpoint_ms == CFG.endpoint_thinking_silence_ms
    complete = decide(CFG, TextCues(question=True), Evidence(words_logp=-4.0, guess_confirmed=True))
    assert complete.endpoint_ms == CFG.endpoint_complete_ms


def _unsure_question(ep: Endpointer) -> None:
    speak_until(ep, 2.0)
    assert ep.partial(1, QUESTION, "", 2.0, 2.05) == []
    assert ep.end_of_turn_scores(1, QUESTION, 2.0, 2.08, words_logp=UNSURE) == []


def test_an_unsure_finished_question_whose_guess_every_pass_confirms_ends_sooner() -> None:
    ep = started()
    _unsure_question(ep)
    decisions = silence_until(ep, 2.08, 3.0)
    guess = next(t for t, d in decisions if isinstance(d, Speculate))
    assert abs(guess - 2.2) < 0.031  # the unsure guess, as before
    end = endpoint_at(decisions)
    assert end is not None and abs(end - (2.0 + CFG.endpoint_confirmed_ms / 1000)) < 0.031


def test_without_held_guesses_the_unsure_wait_is_kept() -> None:
    # not low-latency mode: no answer is ready and held, nothing to gain by ending sooner
    ep = started()
    ep.guesses_held(False)
    _unsure_question(ep)
    end = endpoint_at(silence_until(ep, 2.08, 3.0))
    assert end is not None and abs(end - 2.6) < 0.031


def test_a_later_pass_with_other_words_keeps_the_unsure_wait() -> None:
    ep = started()
    _unsure_question(ep)
    assert any(isinstance(d, Speculate) for _, d in silence_until(ep, 2.08, 2.23))
    # a pass over the same audio heard one more word: the guess is no longer confirmed
    longer = QUESTION.rstrip("?") + " in practice"  # no "?": the rules' wait is the long one
    ep.partial(1, longer, "", 2.0, 2.25)
    ep.end_of_turn_scores(1, longer, 2.0, 2.26, words_logp=UNSURE)
    decisions = silence_until(ep, 2.26, 3.0)
    assert endpoint_at([(t, d) for t, d in decisions if t < 2.55]) is None
    # ...even though its own guess left: this pause already heard two questions
    end = endpoint_at(decisions)
    assert end is not None and end > 2.55


def test_voice_after_the_guess_starts_the_confirmation_again() -> None:
    ep = started()
    _unsure_question(ep)
    assert any(isinstance(d, Speculate) for _, d in silence_until(ep, 2.08, 2.23))
    speak_until(ep, 2.6, start=2.3)  # they went on: the guess's pass is from before
    assert endpoint_at(silence_until(ep, 2.6, 3.05)) is None  # no current pass agrees yet


def test_words_called_unfinished_are_not_ended_sooner_for_their_question_mark() -> None:
    # "What is it?" heard for "What is a…": the words model calls the words unfinished
    # (log P ~ -17) and only the "?" lifts the sum to unsure: no sooner end
    fragment = decide(CFG, TextCues(question=True), Evidence(words_logp=-17.0, guess_confirmed=True))
    assert (fragment.verdict, fragment.endpoint_ms) == ("incomplete", CFG.endpoint_incomplete_ms)
    # doubted and leaning unfinished (the "?" does not lift the sum to finished): no sooner end
    doubted = decide(CFG, TextCues(question=True), Evidence(words_logp=-15.0, guess_confirmed=True))
    assert (doubted.verdict, doubted.endpoint_ms) == ("uncertain", CFG.endpoint_uncertain_ms)
