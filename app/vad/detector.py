"""webrtcvad over 30 ms frames, smoothed into speech onsets and pauses.

A single voiced frame (a click) must not start an utterance, and the first syllable must
not be cut: onsets need ``min_speech_ms`` of voiced frames within ``onset_window_ms``, and
the frames just before the onset (``pre_roll_ms``) are handed over with it.  The first
unvoiced frame after speech is reported at once (``paused``): that is the moment the
streaming recogniser starts its catch-up pass, long before any endpoint timer.

Design notes: decision 0038.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field

import webrtcvad

from app.audio.frames import FRAME_MS, SAMPLE_RATE, AudioFrame
from app.audio.level import SILENCE_DBFS as SILENT_DB
from app.audio.level import dbfs
from app.core.config import VadConfig
from app.vad.noise_floor import NoiseFloor


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
        self._onset_window = max(self._onset_frames, config.onset_window_ms // FRAME_MS)
        self._pre_roll = config.pre_roll_ms // FRAME_MS
        self._window: collections.deque[tuple[AudioFrame, bool]] = collections.deque(
            maxlen=self._pre_roll + self._onset_window)
        self._in_speech = False
        self._last_voiced = False
        self._gate = config.quiet_gate_db
        self._peak_db = SILENT_DB
        self._floor = (NoiseFloor(config.noise_window_s, config.noise_margin_db)
                       if config.noise_margin_db else None)
        self._end_requested = threading.Event()
        self.last_voiced_end = 0.0
        """Audio time of the end of the newest voiced frame seen in speech."""

    @property
    def in_speech(self) -> bool:
        return self._in_speech

    def request_end(self) -> None:
        """The turn is over (decided downstream, on any thread): from the next frame on,
        the next voiced run is a new onset.  Only a flag is set here."""
        self._end_requested.set()

    def process(self, frame: AudioFrame) -> VadStep:
        if self._end_requested.is_set():
            self._end_requested.clear()
            self._end_speech()
        voiced = self._vad.is_speech(frame.samples.tobytes(), SAMPLE_RATE)
        if self._floor is not None or self._gate:
            level = dbfs(frame.samples)
            if self._floor is not None:
                self._floor.update(level, frame.end)
                voiced = voiced and self._floor.above(level)
            if voiced and self._gate:
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
            recent = list(self._window)[-self._onset_window:]
            if voiced and sum(v for _, v in recent) >= self._onset_frames:
                step.onset = self._onset_frames_with_pre_roll()
                self._in_speech = True
                self.last_voiced_end = frame.end
                self._window.clear()
        self._last_voiced = voiced
        return step

    def _end_speech(self) -> None:
        self._in_speech = False
        self._window.clear()
        self._peak_db = SILENT_DB

    def _onset_frames_with_pre_roll(self) -> list[AudioFrame]:
        frames = [f for f, _ in self._window]
        first_voiced = next(i for i, (_, v) in enumerate(self._window) if v)
        return frames[max(0, first_voiced - self._pre_roll):]

