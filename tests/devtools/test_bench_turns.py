"""``bench turns`` modes: a mode may change settings, checked before the first clip plays."""

from __future__ import annotations

import pytest

from app.core.config import Settings
from app.turns.endpointer import Endpoint, Endpointer
from devtools.bench.baselines import FixedSilencePolicy, TextRulesPolicy
from devtools.bench.turns import MODES, TurnResult, _ratios, _summarise, mode_settings


def test_a_mode_changes_settings_on_a_copy_of_the_runs() -> None:
    run = Settings()
    spec, changed = mode_settings(run, "product@vad.hangover_ms=30@turns.endpoint_complete_ms=300")
    assert spec is MODES["product"]
    assert (changed.vad.hangover_ms, changed.turns.endpoint_complete_ms) == (30, 300)
    assert (run.vad.hangover_ms, run.turns.endpoint_complete_ms) == (90, 250)  # untouched
    spec, changed = mode_settings(run, "rules@turns.endpoint_silence_ms=600")
    assert spec is MODES["rules"] and isinstance(spec.policy, TextRulesPolicy)
    assert changed.turns.endpoint_silence_ms == 600 and not changed.turns.words_model
    assert run.turns.words_model  # untouched
    assert mode_settings(run, "naive")[1].answer.low_latency is False
    assert mode_settings(run, "product@turns.words_languages=en+zh")[1].turns.words_languages == ["en", "zh"]


@pytest.mark.parametrize(("mode", "says"), [
    ("fast", "unknown mode 'fast'"),
    ("ours", "unknown mode 'ours'"),
    ("product@vad.hangover=30", "is not SECTION.KEY=VALUE"),
    ("product@vad.hangover_ms", "is not SECTION.KEY=VALUE"),
    ("product@nosuch.key=1", "is not SECTION.KEY=VALUE"),
    ("product@vad.hangover_ms=-5", "greater than or equal to 0"),
])
def test_a_mistyped_mode_is_refused_with_what_is_wrong(mode: str, says: str) -> None:
    with pytest.raises(SystemExit, match=says):
        mode_settings(Settings(), mode)


def test_a_variant_of_the_product_is_reported_as_a_ratio_to_it() -> None:
    summary = {"rules": {"response_latency_median_s": 0.6}, "product": {"response_latency_median_s": 0.5},
               "product@vad.hangover_ms=30": {"response_latency_median_s": 0.4}}
    assert _ratios(summary) == {"rules/product": 1.2, "product/product@vad.hangover_ms=30": 1.25}


def test_the_baselines_are_peers_and_simple_policies() -> None:
    """Every mode but the product is a peer or a simple policy; none replays the product's
    own past (that is measured at its commit, ``--against``)."""
    assert set(MODES) == {"naive", "user-fixes", "rules", "pluely", "glass", "smart-turn", "product"}
    for name in ("naive", "user-fixes"):  # no shorter wait after "?" twice in a row
        turns = mode_settings(Settings(), name)[1].turns
        assert turns.endpoint_question_silence_ms == turns.endpoint_silence_ms
    assert mode_settings(Settings(), "product")[1] == Settings()


@pytest.mark.parametrize(("mode", "seconds"), [("pluely", 0.4), ("glass", 2.0)])
def test_a_fixed_silence_ends_the_turn_whatever_its_words_and_guesses_nothing(mode: str,
                                                                               seconds: float) -> None:
    spec, changed = mode_settings(Settings(), mode)
    assert spec.policy == FixedSilencePolicy(seconds) and not changed.answer.low_latency
    ep = Endpointer(changed.turns, policy=spec.policy)
    ep.speech_started(1, 0.0)
    ep.voiced(1.0)
    ep.partial(1, "So tell me about", "", 1.0, 1.0)  # trails off: the product would wait long
    ticks = [round(1.0 + 0.03 * i, 2) for i in range(1, 80)]
    decided = [(t, d) for t in ticks for d in ep.tick(t)]
    assert [type(d) for _, d in decided] == [Endpoint]
    assert decided[0][0] == pytest.approx(1.0 + seconds, abs=0.031)


def test_flicker_is_the_share_of_questions_whose_answer_was_withdrawn_and_for_how_long() -> None:
    results = [TurnResult("q01.wav", "ours", flicker=[0.16]), TurnResult("q02.wav", "ours"),
               TurnResult("q03.wav", "ours", flicker=[0.1, 0.3]), TurnResult("q04.wav", "ours")]
    summary = _summarise(results)
    assert summary["flicker_rate"] == 0.5
    assert summary["flicker_shown_median_s"] == 0.16


def test_a_screen_load_reads_on_its_own_thread_only_while_switched_on() -> None:
    """--screen-load: the product's reader, warmed before the first clip, reading again and
    again while a clip plays, and idle between clips."""
    import threading
    import time

    from devtools.bench.turns import ScreenLoad

    with ScreenLoad(False) as off:
        off.only(True)
        assert off.reads == 0 and not any(t.name == "screen-read" for t in threading.enumerate())
    with ScreenLoad(True) as load:
        assert load._reader.loaded  # the first capture's load is not a clip's
        time.sleep(0.3)
        assert load.reads == 0
        load.only(True)
        deadline = time.monotonic() + 120
        while load.reads < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        load.only(False)
        time.sleep(0.1)  # a read in flight ends
        done = load.reads
        assert done >= 2
        time.sleep(0.5)
        assert load.reads <= done + 1
