"""Linux: PulseAudio/PipeWire sources and monitors, and which sink is the default.

Monitors (what a sink plays) are reached through the ALSA ``pulse`` device with
``PULSE_SOURCE`` set while the stream opens (:func:`pulse_source_env`).

"The speakers' monitor" is the monitor of the *default* sink, and the default changes
mid-interview: headphones plugged in, a Bluetooth headset connecting or dropping out.
PulseAudio does not move a capture stream to the new default's monitor, so the capture
reopens there itself (``app/audio/device.py``), told by :class:`DefaultSinkWatcher`.

Design notes: decision 0038.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator

from app.audio.resample import AudioError

PACTL_TIMEOUT = 2.0
"""Seconds a one-shot pactl call may take: a live server answers in milliseconds and a dead
one refuses the connection at once; this bounds only a wedged server, with room for
starting pactl on a machine kept busy."""

SPEAKERS_MONITOR = "pulse:@DEFAULT_MONITOR@"
"""The ``--device`` spec of the speakers' monitor, following the default sink (PulseAudio's
own name for "the default sink's monitor")."""

_env_lock = threading.Lock()


def _env() -> dict[str, str]:
    return {**os.environ, "LC_ALL": "C"}


def _pactl(*args: str) -> str | None:
    """pactl's output, or None when it is missing, fails or does not answer in time."""
    if not sys.platform.startswith("linux") or shutil.which("pactl") is None:
        return None
    try:
        proc = subprocess.run(["pactl", *args], capture_output=True, text=True, env=_env(),
                              timeout=PACTL_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def pulse_sources() -> list[str]:
    """PulseAudio/PipeWire source names (monitors included); [] when pactl is unavailable."""
    out = _pactl("list", "short", "sources") or ""
    return [line.split("\t")[1] for line in out.splitlines() if line.count("\t") >= 1]


def pulse_source_of(spec: str) -> str | None:
    """``"pulse:vsink.monitor"`` or ``"vsink.monitor"`` -> ``"vsink.monitor"``; else None."""
    if spec.startswith("pulse:") and len(spec) > len("pulse:"):
        return spec[len("pulse:"):]
    if spec.endswith(".monitor") and ":" not in spec:
        return spec
    return None


@contextlib.contextmanager
def pulse_source_env(source: str | None) -> Iterator[None]:
    """Set ``PULSE_SOURCE`` only while a stream is being opened.

    The ALSA ``pulse`` plugin reads it when the PCM is opened, so scoping it keeps other
    streams of this process (say, a microphone also on ``pulse``) on their own source.
    """
    if source is None:
        yield
        return
    with _env_lock:
        old = os.environ.get("PULSE_SOURCE")
        os.environ["PULSE_SOURCE"] = source
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("PULSE_SOURCE", None)
            else:
                os.environ["PULSE_SOURCE"] = old


def default_sink() -> str | None:
    """The default sink's name now; None when there is no server (or no pactl)."""
    info = _pactl("info")
    for line in (info or "").splitlines():
        if line.startswith("Default Sink:"):
            return line.split(":", 1)[1].strip() or None
    return None


def speakers_monitor() -> str:
    """The default sink's monitor now (what the speakers play), or AudioError saying why not."""
    sink = default_sink()
    if sink is None:
        raise AudioError("Cannot find what the speakers play: no PulseAudio/PipeWire default "
                         "sink (is pactl installed?). Pick a monitor with --device "
                         "pulse:NAME.monitor (see --list-devices).")
    return f"{sink}.monitor"


def server_gone() -> bool:
    """The sound server did not answer pactl (within :data:`PACTL_TIMEOUT`).  False where
    there is no pactl to ask (not Linux, or not installed): gone is said only when known."""
    if not sys.platform.startswith("linux") or shutil.which("pactl") is None:
        return False
    return _pactl("info") is None


class DefaultSinkWatcher:
    """The default sink, kept current by ``pactl subscribe`` (see the module docstring).

    ``sink`` is read by the capture's worker thread each turn of its loop; it stays what it
    was when the server goes away (the subscription then ends).
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None
        self._sink: str | None = None
        self._lock = threading.Lock()

    @property
    def sink(self) -> str | None:
        with self._lock:
            return self._sink

    def start(self) -> None:
        """Subscribe first, then read the default: a change in between is not missed."""
        try:
            self._proc = subprocess.Popen(["pactl", "subscribe"], stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                          text=True, env=_env())
        except OSError:
            return
        with self._lock:
            self._sink = default_sink()
        threading.Thread(target=self._read, args=(self._proc,), name="pulse-default-sink",
                         daemon=True).start()

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(subprocess.SubprocessError):
            proc.wait(PACTL_TIMEOUT)

    def _read(self, proc: subprocess.Popen[str]) -> None:
        """One line per event; only the server's ("Event 'change' on server #N") can change
        the default.  The output ends when the server (or :meth:`stop`) ends pactl."""
        assert proc.stdout is not None
        for line in proc.stdout:
            if " on server" in line:
                sink = default_sink()
                with self._lock:
                    self._sink = sink if sink is not None else self._sink
