"""Room tone for tests: seeded pink (1/f) noise at a chosen level, 16 kHz int16."""

from __future__ import annotations

import numpy as np


def pink_noise(seconds: float, dbfs: float, seed: int = 0, rate: int = 16_000) -> np.ndarray:
    """Pink noise whose RMS is ``dbfs`` (a quiet office or a laptop fan is about -42)."""
    n = int(seconds * rate)
    spectrum = np.fft.rfft(np.random.default_rng(seed).standard_normal(n))
    freqs = np.fft.rfftfreq(n, 1 / rate)
    freqs[0] = freqs[1]
    shaped = np.fft.irfft(spectrum / np.sqrt(freqs), n)
    shaped *= 10 ** (dbfs / 20) * 32768 / np.sqrt(np.mean(shaped**2))
    return shaped


def mix(speech: np.ndarray, noise: np.ndarray, at: int) -> np.ndarray:
    """``speech`` laid over ``noise`` starting at sample ``at``, clipped to int16."""
    out = noise.copy()
    out[at: at + len(speech)] += speech.astype(np.float64)
    return np.clip(out, -32768, 32767).astype(np.int16)
