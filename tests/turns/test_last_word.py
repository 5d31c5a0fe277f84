"""The unsure-last-word cue from word timings alone, with plain numbers (decision 0055)."""

from __future__ import annotations

from app.core.events import LastWord
from app.turns.last_word import MIN_SAID_S, UNSURE_PROBABILITY, unsure_end

VOICE_END = 2.0


def word(probability: float, start: float, end: float = VOICE_END + 0.03) -> LastWord:
    return LastWord("them", probability, start, end)


def test_a_sure_word_said_well_inside_the_voice_is_sure() -> None:
    assert not unsure_end(word(0.95, 1.75), VOICE_END)


def test_a_word_the_recogniser_doubts_is_unsure_wherever_it_lies() -> None:
    assert unsure_end(word(UNSURE_PROBABILITY - 0.01, 1.75), VOICE_END)
    assert not unsure_end(word(UNSURE_PROBABILITY, 1.75), VOICE_END)


def test_a_word_that_begins_as_the_voice_stops_was_not_said_however_sure() -> None:
    # "Tell me about it.": "it" aligned to the voice's last frame and the silence after it
    assert unsure_end(word(0.99, VOICE_END - 0.01), VOICE_END)
    assert unsure_end(word(0.99, VOICE_END + 0.02), VOICE_END)
    assert unsure_end(word(0.99, VOICE_END - MIN_SAID_S + 0.01), VOICE_END)
    assert not unsure_end(word(0.99, VOICE_END - MIN_SAID_S - 0.01), VOICE_END)


def test_no_word_read_is_no_cue() -> None:
    assert not unsure_end(None, VOICE_END)


def test_a_pass_that_stopped_inside_the_voice_is_judged_on_its_probability_alone() -> None:
    # a lagging partial: the voice went on after it, so its last word lies far before the voice's end
    assert not unsure_end(word(0.9, 1.2, 1.4), VOICE_END)
    assert unsure_end(word(0.2, 1.2, 1.4), VOICE_END)
