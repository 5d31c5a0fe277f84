"""``bench signals``: the rank AUC and the rule that cuts a question mid-way (no models)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.bench.corpus import Clip
from devtools.bench.signals import auc, cut_end_s, cut_text


def test_auc_perfect_reversed_and_ties() -> None:
    assert auc([-2.0, -3.0, -1.5], [-20.0, -15.0]) == 1.0
    assert auc([-20.0, -15.0], [-2.0, -3.0, -1.5]) == 0.0
    assert auc([0.5, 0.5], [0.5, 0.5, 0.5]) == 0.5
    assert auc([1.0, 2.0], []) is None


def test_auc_counts_half_for_ties_between_groups() -> None:
    # pairs: (3>1) (3>2) (2>1) (2=2 → ½): 3.5 of 4
    assert auc([3.0, 2.0], [1.0, 2.0]) == pytest.approx(3.5 / 4)


def test_cut_before_the_first_pause() -> None:
    text = "Tell me about a time you disagreed with your manager. How did you handle it?"
    clip = Clip(Path("q06.wav"), text, speech_end_s=5.48, speech_start_s=0.6, pauses=((3.47, 0.7),))
    assert cut_text(clip) == "Tell me about a time you disagreed with your manager."
    assert cut_end_s(clip) == pytest.approx(3.67)


def test_cut_without_a_pause_keeps_55_percent_of_the_words() -> None:
    clip = Clip(Path("q21.wav"), "What is the time complexity of binary search, and why?",
                speech_end_s=3.9, speech_start_s=0.6)
    assert cut_text(clip) == "What is the time complexity of"
    assert cut_end_s(clip) == pytest.approx(0.6 + 0.55 * 3.3 + 0.2)


def test_cut_keeps_two_words_and_never_the_whole() -> None:
    assert cut_text(Clip(Path("a.wav"), "Why now?", speech_end_s=1.0)) == "Why"
    assert cut_text(Clip(Path("a.wav"), "Why this, then?", speech_end_s=1.0)) == "Why this,"
    late = Clip(Path("a.wav"), "One two three four", speech_end_s=2.0, pauses=((1.99, 0.5),))
    assert cut_text(late) == "One two three"


def test_chinese_is_cut_by_characters() -> None:
    plain = Clip(Path("q04.wav"), "进程和线程有什么区别？", speech_end_s=2.57, speech_start_s=0.6)
    assert cut_text(plain) == "进程和线程有"  # 10 characters → 6
    paused = Clip(Path("q06.wav"), "讲一个你和同事有分歧的经历。 最后是怎么解决的？",
                  speech_end_s=5.02, speech_start_s=0.6, pauses=((2.88, 0.7),))
    assert cut_text(paused) == "讲一个你和同事有分歧的经历。"
