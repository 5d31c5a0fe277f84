"""Speech soon after an endpoint continues the same turn: the endpointer's call, with plain
numbers on the audio clock (decision 0054 says why it is the endpointer's)."""

import pytest

from app.core.config import TurnConfig
from app.turns.endpointer import Continuation, Endpoint, Endpointer


def ended(cfg: TurnConfig | None = None, *, questions: bool = True) -> Endpointer:
    """Turn 1 spoken from 0.5 to 2.0 s, ended on the silence endpoint at 2.8 s."""
    ep = Endpointer(cfg or TurnConfig(), "en", questions=questions)
    ep.speech_started(1, 0.5)
    t = 0.5
    while t < 2.0 - 1e-9:
        t = round(t + 0.03, 3)
        ep.voiced(t)
    assert ep.partial(1, "Tell me about the project", "", 2.01, 2.05) == []
    decisions = ep.tick(2.81)
    assert [type(d) for d in decisions if isinstance(d, Endpoint)] == [Endpoint], decisions
    assert ep.turn is None
    return ep


def test_speech_within_the_window_continues_the_turn_it_ended() -> None:
    ep = ended()
    went_on = ep.continues(3.5)
    assert went_on == Continuation(1, pytest.approx(1.5))


def test_speech_after_the_window_is_a_new_turn() -> None:
    ep = ended(TurnConfig(continuation_window_ms=1000))
    assert ep.continues(3.01) is None


def test_the_turn_is_continued_once() -> None:
    ep = ended()
    assert ep.continues(2.9) is not None
    ep.speech_started(1, 3.0)
    assert ep.continues(3.2) is None  # no endpoint since: nothing to continue


def test_the_other_speaker_answering_in_the_pause_makes_it_a_new_turn() -> None:
    ep = ended()
    ep.other_spoke(2.5)
    assert ep.continues(3.0) is None


def test_the_other_speaker_starting_after_this_speech_is_its_echo_not_an_answer() -> None:
    ep = ended()
    ep.other_spoke(3.1)
    ep.other_spoke(1.0)  # older news changes nothing
    assert ep.continues(3.0) == Continuation(1, pytest.approx(1.0))


def test_a_forced_endpoint_can_be_continued_too() -> None:
    ep = Endpointer(TurnConfig(), "en")
    ep.speech_started(7, 1.0)
    assert ep.force(1.3) == [Endpoint(7, "forced", pytest.approx(0.3))]
    assert ep.continues(1.5) == Continuation(7, pytest.approx(0.5))


def test_the_candidate_has_no_continuations() -> None:
    ep = ended(questions=False)
    assert ep.continuation_s == 0.0 and ep.continues(2.9) is None
