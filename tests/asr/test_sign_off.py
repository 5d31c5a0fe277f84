"""Whisper's subtitle sign-offs after real words ("…choose. Thank you."): cut, as they are
dropped alone, so they never make an unfinished clause a finished one at a pause."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from app.asr.decoder import Hypothesis, WhisperDecoder
from app.asr.guards import cut_sign_off
from app.core.events import FinalEvent
from tests.asr.test_streaming import _passes_at_pause, _SpyDecoder


@pytest.mark.parametrize(("heard", "kept"), [
    ("What you choose. Thank you.", "What you choose."),
    ("What you choose? Thank you", "What you choose?"),
    ("Tell me about your team. Thanks for watching!", "Tell me about your team."),
    ("Why? Bye.", "Why?"),
    ("讲一个你和同事有分歧的经历。谢谢观看", "讲一个你和同事有分歧的经历。"),
    ("请介绍一下你自己。谢谢。", "请介绍一下你自己。"),
    ("What you choose, thank you.", "What you choose"),  # the same pass under load
    ("Tell me about your team , thanks for watching", "Tell me about your team"),
    ("请介绍一下你自己，谢谢。", "请介绍一下你自己"),
])
def test_a_sign_off_after_the_last_words_is_cut(heard: str, kept: str) -> None:
    assert cut_sign_off(heard) == kept


@pytest.mark.parametrize("heard", [
    "Thank you.",  # alone: the hallucination guard's to judge, not this
    "How do you thank your team?",
    "Would you, thank you, explain it?",  # not at the end
    "Okay, thank you for the time.",
    "Do you know Python? And how about Rust?",
    "你好。谢谢你的时间。",
    "谢谢",
])
def test_words_that_are_no_sign_off_sentence_are_kept(heard: str) -> None:
    assert cut_sign_off(heard) == heard


class _SignsOff(_SpyDecoder):
    """The real decoder's words, then the sign-off Whisper writes over a pause's silence:
    as a sentence of its own, or (heard under load) as a clause after a comma."""

    def __init__(self, decoder: WhisperDecoder, *, after_comma: bool) -> None:
        super().__init__(decoder)
        self._after_comma = after_comma

    def decode(self, audio: Any, *args: Any, **kwargs: Any) -> Hypothesis:
        hyp = super().decode(audio, *args, **kwargs)
        said = hyp.text.rstrip()
        text = said.rstrip(".?!") + ", thank you." if self._after_comma else said + " Thank you."
        return dataclasses.replace(hyp, text=text)


@pytest.mark.parametrize("after_comma", [False, True])
def test_neither_the_guess_nor_the_final_carries_the_sign_off(
    decoder: WhisperDecoder, after_comma: bool,
) -> None:
    _, rec, partials = _passes_at_pause(
        _SignsOff(decoder, after_comma=after_comma), 3, guess_hangover_s=0.03,
    )
    final = rec.finalize(1)[-1]
    assert isinstance(final, FinalEvent)
    for text in (partials[0].text, final.text):
        assert "role" in text.lower() and "thank" not in text.lower(), text
