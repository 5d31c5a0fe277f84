"""Live capture from a PortAudio input (microphone, or a loopback/monitor device).

Two threads, so PortAudio never waits on us: the stream callback only copies the block
into a queue; a worker thread converts, cuts frames and calls ``on_frame``.  The worker
also watches the stream: when it dies (device unplugged, sound server restarted) it
reports once through ``on_error`` and reopens the device by name every second until it
is back or :meth:`DeviceSource.stop` is called. Design notes: decision 0038.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import sounddevice as sd

from app.audio import pulse
from app.audio.deadline import PortAudioWedged
from app.audio.deadline import with_deadline as _with_deadline
from app.audio.frames import AudioFrame, ErrorHandler, FrameHandler, ThreadedSource
from app.audio.permission import (
    DigitalSilence,
    access_denied_message,
    require_microphone_access,
    silence_warning,
    watches_for_silence,
)
from app.audio.pulse import SPEAKERS_MONITOR, pulse_source_of
from app.audio.resample import AudioError, Converter, FrameChunker
from app.core.clock import SessionClock

DeviceKind = Literal["mic", "loopback"]

RETRY_INTERVAL = 1.0
"""Seconds between attempts to reopen a lost device."""
FIRST_BLOCK_TIMEOUT = 5.0
"""A freshly opened stream may take a while to deliver (a PulseAudio monitor's first block
comes over a second after the open; decision 0014)."""
STALL_TIMEOUT = 2.0
"""No block for this long after the first one: the device is gone even if PortAudio is silent."""
OVERFLOW_BURST = 1.0
"""Overflows closer together than this are one burst, reported once."""
OPEN_DEADLINE = 5.0
"""Seconds opening and starting a stream may take: a healthy open takes well under a second
even on a busy machine (a PulseAudio monitor's long wait is for its first block, after
the open; decision 0014); past this the attempt counts as failed and is retried."""
CLOSE_DEADLINE = 1.0
"""Seconds aborting and closing a stream may take before it is abandoned: a healthy abort
returns within a few block periods; one wedged on a dead sound server never returns, and a
lost device must end a headless run within a few seconds."""
RESUME_GRACE = 10.0
"""Seconds a lost PulseAudio device whose server still answers may take to come back before
it is an error: a Bluetooth headset reconnects, a sink returns after a wake, in a few
seconds; a headless run on a device really gone still ends soon."""
AWAKE_STEP = 0.25
"""The most one turn of the worker's loop (which wakes every 0.1 s) counts towards "no audio
for a while": a longer gap means the process was not scheduled (a busy machine, a debugger,
system sleep), and the PortAudio thread probably was not either, so its silence then proves
little.  Capping, not resetting, keeps a busy machine from postponing the verdict forever."""

_LOOPBACK_HINTS = ("monitor", "loopback", "blackhole", "stereo mix", "what u hear",
                   "soundflower", "cable output", "wave out")
_FIX = "run with --list-devices to see the inputs, then pick one with --device NAME or INDEX"

@dataclass(frozen=True, slots=True)
class DeviceInfo:
    index: int
    name: str
    hostapi: str
    max_input_channels: int
    default_samplerate: float
    is_default: bool
    is_loopback_candidate: bool


def list_devices() -> list[DeviceInfo]:
    """Every input PortAudio can open, with what a user needs to choose one."""
    try:
        default_in = sd.default.device[0]
        apis = [str(api["name"]) for api in sd.query_hostapis()]
        raw = list(sd.query_devices())
    except sd.PortAudioError as exc:
        raise AudioError(f"PortAudio cannot list audio devices: {exc}") from exc
    devices = []
    for index, dev in enumerate(raw):
        if int(dev["max_input_channels"]) < 1:
            continue
        name = str(dev["name"])
        devices.append(DeviceInfo(
            index=index,
            name=name,
            hostapi=apis[int(dev["hostapi"])],
            max_input_channels=int(dev["max_input_channels"]),
            default_samplerate=float(dev["default_samplerate"]),
            is_default=index == default_in,
            is_loopback_candidate=any(h in name.lower() for h in _LOOPBACK_HINTS),
        ))
    return devices


def format_device_list(devices: list[DeviceInfo] | None = None) -> str:
    """The ``--list-devices`` text: one input per line, marks for default and loopback."""
    devices = list_devices() if devices is None else devices
    lines = ["Audio inputs (* = default, L = can capture what the speakers play):"]
    for d in devices:
        marks = ("*" if d.is_default else " ") + ("L" if d.is_loopback_candidate else " ")
        lines.append(f" {marks} {d.index:>3}  {d.name}  [{d.hostapi}, "
                     f"{d.max_input_channels} ch, {d.default_samplerate:.0f} Hz]")
    if not devices:
        lines.append("   (none found)")
    monitors = [s for s in pulse.pulse_sources() if s.endswith(".monitor")]
    if monitors:
        lines.append("PulseAudio/PipeWire monitors (use --device pulse:NAME):")
        lines += [f"   L  {m}" for m in monitors]
    lines.append("Pick one with --device NAME (a unique part of it) or --device INDEX.")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _Target:
    """What to (re)open: a PortAudio device name, stable across re-enumeration."""

    label: str
    name: str | None  # None = the system default input
    pulse_source: str | None
    follows_default: bool = False  # the default sink's monitor, whichever it is


def _resolve(device: str | int | None) -> _Target:
    """Find the user's device now, so a typo fails before the session starts."""
    spec = "" if device is None else str(device).strip()
    if spec == SPEAKERS_MONITOR:
        _find_by_name("pulse", label=spec)
        monitor = pulse.speakers_monitor()
        return _Target(f"pulse:{monitor}", name="pulse", pulse_source=monitor, follows_default=True)
    source = pulse_source_of(spec)
    if source is not None:
        _find_by_name("pulse", label=spec)
        known = pulse.pulse_sources()
        if known and source not in known:
            monitors = ", ".join(s for s in known if s.endswith(".monitor")) or "none"
            raise AudioError(f"PulseAudio source '{source}' not found (monitors: {monitors}): "
                             f"{_FIX}.")
        return _Target(label=spec, name="pulse", pulse_source=source)
    if spec.lower() in ("", "mic", "default"):
        info = _default_input()
        return _Target(label=f"default input ({info.name})", name=None, pulse_source=None)
    inputs = list_devices()
    if spec.isdigit():
        match = [d for d in inputs if d.index == int(spec)]
        if not match:
            raise AudioError(f"Audio input device #{spec} does not exist: {_FIX}.")
        return _Target(label=match[0].name, name=match[0].name, pulse_source=None)
    info = _find_by_name(spec, label=spec, inputs=inputs)
    return _Target(label=info.name, name=info.name, pulse_source=None)


def _find_by_name(spec: str, label: str, inputs: list[DeviceInfo] | None = None) -> DeviceInfo:
    inputs = list_devices() if inputs is None else inputs
    exact = [d for d in inputs if d.name == spec]
    partial = [d for d in inputs if spec.lower() in d.name.lower()]
    found = exact or partial
    if not found:
        raise AudioError(f"Audio input device '{label}' not found: {_FIX}.")
    return found[0]


def _default_input() -> DeviceInfo:
    inputs = list_devices()
    for d in inputs:
        if d.is_default:
            return d
    if inputs:
        return inputs[0]
    raise AudioError(f"No audio input device found (no microphone?): connect one, or {_FIX}.")


class MicrophoneDenied(AudioError):
    """Windows' privacy switches keep the microphone from this app (the sentence says where)."""


_abandoned: list[Any] = []
"""Streams that would not close: referenced so that nothing closes them again."""


def _abandon(stream: Any) -> None:
    """Never touch ``stream`` again, and do not let the exit wait for it either."""
    _abandoned.append(stream)
    exit_handler = getattr(sd, "_exit_handler", None)  # closes the last stream, then Pa_Terminate
    if exit_handler is not None:
        atexit.unregister(exit_handler)


def abandoned_streams() -> int:
    """How many streams were given up on (for tests: nothing else needs to know)."""
    return len(_abandoned)


def _shut(stream: Any) -> None:
    """Abort and close, ignoring PortAudio's complaints about a stream that already died."""
    with contextlib.suppress(sd.PortAudioError):
        stream.abort()
    with contextlib.suppress(sd.PortAudioError):
        stream.close()


BlockCallback = Callable[[npt.NDArray[np.float32], int, Any, Any], None]
_Item = tuple[int, float, npt.NDArray[np.float32] | None]
"""(stream generation, arrival time, block); block None = PortAudio finished the stream.
The arrival is on ``time.perf_counter()``, the session clock's own (it places the first
frame); the worker's timers stay on ``time.monotonic()`` (app/core/clock.py says why)."""


class DeviceSource(ThreadedSource):
    """A PortAudio input as an :class:`~app.audio.frames.AudioSource`."""

    def __init__(self, device: str | int | None, clock: SessionClock,
                 kind: DeviceKind = "mic") -> None:
        super().__init__()
        require_microphone_access()  # macOS: before any input, BlackHole included
        self.kind = kind
        self._target = _resolve(device)
        self.name = self._target.label
        self._clock = clock
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._stream: Any = None  # sd.InputStream while open
        self._generation = 0
        self._overflows = 0
        self.reconnects = 0
        self.followed = 0  # times capture moved to a new default sink's monitor
        self.rate: int | None = None
        self.channels: int | None = None
        self._watcher = pulse.DefaultSinkWatcher() if self._target.follows_default else None

    @property
    def overflows(self) -> int:
        return self._overflows

    # --- PortAudio thread: copy and go ---------------------------------------------------

    def _callbacks(self, generation: int) -> tuple[BlockCallback, Callable[[], None]]:
        """Callbacks tagged with their stream, so a dead stream's late blocks are ignored."""
        put = self._queue.put

        def on_block(indata: npt.NDArray[np.float32], frames: int, time_info: Any,
                     status: Any) -> None:
            if status.input_overflow:
                self._overflows += 1
            put((generation, time.perf_counter(), indata.copy()))

        def on_finished() -> None:
            put((generation, time.perf_counter(), None))

        return on_block, on_finished

    # --- worker thread -------------------------------------------------------------------

    def _run(self, on_frame: FrameHandler, on_error: ErrorHandler) -> None:
        worker = _Worker(self, on_frame, on_error)
        if self._watcher is not None:
            self._watcher.start()
        try:
            worker.loop()
        finally:
            if self._watcher is not None:
                self._watcher.stop()
            self._close()
            self._done.set()

    def default_moved(self) -> str | None:
        """Following the default sink: the new default's monitor, if capture is not on it."""
        sink = None if self._watcher is None else self._watcher.sink
        moved = sink is not None and f"{sink}.monitor" != self._target.pulse_source
        return f"{sink}.monitor" if moved else None

    def _retarget(self) -> None:
        """Following the default sink: aim the next open at its monitor now."""
        monitor = self.default_moved()
        if monitor is not None:
            self._target = _Target(f"pulse:{monitor}", "pulse", monitor, follows_default=True)
            self.name = self._target.label

    def server_gone(self) -> bool:
        """A PulseAudio/PipeWire device whose sound server does not answer."""
        return self._target.name == "pulse" and pulse.server_gone()

    def _open(self) -> None:
        """Open and start the stream at the device's own rate, mono if it allows.  Never on
        a dead sound server: the ``pulse`` plugin would be asked to connect to nothing."""
        if self.server_gone():
            raise AudioError("the sound server (PulseAudio/PipeWire) is not running")
        self._retarget()
        info = self._find()
        rate = int(info.default_samplerate)
        self._generation += 1
        callbacks = self._callbacks(self._generation)
        last_error: Exception | None = None
        for channels in dict.fromkeys((1, min(2, info.max_input_channels))):
            try:
                stream = _with_deadline(
                    functools.partial(self._start_stream, info.index, rate, channels, callbacks),
                    OPEN_DEADLINE, "open", on_late=_shut)
            except (sd.PortAudioError, ValueError, PortAudioWedged) as exc:
                last_error = exc
                continue
            self._stream, self.rate, self.channels = stream, rate, channels
            return
        denied = None if last_error is None else access_denied_message(last_error, self.name)
        if denied is not None:
            raise MicrophoneDenied(denied)
        raise AudioError(f"Cannot open audio device '{self.name}': {last_error}")

    def _start_stream(self, index: int, rate: int, channels: int,
                      callbacks: tuple[BlockCallback, Callable[[], None]]) -> Any:
        with pulse.pulse_source_env(self._target.pulse_source):
            stream = sd.InputStream(
                device=index, samplerate=rate, channels=channels, dtype="float32",
                blocksize=0, latency="low", callback=callbacks[0],
                finished_callback=callbacks[1],
            )
        try:
            stream.start()
        except sd.PortAudioError:
            stream.close()
            raise
        return stream

    def _find(self) -> DeviceInfo:
        """The device in PortAudio's list (read at start-up: see the module docstring)."""
        if self._target.name is None:
            return _default_input()
        return _find_by_name(self._target.name, label=self.name)

    def _close(self, server_gone: bool = False) -> None:
        """Close the stream within :data:`CLOSE_DEADLINE`, or abandon it.  One whose sound
        server died is abandoned untouched: closing the ``pulse`` plugin under its spinning
        callback thread is where libpulse can abort the process (SIGABRT)."""
        stream, self._stream = self._stream, None
        if stream is None:
            return
        if server_gone:
            _abandon(stream)
            return
        try:
            _with_deadline(lambda: _shut(stream), CLOSE_DEADLINE, "close")
        except PortAudioWedged:
            _abandon(stream)


class _Worker:
    """The worker thread's state: conversion, framing, health and reconnection."""

    def __init__(self, source: DeviceSource, on_frame: FrameHandler, on_error: ErrorHandler):
        self.src = source
        self.on_frame = on_frame
        self.on_error = on_error
        self.chunker = FrameChunker()
        self.converter: Converter | None = None
        self.got_block = False
        self.quiet = 0.0
        """Seconds without a block, counted only while the loop was awake (AWAKE_STEP)."""
        self.next_retry = 0.0
        self.outage_reported = False
        self.waiting_since: float | None = None  # a loss said as a warning: RESUME_GRACE
        self.last_overflow_report = -1e9
        self.seen_overflows = 0
        self.last_step = time.monotonic()
        self.silence: DigitalSilence | None = None
        """Watches an input's first seconds for exact zeros (a denied macOS microphone, which
        BlackHole needs too); said at most once per source.  Off macOS, monitors and
        loopbacks are not watched: they are silent whenever nothing plays."""
        self.loopback = source.kind == "loopback" or bool(source._target.pulse_source) or any(
            hint in source.name.lower() for hint in _LOOPBACK_HINTS)
        self.watch_silence = watches_for_silence(loopback=self.loopback)

    def loop(self) -> None:
        while not self.src._stop.is_set():
            if self.src.default_moved() is not None:
                self._follow()
            if self.src._stream is None:
                self._try_open()
                continue
            try:
                item = self.src._queue.get(timeout=0.1)
            except queue.Empty:
                self._check_stalled()
                continue
            generation, arrival, data = item
            if generation != self.src._generation:
                continue  # left over from a stream we already gave up on
            if data is None:
                self._lose("the stream stopped")
            else:
                self._block(arrival, data)
                self._check_overflows()

    def _follow(self) -> None:
        """The default sink changed: open its monitor at once (not a loss: nothing said)."""
        if self.src._stream is not None:
            self.src._close()
            self._drain()
        self.src.followed += 1
        self.next_retry = 0.0

    def _try_open(self) -> None:
        now = time.monotonic()
        if now < self.next_retry:
            self.src._stop.wait(min(0.1, self.next_retry - now))
            return
        self.next_retry = now + RETRY_INTERVAL
        try:
            self.src._open()
        except MicrophoneDenied as exc:  # plugged in and free: only the user's switch helps
            if not self.outage_reported:
                self.outage_reported = True
                self.on_error(f"{exc} Retrying every {RETRY_INTERVAL:g} s.")
            return
        except (AudioError, sd.PortAudioError) as exc:
            if self.waiting_since is not None:
                self._still_away(f"{exc}")
            elif not self.outage_reported:
                self.outage_reported = True
                self.on_error(f"{exc}. Check that it is plugged in and not in use; "
                              f"retrying every {RETRY_INTERVAL:g} s, or {_FIX}.")
            return
        if self.outage_reported:
            self.src.reconnects += 1
        if self.waiting_since is not None:
            self.waiting_since = None
            self.src._warn(f"Audio device '{self.src.name}' is back.")
        self.outage_reported = False
        assert self.src.rate is not None
        self.converter = Converter(self.src.rate)
        self.silence = DigitalSilence(self.src.rate) if self.watch_silence else None
        self.got_block = False
        self.quiet = 0.0
        self.last_step = time.monotonic()

    def _awake_step(self) -> float:
        """Seconds since the last step, at most AWAKE_STEP (see there)."""
        now = time.monotonic()
        step, self.last_step = min(now - self.last_step, AWAKE_STEP), now
        return step

    def _check_stalled(self) -> None:
        """PortAudio says the stream stopped (also before its first block), or it has been
        silent too long while we were awake to hear it."""
        self.quiet += self._awake_step()
        if self.src._stream is not None and not self.src._stream.active:
            self._lose("the stream stopped")
        elif not self.got_block:
            if self.quiet > FIRST_BLOCK_TIMEOUT:
                self._lose(f"no audio within {FIRST_BLOCK_TIMEOUT:g} s of opening it")
        elif self.quiet > STALL_TIMEOUT:
            self._lose(f"no audio for {STALL_TIMEOUT:g} s")

    def _lose(self, reason: str) -> None:
        """Report the loss, then close the dead stream (bounded), deliver what it gave us,
        and schedule reopening.  Reporting first: a session that ends on a lost device
        must not wait for PortAudio to let go of it."""
        gone = self.src.server_gone()
        if not self.outage_reported:
            self.outage_reported = True
            if self.src._target.name == "pulse" and not gone:
                self.waiting_since = time.monotonic()
                self.src._warn(f"Audio device '{self.src.name}' was lost ({reason}); waiting "
                               f"up to {RESUME_GRACE:g} s for it to come back.")
            else:
                self.on_error(self._lost_sentence(reason))
        self.src._close(server_gone=gone)
        self._drain()
        self.next_retry = time.monotonic() + RETRY_INTERVAL

    def _lost_sentence(self, reason: str) -> str:
        return (f"Audio device '{self.src.name}' was lost ({reason}). Check that it is plugged "
                f"in; retrying every {RETRY_INTERVAL:g} s (a device plugged back in that does "
                f"not return needs an app restart), or {_FIX}.")

    def _still_away(self, problem: str) -> None:
        """A reopen failed while waiting: an error past the grace, or if the server went."""
        assert self.waiting_since is not None
        waited = time.monotonic() - self.waiting_since
        if waited > RESUME_GRACE or self.src.server_gone():
            self.waiting_since = None
            self.on_error(self._lost_sentence(f"not back after {waited:.0f} s: {problem}"))

    def _drain(self) -> None:
        if self.converter is not None:
            self._deliver(self.chunker.push(self.converter.flush()))
            self.converter = None
        last = self.chunker.flush()
        if last is not None:
            self.on_frame(last)

    def _block(self, arrival: float, data: npt.NDArray[np.float32]) -> None:
        assert self.converter is not None and self.src.rate is not None
        if not self.got_block:
            self._place(arrival - len(data) / self.src.rate)
        self.got_block = True
        self.quiet = 0.0
        self.last_step = time.monotonic()
        self._deliver(self.chunker.push(self.converter.process(data)))
        if self.silence is not None and self.silence.feed(data):
            self.watch_silence = False
            self.src._warn(silence_warning(self.src.name, loopback=self.loopback))

    def _place(self, first_sample: float) -> None:
        """Put a (re)opened stream's first frame at its wall-clock position."""
        clock = self.src._clock
        if not clock.started:
            clock.start(first_sample)
        t = (first_sample - clock.to_counter(0.0)) * clock.speed
        self.chunker.skip_to(max(t, 0.0))

    def _deliver(self, frames: list[AudioFrame]) -> None:
        for frame in frames:
            self.on_frame(frame)

    def _check_overflows(self) -> None:
        count = self.src._overflows
        if count == self.seen_overflows:
            return
        now = time.monotonic()
        if now - self.last_overflow_report > OVERFLOW_BURST:
            self.on_error(f"Audio input '{self.src.name}' overflowed: some audio was lost "
                          f"({count} block(s) so far). The computer is too busy to keep up; "
                          f"close other programs or use a smaller ASR model.")
        self.last_overflow_report = now
        self.seen_overflows = count
