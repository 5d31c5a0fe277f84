"""``bench turns`` modes: a mode may change settings, checked before the first clip plays."""

from __future__ import annotations

import pytest

from app.core.config import Settings, TurnConfig
from app.turns.signals import TurnSignals
from devtools.bench.baselines import NoDeferListening, OwnCoreListening, PassOnlyListening, TextRulesListening
from devtools.bench.turns import MODES, TurnResult, _ratios, _summarise, canonical, mode_settings


def test_a_mode_changes_settings_on_a_copy_of_the_runs() -> None:
    run = Settings()
    spec, changed = mode_settings(run, "product@vad.hangover_ms=30@turns.endpoint_complete_ms=300")
    assert spec is MODES["product"]
    assert (changed.vad.hangover_ms, changed.turns.endpoint_complete_ms) == (30, 300)
    assert (run.vad.hangover_ms, run.turns.endpoint_complete_ms) == (90, 250)  # untouched
    spec, changed = mode_settings(run, "rules@turns.endpoint_silence_ms=600")
    assert spec is MODES["rules"] and isinstance(spec.listening, TextRulesListening)
    assert changed.turns.endpoint_silence_ms == 600
    assert mode_settings(run, "naive")[1].answer.low_latency is False


@pytest.mark.parametrize(("mode", "says"), [
    ("fast", "unknown mode 'fast'"),
    ("ours@vad.hangover=30", "is not SECTION.KEY=VALUE"),
    ("ours@vad.hangover_ms", "is not SECTION.KEY=VALUE"),
    ("ours@nosuch.key=1", "is not SECTION.KEY=VALUE"),
    ("ours@vad.hangover_ms=-5", "greater than or equal to 0"),
])
def test_a_mistyped_mode_is_refused_with_what_is_wrong(mode: str, says: str) -> None:
    with pytest.raises(SystemExit, match=says):
        mode_settings(Settings(), mode)


def test_a_variant_of_the_product_is_reported_as_a_ratio_to_it() -> None:
    summary = {"rules": {"response_latency_median_s": 0.6}, "product": {"response_latency_median_s": 0.5},
               "product@vad.hangover_ms=30": {"response_latency_median_s": 0.4}}
    assert _ratios(summary) == {"rules/product": 1.2, "product/product@vad.hangover_ms=30": 1.25}


def test_the_old_mode_names_still_parse_under_the_new_ones() -> None:
    """Commands in the changelog say ``seed`` and ``ours``."""
    assert canonical("seed") == "user-fixes"
    assert canonical("ours@vad.hangover_ms=30") == "product@vad.hangover_ms=30"
    assert mode_settings(Settings(), "seed")[0] is MODES["user-fixes"]
    assert mode_settings(Settings(), "ours@vad.hangover_ms=30")[1].vad.hangover_ms == 30


def test_the_behaviour_before_the_guess_at_the_pause_is_a_mode_and_a_ratio() -> None:
    spec, changed = mode_settings(Settings(), "pass")
    assert isinstance(spec.listening, PassOnlyListening) and changed == Settings()
    spec, _ = mode_settings(Settings(), "no-defer")
    assert isinstance(spec.listening, NoDeferListening) and not spec.listening.defers_passes
    assert MODES["product"].listening.defers_passes
    assert MODES["product"].numpy_threads is None and (MODES["blas-threads"].numpy_threads or 0) >= 1
    spec, _ = mode_settings(Settings(), "own-core")
    assert isinstance(spec.listening, OwnCoreListening) and not spec.listening.lends_core
    assert MODES["product"].listening.lends_core
    summary = {"pass": {"response_latency_median_s": 0.5}, "product": {"response_latency_median_s": 0.4}}
    assert _ratios(summary) == {"pass/product": 1.25}


def test_the_words_model_before_its_system_message_is_a_mode() -> None:
    """``no-system`` scores the words after a bare user opening (decision 0025); the
    product scores with the session's signals as loaded."""
    loaded = TurnSignals.load(TurnConfig(), "en")
    assert MODES["product"].listening.signals(loaded) is loaded
    spec, _ = mode_settings(Settings(), "no-system")
    before = spec.listening.signals(loaded)
    assert before.words is not None and loaded.words is not None
    text = "Where do you see yourself in five years?"
    assert abs(before.words.log_p_end(text) - loaded.words.log_p_end(text)) > 0.5
    rules = TurnSignals(None, None, "text rules decide")
    assert spec.listening.signals(rules) is rules


def test_flicker_is_the_share_of_questions_whose_answer_was_withdrawn_and_for_how_long() -> None:
    results = [TurnResult("q01.wav", "ours", flicker=[0.16]), TurnResult("q02.wav", "ours"),
               TurnResult("q03.wav", "ours", flicker=[0.1, 0.3]), TurnResult("q04.wav", "ours")]
    summary = _summarise(results)
    assert summary["flicker_rate"] == 0.5
    assert summary["flicker_shown_median_s"] == 0.16
