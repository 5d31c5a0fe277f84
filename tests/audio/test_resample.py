"""The resampler and framer: quality, exact timing, and identical output however blocked."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE
from app.audio.resample import (
    Converter,
    FrameChunker,
    Resampler,
    convert,
    float_to_int16,
    to_mono_float,
)


def _tone(freq: float, rate: int, seconds: float = 1.0) -> npt.NDArray[np.float32]:
    t = np.arange(int(rate * seconds)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _resample_all(x: npt.NDArray[np.float32], rate: int) -> npt.NDArray[np.float32]:
    r = Resampler(rate)
    return np.concatenate([r.process(x), r.flush()])


def _db(x: npt.NDArray[np.floating], ref: float) -> float:
    return float(20 * np.log10(np.sqrt(np.mean(np.square(x))) / ref))


_CASES = [(rate, freq) for rate in (8000, 22050, 32000, 44100, 48000, 96000, 47999)
          for freq in (440.0, 3000.0, 6000.0) if freq < rate / 2 * 0.9]


@pytest.mark.parametrize(("rate", "freq"), _CASES)
def test_tones_come_out_exact_and_undelayed(rate: int, freq: float) -> None:
    y = _resample_all(_tone(freq, rate), rate)
    expected = _tone(freq, SAMPLE_RATE)
    assert len(y) == len(expected)
    err = (y - expected)[100:-100]  # edges: the signal itself starts/stops abruptly
    assert _db(err, 0.5 / np.sqrt(2)) < -60  # a delay or gain error would be far above this


@pytest.mark.parametrize("rate", [44100, 48000])
def test_content_above_8khz_is_removed_not_aliased(rate: int) -> None:
    y = _resample_all(_tone(11000.0, rate), rate)
    assert _db(y[100:-100], 0.5 / np.sqrt(2)) < -60


@pytest.mark.parametrize("rate", [8000, 44100, 48000, 47999])
def test_blocks_of_any_size_give_the_same_samples(rate: int) -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(-0.5, 0.5, rate).astype(np.float32)
    whole = _resample_all(x, rate)
    r = Resampler(rate)
    parts, i = [], 0
    while i < len(x):
        n = int(rng.integers(1, 700))
        parts.append(r.process(x[i : i + n]))
        i += n
    parts.append(r.flush())
    blocked = np.concatenate(parts)
    assert len(blocked) == len(whole) == -(-len(x) * SAMPLE_RATE // rate)
    np.testing.assert_allclose(blocked, whole, atol=1e-6)


def test_sixteen_khz_int16_passes_through_bit_exact() -> None:
    x = np.random.default_rng(2).integers(-32768, 32767, 5000, dtype=np.int16)
    np.testing.assert_array_equal(convert(x, SAMPLE_RATE), x)


def test_sample_types_are_scaled_to_full_range() -> None:
    np.testing.assert_allclose(to_mono_float(np.array([0, 128, 255], dtype=np.uint8)),
                               [-1.0, 0.0, 127 / 128])
    np.testing.assert_allclose(to_mono_float(np.array([-32768, 16384], dtype=np.int16)),
                               [-1.0, 0.5])
    np.testing.assert_allclose(to_mono_float(np.array([-(2**31), 2**30], dtype=np.int32)),
                               [-1.0, 0.5])
    np.testing.assert_allclose(to_mono_float(np.array([[0.5, -0.5], [1.0, 0.0]])), [0.0, 0.5])


def test_float_overshoot_clips_instead_of_wrapping() -> None:
    out = float_to_int16(np.array([1.5, -1.5, 0.5], dtype=np.float32))
    np.testing.assert_array_equal(out, [32767, -32768, 16384])


def test_converter_keeps_state_for_stereo_int_blocks() -> None:
    stereo = (np.stack([_tone(1000, 48000), _tone(1000, 48000)], axis=1) * 32767).astype(np.int16)
    c = Converter(48000)
    out = np.concatenate([c.process(stereo[i : i + 441]) for i in range(0, len(stereo), 441)]
                         + [c.flush()])
    expected = _tone(1000, SAMPLE_RATE) * 32767
    assert np.max(np.abs(out[50:-50] - expected[50:-50])) < 20  # ~ -64 dB of full scale


def test_chunker_cuts_exact_frames_on_the_audio_clock() -> None:
    chunker = FrameChunker()
    frames = []
    for n in (100, 1000, 7, 333, 480, 1):
        frames += chunker.push(np.arange(n, dtype=np.int16))
    total = 100 + 1000 + 7 + 333 + 480 + 1
    assert len(frames) == total // FRAME_SAMPLES
    assert [f.t for f in frames] == [k * FRAME_SAMPLES / SAMPLE_RATE for k in range(len(frames))]
    assert all(f.samples.shape == (FRAME_SAMPLES,) and f.samples.dtype == np.int16 for f in frames)
    assert frames[1].t == pytest.approx(0.03, abs=1e-12)
    last = chunker.flush()
    assert last is not None and last.t == pytest.approx(len(frames) * 0.03)
    rest = total % FRAME_SAMPLES
    assert np.all(last.samples[rest:] == 0) and chunker.flush() is None


def test_chunker_skip_lands_on_the_frame_grid() -> None:
    chunker = FrameChunker()
    chunker.push(np.zeros(960, dtype=np.int16))
    assert chunker.skip_to(1.0) == pytest.approx(1.02 - 0.06)  # 1.0 rounds up to 1.02
    frame = chunker.push(np.zeros(480, dtype=np.int16))[0]
    assert frame.t == pytest.approx(1.02)
    assert chunker.skip_to(0.5) == 0.0  # never backwards
