"""webrtcvad over 30 ms frames, smoothed into speech onsets and pauses.

A single voiced frame (a click) must not start an utterance, and the first syllable must
not be cut: onsets need ``min_speech_ms`` of voiced frames within a short window, and
the frames just before the onset (``pre_roll_ms``) are handed over with it.  The first
unvoiced frame after speech is reported at once (``paused``): that is the moment the
streaming recogniser starts its catch-up pass, long before any endpoint timer.

webrtcvad keeps calling the decaying tail of the last word voiced for ~120 ms; within an
utterance a frame ``quiet_gate_db`` below the loudest voiced frame so far counts as
silence, which brings the pause to ~35 ms after the last word.
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass, field

import numpy as np
import webrtcvad

from app.audio.frames import FRAME_MS, SAMPLE_RATE, AudioFrame
from app.config import VadConfig


@dataclass(slots=True)
class VadStep:
    voiced: bool
    """webrtcvad's raw decision for this frame."""
    onset: list[AudioFrame] = field(default_factory=list)
    """Non-empty when speech starts at this frame: pre-roll + the voiced run, in order."""
    paused: bool = False
    """First unvoiced frame after voiced ones, while in speech."""
    resumed: bool = False
    """First voiced frame after a pause, while in speech."""


class VoiceDetector:
    def __init__(self, config: VadConfig) -> None:
        self._vad = webrtcvad.Vad(config.aggressiveness)
        self._onset_frames = max(1, config.min_speech_ms // FRAME_MS)
        self._pre_roll = config.pre_roll_ms // FRAME_MS
        self._window: collections.deque[tuple[AudioFrame, bool]] = collections.deque(
            maxlen=self._pre_roll + self._onset_frames + 2)
        self._in_speech = False
        self._last_voiced = False
        self._gate = config.quiet_gate_db
        self._peak_db = -120.0
        self.last_voiced_end = 0.0
        """Audio time of the end of the newest voiced frame seen in speech."""

    @property
    def in_speech(self) -> bool:
        return self._in_speech

    def end_speech(self) -> None:
        """The turn is over (decided downstream): the next voiced run is a new onset."""
        self._in_speech = False
        self._window.clear()
        self._peak_db = -120.0

    def process(self, frame: AudioFrame) -> VadStep:
        voiced = self._vad.is_speech(frame.samples.tobytes(), SAMPLE_RATE)
        if voiced and self._gate:
            level = _dbfs(frame)
            self._peak_db = max(self._peak_db, level)
            voiced = level >= self._peak_db - self._gate
        step = VadStep(voiced=voiced)
        if self._in_speech:
            if voiced:
                self.last_voiced_end = frame.end
                step.resumed = not self._last_voiced
            else:
                step.paused = self._last_voiced
        else:
            self._window.append((frame, voiced))
            recent = list(self._window)[-(self._onset_frames + 2):]
            if voiced and sum(v for _, v in recent) >= self._onset_frames:
                step.onset = self._onset_frames_with_pre_roll()
                self._in_speech = True
                self.last_voiced_end = frame.end
                self._window.clear()
        self._last_voiced = voiced
        return step

    def _onset_frames_with_pre_roll(self) -> list[AudioFrame]:
        frames = [f for f, _ in self._window]
        first_voiced = next(i for i, (_, v) in enumerate(self._window) if v)
        return frames[max(0, first_voiced - self._pre_roll):]


def _dbfs(frame: AudioFrame) -> float:
    rms = float(np.sqrt(np.mean(frame.samples.astype(np.float32) ** 2))) / 32768.0
    return 20 * math.log10(rms) if rms > 0 else -120.0
