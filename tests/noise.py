"""Room tone for tests: seeded pink (1/f) noise at a chosen level, 16 kHz int16."""

from __future__ import annotations

import numpy as np

from devtools.bench.synth import pink_noise

__all__ = ["mix", "pink_noise"]


def mix(speech: np.ndarray, noise: np.ndarray, at: int) -> np.ndarray:
    """``speech`` laid over ``noise`` starting at sample ``at``, clipped to int16."""
    out = noise.copy()
    out[at: at + len(speech)] += speech.astype(np.float64)
    return np.clip(out, -32768, 32767).astype(np.int16)
