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
from app.audio.device import STALL_TIMEOUT, pulse_source_of
from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE
from devtools.pulse import PulseDaemon
from tests.patience import NEVER_S
from tests.speech import read_wav, synth

ROOT = Path(__file__).resolve().parents[2]
SPEC = "pulse:vsink.monitor"

needs_pulse = pytest.mark.skipif(
    shutil.which("pulseaudio") is None or shutil.which("paplay") is None,
    reason="pulseaudio/paplay not installed (apt-get install pulseaudio pulseaudio-utils)",
)
needs_espeak = pytest.mark.usefixtures("speech")  # fails on Linux CI without espeak-ng
STAGGER_S = 1.0
"""The second of two captures starts this long after the first delivered (_child_main)."""
OUTAGE_S = 1.5
"""How long the unplug test keeps the sound server away (at least: a busy machine only
makes it longer)."""


# --- the private daemon (devtools/pulse.py) -------------------------------------------




# --- the capturing child ---------------------------------------------------------------


def _child_main(*specs: str, echo: bool = False, stagger: float = 0.0) -> None:
    """Runs in the child: capture every spec at once (one DeviceSource each, on one session
    clock, as the app does for the interviewer and the candidate) and report every frame
    and error as JSON, tagged with the spec's position ``src``.  With ``echo`` the first
    source feeds an EchoGate and the second's frames carry its verdict, both from their
    own audio threads, as in the app.  With ``stagger`` each source starts that many
    seconds after the one before delivered its first frame (a microphone opened while the
    interviewer's device is already live)."""
    from app.audio.device import DeviceSource
    from app.audio.echo import EchoGate
    from app.core.clock import SessionClock

    gate = EchoGate() if echo else None

    lock = threading.Lock()

    def emit(obj: dict[str, Any]) -> None:
        with lock:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()

    live = [threading.Event() for _ in specs]

    def frame_handler(src: int) -> Callable[[Any], None]:
        def on_frame(frame: Any) -> None:
            live[src].set()
            s = frame.samples
            line = {"src": src, "t": frame.t, "n": int(s.shape[0]), "ndim": s.ndim,
                    "dtype": str(s.dtype), "rms": float(np.sqrt(np.mean(s.astype(np.float64) ** 2))),
                    "at": time.monotonic()}
            if gate is not None and src == 0:
                gate.feed_reference(frame)
            elif gate is not None:
                verdict = gate.decide(frame)
                line.update(echo=verdict.echo, lag_ms=verdict.lag_ms, corr=verdict.correlation)
            emit(line)
        return on_frame

    clock = SessionClock()
    sources = [DeviceSource(spec, clock, kind="loopback") for spec in specs]
    for src, source in enumerate(sources):
        if src and stagger:
            live[src - 1].wait(30)
            time.sleep(stagger)
        source.start(frame_handler(src), lambda message, src=src: emit(
            {"src": src, "error": message, "at": time.monotonic()}))
    sys.stdin.read()  # until the test closes our stdin
    for src, source in enumerate(sources):
        source.stop()
        emit({"src": src, "done": True, "overflows": source.overflows, "rate": source.rate,
              "channels": source.channels, "reconnects": source.reconnects})


@dataclass
class Capture:
    proc: subprocess.Popen[str]
    lines: list[dict[str, Any]] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)
    eof: bool = False
    """The child's stdout is read to its end: no line will come any more."""

    @property
    def frames(self) -> list[dict[str, Any]]:
        return self.frames_of(0)

    def frames_of(self, src: int) -> list[dict[str, Any]]:
        with self.cond:
            return [x for x in self.lines if "t" in x and x["src"] == src]

    @property
    def errors(self) -> list[str]:
        with self.cond:
            return [x["error"] for x in self.lines if "error" in x]

    def wait_for(self, what: str, predicate: Callable[[], bool], timeout: float = NEVER_S) -> None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0 or self.eof:  # (not "has exited": its last lines may be unread)
                    raise AssertionError(f"timed out waiting for {what}: {self.lines[-3:]} "
                                         f"stderr: {self._stderr()}")
                self.cond.wait(min(left, 0.1))

    def finish(self, sources: int = 1) -> dict[str, Any]:
        """Stop the child; the first source's summary (all of them: ``summaries``)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=NEVER_S)
        self.wait_for("the summaries", lambda: len(self.summaries) >= sources)
        return self.summaries[0]

    @property
    def summaries(self) -> list[dict[str, Any]]:
        with self.cond:
            return [x for x in self.lines if "done" in x]

    def _stderr(self) -> str:
        return "" if self.proc.stderr is None else "(see child stderr)"


def capture(daemon: PulseDaemon, *specs: str, echo: bool = False,
            stagger: float = 0.0) -> contextlib.AbstractContextManager[Capture]:
    args = ", ".join(repr(spec) for spec in specs or (SPEC,)) + (", echo=True" if echo else "")
    args += f", stagger={stagger!r}" if stagger else ""
    return child_capture(daemon, f"from tests.audio.test_device import _child_main; _child_main({args})")


@contextlib.contextmanager
def child_capture(daemon: PulseDaemon, statement: str) -> Iterator[Capture]:
    """Run ``statement`` (a capturing child's main) with the daemon's environment and read
    its JSON lines as they come; the child is stopped, if still running, at the end."""
    proc = subprocess.Popen(
        [sys.executable, "-c", statement],
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
        with cap.cond:
            cap.eof = True
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


def _loud_span(envelope: np.ndarray) -> int:
    """Frames from the first to the last one above a tenth of the loudest."""
    loud = np.flatnonzero(envelope > envelope.max() / 10)
    return int(loud[-1] - loud[0])


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
    from app.core.clock import SessionClock

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
    # Session time is audio time: the clip lasts as long in the capture as in its file (to a
    # frame at each end), however late this machine delivered the frames.
    assert abs(_loud_span(rms) - _loud_span(clip_env)) <= 2
    # Delivered live, as captured, not in one burst: a busy machine may deliver the first
    # or the last frame late, but not by half the capture.
    spans = frames[-1]["at"] - frames[0]["at"]
    assert spans > (frames[-1]["t"] - frames[0]["t"]) / 2


@pytest.mark.pulse
@needs_pulse
def test_unplug_is_reported_and_capture_resumes_after_a_gap(pulse: PulseDaemon) -> None:
    with capture(pulse) as cap:
        cap.wait_for("the stream to deliver", lambda: len(cap.frames) >= 10)
        pulse.kill()
        cap.wait_for("the error", lambda: bool(cap.errors), timeout=NEVER_S)
        time.sleep(OUTAGE_S)  # the device stays away for a while; the source keeps retrying
        count = len(cap.frames)
        pulse.start()
        cap.wait_for("frames to resume", lambda: len(cap.frames) >= count + 10, timeout=NEVER_S)
        summary = cap.finish()
    message = cap.errors[0]
    assert SPEC in message and "retrying" in message and "--list-devices" in message
    # Noticed by the stream stopping or by the stall watchdog, not by a wait for a first
    # block (which a stream that had delivered is not in) or for a close to return.
    assert ("(the stream stopped)" in message
            or f"(no audio for {STALL_TIMEOUT:g} s)" in message), message
    assert len(cap.errors) == 1  # one report per outage, not one per retry
    assert summary["reconnects"] == 1 and summary["overflows"] == 0
    ts = np.array([f["t"] for f in cap.frames])
    steps = np.diff(ts)
    assert np.all(steps > 0) and np.allclose(np.round(ts / 0.03) * 0.03, ts, atol=1e-9)
    gaps = steps[steps > 0.031]
    assert len(gaps) == 1 and gaps[0] > OUTAGE_S  # time jumped by the outage, not stitched over
    resumed = [f for f in cap.frames if f["t"] > ts[np.argmax(steps)]]
    # Frames after the gap are placed at their wall-clock position on the session clock:
    # delivered as long after their session time as before it.  Stitched over, they would
    # be the whole outage (> OUTAGE_S) later; half of it is far above a busy machine's lag.
    offsets = [f["at"] - f["t"] for f in resumed]
    first_offsets = [f["at"] - f["t"] for f in cap.frames[:10]]
    assert abs(np.median(offsets) - np.median(first_offsets)) < OUTAGE_S / 2


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
            "from app.core.clock import SessionClock\n"
            "try:\n"
            "    open_source('pulse:nosuchsink.monitor', SessionClock())\n"
            "except ValueError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=pulse.env,
                         capture_output=True, text=True, timeout=30).stdout
    assert "'nosuchsink.monitor' not found" in out and "vsink.monitor" in out


@pytest.mark.pulse
@needs_pulse
@needs_espeak
def test_two_monitors_captured_at_once_each_hear_their_own_clip(pulse: PulseDaemon) -> None:
    """The interviewer's monitor and a "microphone" (a second null sink's monitor) in one
    process, on one session clock: each stream carries its own clip, at its own time."""
    pulse.pactl("load-module", "module-null-sink", "sink_name=micsink")
    question = synth("What is the difference between a process and a thread?", lead_s=0.2,
                     tail_s=0.2)
    answer = synth("Threads share memory.", "en-us+f3", lead_s=0.2, tail_s=0.2)
    answer_delay = 1.0  # the answer starts while the question is still playing
    with capture(pulse, SPEC, "pulse:micsink.monitor", stagger=STAGGER_S) as cap:
        cap.wait_for("both streams to deliver",
                     lambda: len(cap.frames_of(0)) >= 10 and len(cap.frames_of(1)) >= 10)
        played = threading.Thread(target=pulse.play, args=(question,))
        played.start()
        time.sleep(answer_delay)
        pulse.play(answer, sink="micsink")
        played.join(timeout=30)
        time.sleep(0.3)
        cap.finish(sources=2)
    assert cap.errors == [] and all(s["overflows"] == 0 for s in cap.summaries)
    interviewer, candidate = cap.frames_of(0), cap.frames_of(1)
    for frames in (interviewer, candidate):
        assert all(f["n"] == FRAME_SAMPLES and f["dtype"] == "int16" for f in frames)
        steps = np.diff([f["t"] for f in frames])
        np.testing.assert_allclose(steps, FRAME_SAMPLES / SAMPLE_RATE, atol=1e-6)
    q_rms = np.array([f["rms"] for f in interviewer])
    a_rms = np.array([f["rms"] for f in candidate])
    q_env, a_env = _envelope(read_wav(question)), _envelope(read_wav(answer))
    # Each stream has its own clip's shape, far better than the other clip's.
    own_q, own_a = _best_correlation(q_rms, q_env), _best_correlation(a_rms, a_env)
    assert own_q > 0.9 and own_a > 0.9
    assert _best_correlation(q_rms, a_env) < own_q - 0.1
    assert _best_correlation(a_rms, q_env) < own_a - 0.1
    # One session clock: the microphone, opened STAGGER_S after the interviewer's device was
    # live, starts at its wall-clock place, and each stream's least delay from a frame's end
    # to its delivery is the same (on a clock of its own it would start at 0 and be off by
    # all of STAGGER_S).  The least of ~100 frames: a busy machine delays many, not all.
    assert interviewer[0]["t"] == 0.0 and candidate[0]["t"] > STAGGER_S / 2
    least = [min(f["at"] - f["t"] for f in frames) for frames in (interviewer, candidate)]
    assert abs(least[1] - least[0]) < STAGGER_S / 2, least
    loud = 500.0
    q_on = next(f["t"] for f in interviewer if f["rms"] > loud)
    a_on = next(f["t"] for f in candidate if f["rms"] > loud)
    assert q_on < a_on  # in the order they were played (how far apart is paplay's start-up)
    # No leak: the microphone stream is digital silence while only the question plays.
    assert max(f["rms"] for f in candidate if q_on <= f["t"] < a_on - 0.2) < 10


@pytest.mark.pulse
@needs_pulse
@needs_espeak
def test_echo_gate_on_two_real_capture_threads(pulse: PulseDaemon, tmp_path: Path) -> None:
    """The question plays to the interviewer's sink and, 40 ms later at -10 dB with room
    reflections, to the "microphone" sink: the gate (fed from both audio threads, frames
    stamped by two devices on one clock) calls the microphone's speech echo; the
    candidate's own answer on the microphone, later, is not."""
    from tests.speech import write_wav

    pulse.pactl("load-module", "module-null-sink", "sink_name=micsink")
    question = synth("What is the difference between a process and a thread?", lead_s=0.2,
                     tail_s=0.2)
    answer = synth("I would use a thread when the work shares memory.", "en-us+f3",
                   lead_s=0.2, tail_s=0.2)
    q = read_wav(question).astype(np.float64)

    def delayed(x: np.ndarray, ms: float, db: float) -> np.ndarray:
        d = int(SAMPLE_RATE * ms / 1000)
        return np.concatenate([np.zeros(d), x])[: len(x)] * 10 ** (db / 20)

    direct = delayed(q, 40, -10)
    heard = direct + delayed(direct, 30, -6) + delayed(direct, 70, -12)
    echo_clip = tmp_path / "echo.wav"
    write_wav(echo_clip, np.clip(heard, -32768, 32767))
    with capture(pulse, SPEC, "pulse:micsink.monitor", echo=True) as cap:
        cap.wait_for("both streams to deliver",
                     lambda: len(cap.frames_of(0)) >= 20 and len(cap.frames_of(1)) >= 20)
        speaker = subprocess.Popen(["paplay", "--device=micsink", str(echo_clip)],
                                   env=pulse.env)
        pulse.play(question)
        speaker.wait(timeout=30)
        answer_from = cap.frames_of(1)[-1]["t"] + 0.5
        time.sleep(0.5)
        pulse.play(answer, sink="micsink")
        time.sleep(0.3)
        cap.finish(sources=2)
    assert cap.errors == []
    mic = cap.frames_of(1)
    echo_part = [f for f in mic if f["t"] < answer_from and f["rms"] > 200]
    own_part = [f for f in mic if f["t"] >= answer_from and f["rms"] > 200]
    assert len(echo_part) > 30 and len(own_part) > 30
    onset = echo_part[0]["t"]
    settled = [f["echo"] for f in echo_part if f["t"] >= onset + 0.3]
    share = sum(settled) / len(settled)
    print(f"echo frames caught on real devices: {share:.2f}")
    assert share >= 0.85, share
    assert not any(f["echo"] for f in own_part)  # the interviewer was silent by then
