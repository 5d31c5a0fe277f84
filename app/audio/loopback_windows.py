"""Windows: capture what the speakers play (the interviewer on a call) via WASAPI loopback.

PortAudio's WASAPI host API cannot open a render endpoint for capture, so this uses the
``soundcard`` package, imported lazily (and on the reader thread, which is where its COM
calls run) so the rest of the app imports on any OS.

WASAPI loopback delivers *nothing* while nothing plays, but the VAD and endpointing need
frames to see silence.  The reader therefore fills such stretches with zero frames at
wall-clock pace, keeping frame times on the session clock.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from app.audio.frames import SAMPLE_RATE, AudioFrame, ErrorHandler, FrameHandler, ThreadedSource
from app.audio.resample import Converter, FrameChunker
from app.clock import SessionClock

CAPTURE_RATE = 48_000
CAPTURE_CHANNELS = 2
RETRY_INTERVAL = 1.0
SILENCE_FILL_AFTER = 0.1
"""Seconds without loopback data before zero frames stand in for the silence."""
_FIX = "check the default playback device in Windows sound settings"


class WasapiLoopbackSource(ThreadedSource):
    """The default speaker's loopback as an :class:`~app.audio.frames.AudioSource`."""

    def __init__(self, clock: SessionClock) -> None:
        super().__init__()
        self.name = "default speaker (loopback)"
        self._clock = clock
        self._chunker = FrameChunker()

    @property
    def overflows(self) -> int:
        return 0  # WASAPI shared-mode capture reports discontinuities, not overflows

    def _run(self, on_frame: FrameHandler, on_error: ErrorHandler) -> None:
        reported = False
        try:
            while not self._stop.is_set():
                try:
                    self._capture(on_frame)
                except Exception as exc:  # COM/soundcard errors have no common base class
                    if not reported:
                        on_error(f"Loopback capture of '{self.name}' failed ({exc}): {_FIX}; "
                                 f"retrying every {RETRY_INTERVAL:g} s.")
                        reported = True
                    self._stop.wait(RETRY_INTERVAL)
                else:
                    reported = False
        finally:
            self._done.set()

    def _capture(self, on_frame: FrameHandler) -> None:
        """Record until stopped or the endpoint fails (the caller then reopens it)."""
        import soundcard as sc

        speaker: Any = sc.default_speaker()
        self.name = f"{speaker.name} (loopback)"
        mic: Any = sc.get_microphone(id=str(speaker.name), include_loopback=True)
        converter = Converter(CAPTURE_RATE)
        with mic.recorder(samplerate=CAPTURE_RATE, channels=CAPTURE_CHANNELS) as recorder:
            if not self._clock.started:
                self._clock.start()
            self._chunker.skip_to(self._clock.now())
            while not self._stop.is_set():
                data = np.asarray(recorder.record(numframes=None), dtype=np.float32)
                if len(data):
                    self._deliver(self._chunker.push(converter.process(data)), on_frame)
                else:
                    self._fill_silence(on_frame)
                    time.sleep(0.005)

    def _fill_silence(self, on_frame: FrameHandler) -> None:
        behind = self._clock.now() - self._chunker.t
        if behind > SILENCE_FILL_AFTER:
            zeros = np.zeros(int((behind - SILENCE_FILL_AFTER / 2) * SAMPLE_RATE), dtype=np.int16)
            self._deliver(self._chunker.push(zeros), on_frame)

    @staticmethod
    def _deliver(frames: list[AudioFrame], on_frame: FrameHandler) -> None:
        for frame in frames:
            on_frame(frame)
