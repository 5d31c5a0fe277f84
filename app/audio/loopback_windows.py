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

Design notes: decision 0038.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import sys
import time
from collections.abc import Iterator
from importlib import metadata
from typing import Any, Protocol

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
DEFAULT_CHECK_S = 0.5
"""How often to ask which speaker is the default: one COM call, cheap; a switch of output
device (headphones plugged in) is followed within this plus the reopen, under a second."""
_POLL_S = 0.005
"""Wait between empty reads: well under a 30 ms frame, and a sleeping thread costs nothing."""
_FIX = "check the default playback device in Windows sound settings"
MIN_SOUNDCARD = "0.4.6"
"""The first soundcard that reads with ``numpy.frombuffer`` (numpy 2.3 removed fromstring)."""
COINIT_MULTITHREADED = 0x0
RPC_E_CHANGED_MODE = 0x80010106
"""The thread is already in another apartment (STA): usable, and not ours to uninitialise."""


class Ole32(Protocol):
    """The two ole32 functions the reader thread needs (ctypes' WinDLL, or a fake)."""

    def CoInitializeEx(self, reserved: None, coinit: int, /) -> int: ...

    def CoUninitialize(self) -> None: ...


class _ComRefused(Exception):
    """COM would not take the reader thread; ``str()`` is the HRESULT."""


def system_ole32() -> Ole32 | None:
    """Windows' ole32 with its prototypes declared; None elsewhere (no COM to join)."""
    if sys.platform != "win32":
        return None
    ole32 = ctypes.WinDLL("ole32")  # an instance of our own: its prototypes are ours to set
    ole32.CoInitializeEx.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    ole32.CoInitializeEx.restype = ctypes.c_long  # HRESULT: 32-bit, signed
    ole32.CoUninitialize.argtypes = []
    ole32.CoUninitialize.restype = None
    return ole32


@contextlib.contextmanager
def com_apartment(ole32: Ole32 | None) -> Iterator[None]:
    """This thread in COM's multithreaded apartment while the block runs.

    S_OK and S_FALSE are each balanced by a CoUninitialize; RPC_E_CHANGED_MODE (someone
    put the thread in an STA) works as it is and is left alone; any other failure raises
    :class:`_ComRefused`.
    """
    if ole32 is None:
        yield
        return
    result = ole32.CoInitializeEx(None, COINIT_MULTITHREADED) & 0xFFFFFFFF
    if result == RPC_E_CHANGED_MODE:
        yield
        return
    if result & 0x80000000:
        raise _ComRefused(f"HRESULT 0x{result:08X}")
    try:
        yield
    finally:
        ole32.CoUninitialize()


class WasapiLoopbackSource(ThreadedSource):
    """The default speaker's loopback as an :class:`~app.audio.frames.AudioSource`."""

    def __init__(self, clock: SessionClock, soundcard: Any = None,
                 ole32: Ole32 | None = None) -> None:
        """``soundcard``: the module (a fake in tests); None imports it on the reader thread.
        ``ole32``: the COM library (a fake in tests); None uses Windows' own (none elsewhere)."""
        super().__init__()
        self.name = "default speaker (loopback)"
        self._clock = clock
        self._soundcard = soundcard
        self._ole32 = ole32
        self._chunker = FrameChunker()
        self._outage_reported = False
        self.reconnects = 0
        """Times capture came back after a reported loss."""

    @property
    def overflows(self) -> int:
        return 0  # WASAPI shared-mode capture reports discontinuities, not overflows

    def _run(self, on_frame: FrameHandler, on_error: ErrorHandler) -> None:
        try:
            ole32 = self._ole32 if self._ole32 is not None else system_ole32()
            with com_apartment(ole32):
                self._run_in_com(on_frame, on_error)
        except _ComRefused as exc:
            on_error(f"Loopback capture cannot start: Windows refused COM to the capture "
                     f"thread ({exc}); restart the app.")
        finally:
            self._done.set()

    def _run_in_com(self, on_frame: FrameHandler, on_error: ErrorHandler) -> None:
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
                too_old = soundcard_too_old(exc)
                if too_old is not None:  # every retry would fail the same way
                    on_error(too_old)
                    return
                if not self._outage_reported:
                    self._outage_reported = True
                    on_error(f"Loopback capture of '{self.name}' failed ({exc}): {_FIX}; "
                             f"retrying every {RETRY_INTERVAL:g} s.")
                self._stop.wait(RETRY_INTERVAL)

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


def soundcard_too_old(exc: Exception) -> str | None:
    """The sentence for soundcard's ``numpy.fromstring`` failure under numpy 2.3+, or None.

    Recognised by the error itself, not by the version number: a bundle may carry no
    package metadata, and the error is what tells that this pairing cannot record.
    """
    if not (isinstance(exc, ValueError) and "fromstring" in str(exc)):
        return None
    try:
        installed = f"soundcard {metadata.version('soundcard')}"
    except metadata.PackageNotFoundError:
        installed = "the installed soundcard"
    return (f"Loopback capture cannot work: {installed} is too old for numpy {np.__version__} "
            f"(it reads audio with numpy.fromstring, which numpy 2.3 removed): update soundcard "
            f"to {MIN_SOUNDCARD} or later.")
