"""DeviceSource through real PortAudio, against a private PulseAudio daemon.

Each capture runs in a child process: PortAudio enumerates ALSA devices (including
``pulse``) when it initialises, so the child must start with the daemon's environment.
The child streams one JSON line per frame/error to stdout and stops when its stdin
closes; the test plays speech into the daemon's null sink and reads what came back.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.audio import AudioError
from app.audio.device import pulse_source_of
from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE
from tests.speech import have_espeak, read_wav, synth

ROOT = Path(__file__).resolve().parents[1]
SPEC = "pulse:vsink.monitor"

needs_pulse = pytest.mark.skipif(
    shutil.which("pulseaudio") is None or shutil.which("paplay") is None,
    reason="pulseaudio/paplay not installed (apt-get install pulseaudio pulseaudio-utils)",
)
needs_espeak = pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")


# --- the private daemon ----------------------------------------------------------------


class PulseDaemon:
    """A user-mode pulseaudio with a decoy sink (the default) and ``vsink``.

    The decoy is the default source, so hearing speech on ``vsink.monitor`` proves that
    PULSE_SOURCE reached the ALSA plugin rather than the default being used.
    """

    def __init__(self, runtime: Path) -> None:
        self.runtime = runtime
        client_conf = runtime / "client.conf"
        client_conf.write_text("autospawn = no\n")  # a killed daemon must stay dead
        self.env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "HOME": str(runtime),
                    "PULSE_CLIENTCONFIG": str(client_conf)}
        for key in ("PULSE_SERVER", "PULSE_SOURCE", "PULSE_SINK"):
            self.env.pop(key, None)

    @property
    def pid_file(self) -> Path:
        return self.runtime / "pulse" / "pid"

    def start(self) -> None:
        subprocess.run(
            ["pulseaudio", "-n", "--daemonize=yes", "--system=false", "--disallow-exit",
             "--exit-idle-time=-1", "--disable-shm=yes", "--log-target=stderr",
             "--load=module-native-protocol-unix",
             "--load=module-null-sink sink_name=decoy",
             "--load=module-null-sink sink_name=vsink"],
            env=self.env, check=True, timeout=15, capture_output=True,
        )
        self.pactl("set-default-sink", "decoy")
        self.pactl("set-default-source", "decoy.monitor")

    def pactl(self, *args: str) -> str:
        deadline = time.monotonic() + 5
        while True:
            proc = subprocess.run(["pactl", *args], env=self.env, capture_output=True,
                                  text=True, timeout=5)
            if proc.returncode == 0 or time.monotonic() > deadline:
                assert proc.returncode == 0, proc.stderr
                return proc.stdout
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL, like a crash or an unplugged device: no goodbye to the clients."""
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            pid = int(self.pid_file.read_text().strip())
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid)
        # Stale files would make the next daemon think one is still running.
        for stale in (self.pid_file, self.runtime / "pulse" / "native"):
            stale.unlink(missing_ok=True)

    def play(self, clip: Path) -> None:
        subprocess.run(["paplay", "--device=vsink", str(clip)], env=self.env, check=True,
                       timeout=30)


def _wait_gone(pid: int, timeout: float = 5.0) -> None:
    """Gone or a zombie (in containers nobody may reap the daemonized process)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.02)


@pytest.fixture
def pulse(tmp_path: Path) -> Iterator[PulseDaemon]:
    daemon = PulseDaemon(tmp_path)
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.kill()


# --- the capturing child ---------------------------------------------------------------


def _child_main(spec: str) -> None:
    """Runs in the child: capture ``spec`` and report every frame and error as JSON."""
    from app.audio.device import DeviceSource
    from app.clock import SessionClock

    lock = threading.Lock()

    def emit(obj: dict[str, Any]) -> None:
        with lock:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()

    def on_frame(frame: Any) -> None:
        s = frame.samples
        emit({"t": frame.t, "n": int(s.shape[0]), "ndim": s.ndim, "dtype": str(s.dtype),
              "rms": float(np.sqrt(np.mean(s.astype(np.float64) ** 2))),
              "at": time.monotonic()})

    source = DeviceSource(spec, SessionClock(), kind="loopback")
    source.start(on_frame, lambda message: emit({"error": message, "at": time.monotonic()}))
    sys.stdin.read()  # until the test closes our stdin
    source.stop()
    emit({"done": True, "overflows": source.overflows, "rate": source.rate,
          "channels": source.channels, "reconnects": source.reconnects})


@dataclass
class Capture:
    proc: subprocess.Popen[str]
    lines: list[dict[str, Any]] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)

    @property
    def frames(self) -> list[dict[str, Any]]:
        with self.cond:
            return [x for x in self.lines if "t" in x]

    @property
    def errors(self) -> list[str]:
        with self.cond:
            return [x["error"] for x in self.lines if "error" in x]

    def wait_for(self, what: str, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"timed out waiting for {what}: {self.lines[-3:]} "
                                         f"stderr: {self._stderr()}")
                self.cond.wait(min(left, 0.1))

    def finish(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        self.wait_for("the summary", lambda: any("done" in x for x in self.lines), 5)
        return next(x for x in self.lines if "done" in x)

    def _stderr(self) -> str:
        return "" if self.proc.stderr is None else "(see child stderr)"


@contextlib.contextmanager
def capture(daemon: PulseDaemon, spec: str = SPEC) -> Iterator[Capture]:
    proc = subprocess.Popen(
        [sys.executable, "-c", f"from tests.test_audio_device import _child_main; "
                               f"_child_main({spec!r})"],
        cwd=ROOT, env=daemon.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )
    cap = Capture(proc)

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with cap.cond:
                cap.lines.append(json.loads(line))
                cap.cond.notify_all()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield cap
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def _envelope(samples: np.ndarray) -> np.ndarray:
    n = len(samples) // FRAME_SAMPLES
    frames = samples[: n * FRAME_SAMPLES].astype(np.float64).reshape(n, FRAME_SAMPLES)
    return np.sqrt(np.mean(frames**2, axis=1))


def _best_correlation(recorded: np.ndarray, clip: np.ndarray) -> float:
    """Energy envelopes compared at every lag: the capture starts before the playback."""
    best = -1.0
    for lag in range(len(recorded) - len(clip) + 1):
        window = recorded[lag : lag + len(clip)]
        if window.std() > 0:
            best = max(best, float(np.corrcoef(window, clip)[0, 1]))
    return best


def _assert_continuous(frames: list[dict[str, Any]]) -> None:
    ts = np.array([f["t"] for f in frames])
    np.testing.assert_allclose(np.diff(ts), FRAME_SAMPLES / SAMPLE_RATE, atol=1e-9)
    assert ts[0] == 0.0


# --- tests -----------------------------------------------------------------------------


def test_monitor_specs_select_the_pulse_device() -> None:
    assert pulse_source_of("pulse:vsink.monitor") == "vsink.monitor"
    assert pulse_source_of("alsa_output.pci.analog-stereo.monitor") == (
        "alsa_output.pci.analog-stereo.monitor")
    assert pulse_source_of("pulse:") is None
    assert pulse_source_of("USB Microphone") is None
    assert pulse_source_of("hw:1,0") is None


def test_missing_device_names_it_and_the_fix() -> None:
    from app.audio.device import DeviceSource, format_device_list, list_devices
    from app.clock import SessionClock

    with pytest.raises(AudioError) as info:
        DeviceSource("No Such Interview Mic 9000", SessionClock())
    message = str(info.value)
    assert "'No Such Interview Mic 9000' not found" in message
    assert "--list-devices" in message and "--device" in message
    with pytest.raises(AudioError, match="#4242 does not exist"):
        DeviceSource(4242, SessionClock())
    assert all(d.max_input_channels > 0 for d in list_devices())
    assert format_device_list().startswith("Audio inputs")


@pytest.mark.pulse
@needs_pulse
@needs_espeak
def test_captures_a_pulse_monitor_at_16khz_with_the_speech_in_it(pulse: PulseDaemon) -> None:
    clip = synth("Tell me about yourself.", lead_s=0.3, tail_s=0.3)
    with capture(pulse) as cap:
        cap.wait_for("the stream to deliver", lambda: len(cap.frames) >= 10)
        played_from = cap.frames[-1]["t"]
        pulse.play(clip)
        time.sleep(0.3)
        summary = cap.finish()
    frames = cap.frames
    assert cap.errors == []
    assert summary["overflows"] == 0 and summary["rate"] in (44100, 48000)
    assert summary["channels"] == 1  # opened mono: PulseAudio downmixes for us
    assert all(f["n"] == FRAME_SAMPLES and f["ndim"] == 1 and f["dtype"] == "int16"
               for f in frames)
    _assert_continuous(frames)
    rms = np.array([f["rms"] for f in frames])
    before = rms[: int(played_from / 0.03)]
    assert before.max() < 10  # a null sink's monitor is digital silence until we play
    clip_env = _envelope(read_wav(clip))
    assert rms.max() > 500
    assert _best_correlation(rms, clip_env) > 0.9
    # Delivered close to real time: the last frame arrived ~when its audio was captured.
    spans = frames[-1]["at"] - frames[0]["at"]
    assert abs(spans - (frames[-1]["t"] - frames[0]["t"])) < 0.25


@pytest.mark.pulse
@needs_pulse
def test_unplug_is_reported_and_capture_resumes_after_a_gap(pulse: PulseDaemon) -> None:
    with capture(pulse) as cap:
        cap.wait_for("the stream to deliver", lambda: len(cap.frames) >= 10)
        pulse.kill()
        killed_at = time.monotonic()
        cap.wait_for("the error", lambda: bool(cap.errors), timeout=5)
        assert time.monotonic() - killed_at < 3
        time.sleep(1.5)  # the device stays away for a while; the source keeps retrying
        count = len(cap.frames)
        pulse.start()
        cap.wait_for("frames to resume", lambda: len(cap.frames) >= count + 10, timeout=10)
        summary = cap.finish()
    message = cap.errors[0]
    assert SPEC in message and "retrying" in message and "--list-devices" in message
    assert len(cap.errors) == 1  # one report per outage, not one per retry
    assert summary["reconnects"] == 1 and summary["overflows"] == 0
    ts = np.array([f["t"] for f in cap.frames])
    steps = np.diff(ts)
    assert np.all(steps > 0) and np.allclose(np.round(ts / 0.03) * 0.03, ts, atol=1e-9)
    gaps = steps[steps > 0.031]
    assert len(gaps) == 1 and gaps[0] > 1.5  # time jumped by the outage, not stitched over
    resumed = [f for f in cap.frames if f["t"] > ts[np.argmax(steps)]]
    # Frames after the gap are placed at their wall-clock position on the session clock.
    offsets = [f["at"] - f["t"] for f in resumed]
    first_offsets = [f["at"] - f["t"] for f in cap.frames[:10]]
    assert abs(np.median(offsets) - np.median(first_offsets)) < 0.2


@pytest.mark.pulse
@needs_pulse
def test_a_paused_process_is_not_mistaken_for_an_unplug(pulse: PulseDaemon) -> None:
    """Like a laptop suspend: the stall watchdog must not fire for time we did not run."""
    with capture(pulse) as cap:
        cap.wait_for("the stream to deliver", lambda: len(cap.frames) >= 10)
        os.kill(cap.proc.pid, signal.SIGSTOP)
        time.sleep(3.0)  # longer than the stall timeout
        os.kill(cap.proc.pid, signal.SIGCONT)
        count = len(cap.frames)
        cap.wait_for("frames after the pause", lambda: len(cap.frames) >= count + 20)
        summary = cap.finish()
    assert cap.errors == [] and summary["reconnects"] == 0
    _assert_continuous(cap.frames)  # PulseAudio buffered the pause: nothing was lost


@pytest.mark.pulse
@needs_pulse
def test_unknown_monitor_is_refused_before_starting(pulse: PulseDaemon) -> None:
    code = ("from app.audio import open_source\n"
            "from app.clock import SessionClock\n"
            "try:\n"
            "    open_source('pulse:nosuchsink.monitor', SessionClock())\n"
            "except ValueError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=pulse.env,
                         capture_output=True, text=True, timeout=30).stdout
    assert "'nosuchsink.monitor' not found" in out and "vsink.monitor" in out
