"""``bench turns --pauses``: a false cut-off is an answer on screen inside the question."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.config import Settings, TurnConfig
from app.turns.endpointer import Endpoint, Endpointer
from devtools.bench import eot
from devtools.bench.baselines import SmartTurnPolicy
from devtools.bench.turns import MODES, TurnResult, _summarise, mode_settings


def test_an_answer_shown_inside_a_pause_cuts_that_pause_only() -> None:
    pauses = [(1.0, 0.6), (2.5, 0.4)]
    assert eot.cut_offs([1.3], pauses, true_end=4.0) == [True, False]
    assert eot.cut_offs([2.9], pauses, true_end=4.0) == [False, True]
    # shown after the pause ended but before the next one: the first pause's cut answer
    assert eot.cut_offs([1.9], pauses, true_end=4.0) == [True, False]


def test_an_answer_after_the_true_end_cuts_nothing() -> None:
    assert eot.cut_offs([4.0, 4.3], [(1.0, 0.6)], true_end=4.0) == [False]
    assert eot.cut_offs([], [(1.0, 0.6)], true_end=4.0) == [False]
    assert eot.cut_offs([1.2], [], true_end=4.0) == []


def test_pauses_listed_out_of_order_keep_their_order() -> None:
    assert eot.cut_offs([2.6], [(2.5, 0.4), (1.0, 0.6)], true_end=4.0) == [True, False]


def test_the_summary_counts_cut_offs_by_pause_length_and_the_delay_of_answered_questions() -> None:
    s = eot.summary([[0.4, 1.0], [0.6], []], [[True, False], [True], []], [0.3, None, 0.5])
    assert (s["pauses"], s["false_cutoffs"], s["false_cutoff_rate"]) == (3, 2, 0.667)
    assert s["by_length"]["0.0-0.5"] == [1, 1]
    assert s["by_length"]["0.9-1.2"] == [0, 1]
    assert s["unanswered"] == 1
    assert s["delay_median_s"] == pytest.approx(0.4)


def test_the_run_summary_carries_the_pause_scores() -> None:
    results = [TurnResult("q01.wav", "product", response_latency=0.4, pauses=[0.6], cut_offs=[True]),
               TurnResult("q02.wav", "product", response_latency=0.6, pauses=[0.8], cut_offs=[False])]
    assert _summarise(results)["eot"]["false_cutoff_rate"] == 0.5


def test_modes_of_one_setting_are_one_curve() -> None:
    groups = eot.sweeps(["product", "product@turns.endpoint_confirmed_ms=300",
                         "product@turns.endpoint_confirmed_ms=500", "rules", "product~call"])
    assert groups == {"product": ["product"], "rules": ["rules"],
                      "product@turns.endpoint_confirmed_ms": ["product@turns.endpoint_confirmed_ms=300",
                                                              "product@turns.endpoint_confirmed_ms=500"]}
    joint = ["product@turns.a_ms=1@turns.b_ms=2", "product@turns.a_ms=3@turns.b_ms=4"]
    assert eot.sweeps(joint) == {"product@turns.a_ms@turns.b_ms": joint}  # two settings swept together


def test_the_curve_is_drawn_with_the_published_points(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    point = {"eot": eot.summary([[0.6]], [[False]], [0.5])}
    out = tmp_path / "curve.png"
    eot.draw([("dev-pauses", {"product": point, "rules": point, "ratios": {}})], out)
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert any("| product | 0 of 1" in row for row in eot.table({"product": point}))


def test_smart_turn_alone_ends_the_turn_on_its_verdict_or_after_its_fallback() -> None:
    ep = Endpointer(TurnConfig(), policy=SmartTurnPolicy())
    ep.speech_started(1, 0.0)
    ep.voiced(1.0)
    ep.partial(1, "Could you tell me about", "", audio_end=1.0, now=1.05)
    assert not any(isinstance(d, Endpoint) for d in ep.tick(1.3))
    assert not ep.end_of_turn_scores(1, "Could you tell me about", 1.0, 1.3, sound_p=0.2)
    assert not any(isinstance(d, Endpoint) for d in ep.tick(2.9))
    assert any(isinstance(d, Endpoint) for d in ep.tick(1.0 + SmartTurnPolicy.fallback_s + 0.01))
    ep.speech_started(2, 5.0)
    ep.voiced(6.0)
    ep.partial(2, "Why Rust?", "", audio_end=6.0, now=6.05)
    ended = ep.end_of_turn_scores(2, "Why Rust?", 6.0, 6.25, sound_p=0.8)
    assert any(isinstance(d, Endpoint) for d in ended)


def test_smart_turn_alone_turns_the_sound_model_on_and_the_words_model_off() -> None:
    assert {"smart-turn", "pluely", "glass", "rules"} <= set(MODES)
    _, changed = mode_settings(Settings(), "smart-turn")
    assert changed.turns.smart_turn and not changed.turns.words_model


def test_a_question_never_answered_still_counts_its_pauses(tmp_path: Path) -> None:
    from devtools.bench.corpus import Clip
    from devtools.bench.turns import score

    clip = Clip(tmp_path / "q01.wav", "Could you tell me about the team?", 3.0, 0.6, ((1.2, 0.6),))
    result = score([], clip, "product")
    assert (result.pauses, result.cut_offs) == ([0.6], [False])
