"""The prosody measurement's instruments: the F0 tracker, the cues and the AUC."""

from __future__ import annotations

import numpy as np

from devtools.bench.prosody import SAMPLE_RATE, auc, cues, f0_track


def _glide(start_hz: float, end_hz: float, seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    freq = np.linspace(start_hz, end_hz, t.size)
    return 0.3 * np.sin(2 * np.pi * np.cumsum(freq) / SAMPLE_RATE)


def test_the_tracker_follows_a_voice_and_leaves_silence_unvoiced() -> None:
    track = f0_track(np.concatenate([_glide(120, 120, 0.5), np.zeros(SAMPLE_RATE // 2)]))
    assert abs(np.nanmedian(track[:40]) - 120) < 3
    assert np.isnan(track[-30:]).all()


def test_a_rising_end_has_a_rising_slope_and_a_falling_one_a_falling_slope() -> None:
    rising = cues(f0_track(_glide(110, 180, 1.0)), 1.0)
    falling = cues(f0_track(_glide(180, 110, 1.0)), 1.0)
    assert rising is not None and falling is not None
    assert rising[0] > 5 > -5 > falling[0]
    assert rising[1] > 0 > falling[1]


def test_too_little_voice_gives_no_cues() -> None:
    assert cues(f0_track(np.zeros(SAMPLE_RATE)), 1.0) is None


def test_auc_is_the_chance_an_end_scores_above_a_pause() -> None:
    assert auc([2.0, 3.0], [1.0]) == 1.0
    assert auc([1.0], [2.0, 3.0]) == 0.0
    assert auc([1.0, 3.0], [2.0, 2.0]) == 0.5
    assert auc([1.0], [1.0]) == 0.5
