"""Input level: dBFS of audio, and the meter reading the window shows.

One implementation for the VAD's quiet gate, the level meter and the doctor.
"""

from __future__ import annotations

import math

import numpy as np

from app.audio.frames import AudioFrame, Samples
from app.core.clock import SessionClock
from app.core.events import LevelEvent, Speaker

SILENCE_DBFS = -120.0
EVERY_FRAMES = 3
"""One reading per 90 ms: smooth enough for a meter, cheap enough for any consumer."""


def dbfs(samples: Samples) -> float:
    """RMS level of 16-bit samples in dB below full scale (-120 for digital silence)."""
    if len(samples) == 0:
        return SILENCE_DBFS
    rms = float(np.sqrt(np.mean(samples.astype(np.float32) ** 2))) / 32768.0
    return 20 * math.log10(rms) if rms > 0 else SILENCE_DBFS


class LevelMeter:
    """The loudest frame of every few frames, as a ``level`` event for meters."""

    def __init__(self, clock: SessionClock, every: int = EVERY_FRAMES,
                 speaker: Speaker = "interviewer") -> None:
        self._clock = clock
        self._speaker: Speaker = speaker
        self._every = every
        self._peak = SILENCE_DBFS
        self._frames = 0

    def feed(self, frame: AudioFrame) -> LevelEvent | None:
        self._peak = max(self._peak, dbfs(frame.samples))
        self._frames += 1
        if self._frames % self._every:
            return None
        event = LevelEvent(t=self._clock.now(), dbfs=round(self._peak, 1), speaker=self._speaker)
        self._peak = SILENCE_DBFS
        return event
