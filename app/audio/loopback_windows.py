"""Windows: capture what the speakers play (the interviewer on a call) via WASAPI loopback.

PortAudio's WASAPI host API cannot open a render endpoint for capture, so this uses the
``soundcard`` package, imported lazily on the reader thread (where its COM calls run)
so the rest of the app imports on any OS.  Tests pass a fake module in instead.

Which endpoint: the default speaker's loopback, matched by its WASAPI endpoint **id**.
Names are not unique (two identical USB headsets, "Speakers (Realtek(R) Audio)" on a
dock and on the laptop) and ``soundcard.get_microphone`` falls back to substring and
fuzzy matching of names, so a name can open another device's loopback.  While
capturing, the default is checked every :data:`DEFAULT_CHECK_S`: when the user switches
output (plugs in headphones) the capture follows the new default.

Silence is not an error: WASAPI loopback delivers *nothing* while nothing plays
(depending on the soundcard version, ``record`` then returns an empty block or zeros),
but the VAD and endpointing need frames to see silence.  The reader fills such
stretches with zero frames at wall-clock pace, keeping frame times on the session clock.

A lost endpoint (unplugged, disabled, the audio service restarted: soundcard raises
from COM with AUDCLNT_E_DEVICE_INVALIDATED and the like) is reported once through
``on_error``, retried every :data:`RETRY_INTERVAL`, and reported again only if it is lost
again after it came back; time jumps over the outage as in ``device.py``.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

import numpy as np

from app.audio.frames import SAMPLE_RATE, AudioFrame, ErrorHandler, FrameHandler, ThreadedSource
from app.audio.resample import Converter, FrameChunker
from app.core.clock import SessionClock

CAPTURE_RATE = 48_000
CAPTURE_CHANNELS = 2
RETRY_INTERVAL = 1.0
"""Seconds between attempts to reopen a lost endpoint (as for PortAudio devices)."""
SILENCE_FILL_AFTER = 0.1
"""Seconds without loopback data before zero frames stand in for the silence."""
DEFAULT_CHECK_S = 2.0
"""How often to ask which speaker is the default: one COM enumeration, cheap; a switch
of output device is followed within this, which is shorter than a question."""
_POLL_S = 0.005
"""Wait between empty reads: well under a 30 ms frame, and a sleeping thread costs nothing."""
_FIX = "check the default playback device in Windows sound settings"


class WasapiLoopbackSource(ThreadedSource):
    """The default speaker's loopback as an :class:`~app.audio.frames.AudioSource`."""

    def __init__(self, clock: SessionClock, soundcard: Any = None) -> None:
        """``soundcard``: the module (a fake in tests); None imports it on the reader thread."""
        super().__init__()
        self.name = "default speaker (loopback)"
        self._clock = clock
        self._soundcard = soundcard
        self._chunker = FrameChunker()
        self._outage_reported = False
        self.reconnects = 0
        """Times capture came back after a reported loss."""

    @property
    def overflows(self) -> int:
        return 0  # WASAPI shared-mode capture reports discontinuities, not overflows

    def _run(self, on_frame: FrameHandler, on_error: ErrorHandler) -> None:
        try:
            try:
                sc = self._soundcard if self._soundcard is not None else (
                    importlib.import_module("soundcard"))
            except Exception as exc:  # a broken install: say it, do not kill the thread silently
                on_error(f"Loopback capture is unavailable: the soundcard package did not load "
                         f"({type(exc).__name__}: {exc}).")
                return
            while not self._stop.is_set():
                try:
                    self._capture(sc, on_frame)
                except Exception as exc:  # COM/soundcard errors have no common base class
                    if not self._outage_reported:
                        self._outage_reported = True
                        on_error(f"Loopback capture of '{self.name}' failed ({exc}): {_FIX}; "
                                 f"retrying every {RETRY_INTERVAL:g} s.")
                    self._stop.wait(RETRY_INTERVAL)
        finally:
            self._done.set()

    def _capture(self, sc: Any, on_frame: FrameHandler) -> None:
        """Record until stopped, the endpoint fails (raises) or the default speaker changes."""
        speaker = sc.default_speaker()
        speaker_id = str(speaker.id)
        self.name = f"{speaker.name} (loopback)"
        loopback = _loopback_of(sc, speaker_id, str(speaker.name))
        converter = Converter(CAPTURE_RATE)
        with loopback.recorder(samplerate=CAPTURE_RATE, channels=CAPTURE_CHANNELS) as recorder:
            if self._outage_reported:
                self.reconnects += 1
                self._outage_reported = False
            if not self._clock.started:
                self._clock.start()  # time 0 is this stream's first sample
            else:  # another source started the clock, or we are back after a loss
                self._chunker.skip_to(self._clock.now())
            next_check = time.monotonic() + DEFAULT_CHECK_S
            try:
                while not self._stop.is_set():
                    data = np.asarray(recorder.record(numframes=None), dtype=np.float32)
                    if len(data):
                        self._deliver(self._chunker.push(converter.process(data)), on_frame)
                    else:
                        self._fill_silence(on_frame)
                        self._stop.wait(_POLL_S)
                    if time.monotonic() >= next_check:
                        next_check = time.monotonic() + DEFAULT_CHECK_S
                        if str(sc.default_speaker().id) != speaker_id:
                            return  # the user switched output: reopen on the new default
            finally:
                self._deliver(self._chunker.push(converter.flush()), on_frame)
                last = self._chunker.flush()
                if last is not None:
                    on_frame(last)

    def _fill_silence(self, on_frame: FrameHandler) -> None:
        behind = self._clock.now() - self._chunker.t
        if behind > SILENCE_FILL_AFTER:
            zeros = np.zeros(int((behind - SILENCE_FILL_AFTER / 2) * SAMPLE_RATE), dtype=np.int16)
            self._deliver(self._chunker.push(zeros), on_frame)

    @staticmethod
    def _deliver(frames: list[AudioFrame], on_frame: FrameHandler) -> None:
        for frame in frames:
            on_frame(frame)


def _loopback_of(sc: Any, speaker_id: str, speaker_name: str) -> Any:
    """The loopback endpoint of the speaker with this WASAPI id (never a name match)."""
    for microphone in sc.all_microphones(include_loopback=True):
        if getattr(microphone, "isloopback", False) and str(microphone.id) == speaker_id:
            return microphone
    raise LookupError(f"the speaker '{speaker_name}' has no loopback endpoint any more")
