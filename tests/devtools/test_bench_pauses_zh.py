"""The Mandarin pause set: questions with pauses inside, for espeak-ng's pinyin voice."""

from __future__ import annotations

import itertools

import pytest

from devtools.bench import pauses_zh


def test_characters_become_tone_numbered_pinyin_and_latin_words_stay() -> None:
    pytest.importorskip("pypinyin")
    assert pauses_zh.pinyin("你好？") == "ni3 hao3?"
    said = pauses_zh.pinyin("你用过Redis、还是Kafka？")
    assert "Redis," in said and said.endswith("Kafka?") and "yong4" in said


def test_most_questions_pause_inside_with_the_pause_sets_lengths() -> None:
    paused = [q for q in pauses_zh.QUESTIONS if any(isinstance(p, float) for p in q)]
    assert len(paused) == len(pauses_zh.QUESTIONS) - 4
    lengths = [p for q in pauses_zh.QUESTIONS for p in q if isinstance(p, float)]
    assert min(lengths) >= 0.4 and max(lengths) <= 1.2
    for question in pauses_zh.QUESTIONS:  # text and pauses alternate, text at both ends
        assert isinstance(question[0], str) and isinstance(question[-1], str)
        assert all(isinstance(a, str) != isinstance(b, str) for a, b in itertools.pairwise(question))
