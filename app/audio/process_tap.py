"""macOS 14.2+: what the speakers play (the interviewer on a call) through a Core Audio
process tap, with no virtual audio device to install.

A *global* tap (every process's output, mixed to stereo, nothing muted) is the input of a
private aggregate device that holds the tap and nothing else; an IOProc on that device
hands us its blocks.  Unlike a Multi-Output Device routed to BlackHole this follows the
call into Bluetooth and USB headsets, because it taps the processes, not a device.  A
private tap and aggregate are visible to this process only and die with it.

Why a tap only, its rate, and how a refused permission is read (each is what public
implementations converge on, and what a real Mac has to confirm, see the macOS job in
CI): decision 0038.
"""

from __future__ import annotations

import platform
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol

from app.audio.core_audio import Block, BlockHandler, CoreAudioTap, TapError
from app.audio.frames import AudioFrame, AudioSource, ErrorHandler, FrameHandler, ThreadedSource
from app.audio.resample import AudioError, Converter, FrameChunker
from app.core.clock import SessionClock

MIN_MACOS = (14, 2)
"""The first macOS with ``AudioHardwareCreateProcessTap``; 14.0-14.1 keep BlackHole."""
RETRY_INTERVAL = 2.0
"""Seconds between attempts to build the tap again after a failure or a stall."""
STALL_S = 2.0
"""A tap delivers blocks (zeros) even while nothing plays, so none for this long means
its device is gone (a stopped HAL, a lost clock): rebuild it."""
RATE_CHECK_S = 1.0
"""How often to ask the tap's rate: it follows the default output, and a Bluetooth headset
that enters a call drops to 16 or 24 kHz; one property read, cheap."""
PRIVACY_PANE = "System Settings → Privacy & Security → Screen & System Audio Recording"
TAP_NAME = "system audio (process tap)"

def failure_sentence(exc: TapError, then: str = "") -> str:
    """What the user reads when the tap cannot be made: one sentence naming the fix.

    ``then`` continues the sentence (what happens next), after a semicolon.
    """
    if exc.denied:
        text = (f"macOS has not allowed Interview Copilot to record system audio: allow it "
                f"(or the terminal it runs from) in {PRIVACY_PANE}, or choose a BlackHole "
                f"input as the interviewer's device in Settings → Audio & speech")
    else:
        text = (f"macOS could not {exc.step} to hear what the speakers play ({exc.reason}); "
                f"choose a BlackHole input as the interviewer's device in Settings → Audio & speech "
                f"if this persists")
    return f"{text}; {then}." if then else f"{text}."


def supported(version: str | None = None) -> bool:
    """True on macOS 14.2 or later (``version`` as ``platform.mac_ver()`` gives it)."""
    text = platform.mac_ver()[0] if version is None else version
    try:
        parts = tuple(int(p) for p in text.split(".")[:2])
    except ValueError:
        return False
    return len(parts) > 0 and (*parts, 0)[:2] >= MIN_MACOS


class TapBackend(Protocol):
    """The Core Audio calls, in the order the source makes them.

    ``stop`` and ``destroy`` are always called, in that order, whatever step failed, and
    must undo only what exists.  Every failure raises :class:`TapError`.
    """

    def create_tap(self) -> None:
        """A private global stereo tap of every process's output (nothing muted)."""

    def create_aggregate(self) -> int:
        """A private aggregate device whose only input is the tap; the blocks' sample rate."""

    def current_rate(self) -> int:
        """The tap's sample rate now (it follows the default output device)."""

    def start(self, callback: BlockHandler) -> None:
        """Start the aggregate's IO: ``callback`` gets each block on Core Audio's thread."""

    def stop(self) -> None: ...

    def destroy(self) -> None:
        """Remove the IOProc, the aggregate device and the tap, in that order."""


def make_backend() -> TapBackend:
    """The real seam (tests replace this function)."""
    return CoreAudioTap()


def speakers_source(clock: SessionClock, fallback: Callable[[], AudioSource], *,
                    version: str | None = None) -> AudioSource:
    """The interviewer's source on macOS when the settings name no device.

    14.2 and later: the process tap, built now so that a tap that cannot be made falls
    back to ``fallback()`` (a BlackHole-style input), saying why once; with no fallback
    either, :class:`AudioError` with the tap's sentence.  Earlier: ``fallback()``.
    """
    if not supported(version):
        return fallback()
    source = ProcessTapSource(clock)
    try:
        source.open()
    except Exception as exc:  # pyobjc and ctypes errors have no common base
        failure = as_tap_error(exc)
        try:
            device = fallback()
        except AudioError:
            raise AudioError(failure_sentence(failure)) from exc
        return Fallback(device, failure_sentence(failure, then=f"listening to '{device.name}' instead"))
    return source


def as_tap_error(exc: Exception) -> TapError:
    """``exc`` as a TapError: a binding's surprise is said like Core Audio's refusals."""
    if isinstance(exc, TapError):
        return exc
    return TapError("record system audio", reason=f"{type(exc).__name__}: {exc}")


class ProcessTapSource(ThreadedSource):
    """What the speakers play, through a process tap, as an
    :class:`~app.audio.frames.AudioSource`.

    :meth:`open` builds the tap and its aggregate device (start-up calls it, so a tap that
    cannot be made is known before the session listens); the ``audio:`` thread starts the
    IO, converts and frames, and rebuilds the tap every :data:`RETRY_INTERVAL` after a
    failure or a stall, said once through ``on_error``.
    """

    def __init__(self, clock: SessionClock, backend: TapBackend | None = None,
                 stall_s: float = STALL_S) -> None:
        super().__init__()
        self.name = TAP_NAME
        self._clock = clock
        self._backend = backend if backend is not None else make_backend()
        self._stall_s = stall_s
        self._blocks: queue.SimpleQueue[tuple[float, Block]] = queue.SimpleQueue()
        self._chunker = FrameChunker()
        self._lock = threading.Lock()
        self._built = False
        self._rate = 0
        self._outage_reported = False
        self.reconnects = 0
        """Times capture came back after a reported failure."""

    @property
    def overflows(self) -> int:
        return 0  # the HAL reports no overflow to an IOProc; a late block is just late

    def open(self) -> None:
        """Build the tap and its aggregate device; on failure undo them and raise TapError."""
        with self._lock:
            if self._built:
                return
            self._built = True
            try:
                self._backend.create_tap()
                self._rate = self._backend.create_aggregate()
                if self._rate <= 0:
                    raise TapError("read the tap's sample rate", reason=f"{self._rate} Hz")
            except BaseException:
                self._teardown()
                raise

    def stop(self, timeout: float = 5.0) -> None:
        """Stop; a source opened but never started still gives its tap back."""
        started = self._thread is not None
        super().stop(timeout)
        if not started:
            self._close()

    # --- Core Audio's IO thread: copy and go ---------------------------------------------

    def _on_block(self, block: Block) -> None:
        self._blocks.put((time.perf_counter(), block))

    # --- the audio: thread ---------------------------------------------------------------

    def _run(self, on_frame: FrameHandler, on_error: ErrorHandler) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self._capture(on_frame)
                except Exception as exc:  # pyobjc and ctypes errors have no common base
                    if not self._outage_reported:
                        self._outage_reported = True
                        on_error(failure_sentence(
                            as_tap_error(exc), then=f"trying again every {RETRY_INTERVAL:g} s"))
                    self._stop.wait(RETRY_INTERVAL)
        finally:
            self._close()
            self._done.set()

    def _capture(self, on_frame: FrameHandler) -> None:
        """One life of the tap: build it (unless :meth:`open` did), start it, deliver until
        stopped; a stall raises.  Stop and destroy always follow, in that order."""
        try:
            self.open()
            while not self._blocks.empty():  # a previous life's last blocks
                self._blocks.get_nowait()
            self._backend.start(self._on_block)
            self._deliver(Converter(self._rate), on_frame)
        finally:
            self._close()

    def _deliver(self, converter: Converter, on_frame: FrameHandler) -> None:
        """Until stopped, or the tap's rate moved (returns: rebuild), or it stalls (raises)."""
        first = True
        last = time.monotonic()
        next_check = last + RATE_CHECK_S
        try:
            while not self._stop.is_set():
                if time.monotonic() >= next_check:
                    next_check = time.monotonic() + RATE_CHECK_S
                    if self._backend.current_rate() != self._rate:
                        return  # a new output device: rebuild the tap at its rate
                try:
                    arrival, block = self._blocks.get(timeout=0.1)
                except queue.Empty:
                    if time.monotonic() - last > self._stall_s:
                        raise TapError("keep the tap running",
                                       reason=f"no audio for {self._stall_s:g} s") from None
                    continue
                last = time.monotonic()
                if first:
                    first = False
                    self._place(arrival - len(block) / self._rate)
                    if self._outage_reported:
                        self._outage_reported = False
                        self.reconnects += 1
                self._emit(self._chunker.push(converter.process(block)), on_frame)
        finally:
            self._emit(self._chunker.push(converter.flush()), on_frame)
            last_frame = self._chunker.flush()
            if last_frame is not None:
                on_frame(last_frame)

    def _place(self, first_sample: float) -> None:
        """Put this life's first frame at its position on the session clock (arrival stamps
        are ``time.perf_counter()`` values, as in ``device.py``)."""
        if not self._clock.started:
            self._clock.start(first_sample)
        t = (first_sample - self._clock.to_counter(0.0)) * self._clock.speed
        self._chunker.skip_to(max(t, 0.0))

    @staticmethod
    def _emit(frames: list[AudioFrame], on_frame: FrameHandler) -> None:
        for frame in frames:
            on_frame(frame)

    def _close(self) -> None:
        with self._lock:
            if self._built:
                self._teardown()

    def _teardown(self) -> None:
        """Stop, then destroy, whatever failed before (called under the lock)."""
        self._built = False
        try:
            self._backend.stop()
        finally:
            self._backend.destroy()


class Fallback:
    """Another input (BlackHole) standing in for a tap that could not be made; says why
    once, as a warning, when it starts: the session goes on with it."""

    def __init__(self, source: AudioSource, notice: str) -> None:
        self._source = source
        self.notice = notice
        self.name = source.name

    def start(self, on_frame: FrameHandler, on_error: ErrorHandler,
              on_warning: ErrorHandler | None = None) -> None:
        (on_warning if on_warning is not None else on_error)(self.notice)
        self._source.start(on_frame, on_error, on_warning)

    def stop(self, timeout: float = 5.0) -> None:
        self._source.stop(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        return self._source.wait(timeout)

    @property
    def overflows(self) -> int:
        return self._source.overflows


def main() -> int:
    """``python -m app.audio.process_tap``: build a tap, record one second, say what
    happened (the macOS CI job).  Core Audio's refusals are reported and exit 0 (a runner
    may forbid recording); anything else is a bug in our calls and exits non-zero."""
    if sys.platform != "darwin" or not supported():
        print(f"no process taps here ({sys.platform} {platform.mac_ver()[0]}): macOS 14.2+ has them")
        return 0
    backend = CoreAudioTap()
    blocks: list[Block] = []
    try:
        backend.create_tap()
        rate = backend.create_aggregate()
        print(f"created a private global process tap and its aggregate device at {rate} Hz")
        backend.start(blocks.append)
        time.sleep(1.0)
        frames = sum(len(b) for b in blocks)
        print(f"recorded for 1 s: {len(blocks)} blocks, {frames} frames"
              f"{'' if frames else ' (no IO: the runner gave the aggregate no clock or no permission)'}")
    except TapError as exc:
        print(f"the tap could not be made or started here: {failure_sentence(exc)}")
    finally:
        backend.stop()
        backend.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
