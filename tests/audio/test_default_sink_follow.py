"""The speakers' monitor follows the default sink; a lost PulseAudio device is waited for.

Headphones plugged in mid-interview make another sink the default: capture must move to
that sink's monitor without ending the session.  A device that goes away while the sound
server lives (a Bluetooth headset dropping out, a sink gone over a suspend) is a warning
and capture resumes when it comes back; one that stays away past the grace is an error.

Real PulseAudio, real PortAudio: a private daemon (devtools/pulse.py) with two null sinks,
``decoy`` (the default) and ``vsink``; the capture runs in a child with its environment
(tests/audio/test_device.py says why), reporting frames, warnings and errors as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE
from devtools.pulse import PulseDaemon
from tests.audio.test_device import Capture, child_capture, needs_pulse
from tests.patience import NEVER_S

pytestmark = [pytest.mark.pulse, needs_pulse]

LOUD_RMS = 1000.0
"""A frame of the test tone (amplitude 8000, rms ~5700) is far above this; a null sink's
monitor with nothing playing is exact zeros."""


def _child_main(spec: str, grace: float | None = None) -> None:
    """Runs in the child: one DeviceSource on ``spec``; frames (with their energy and the
    source's name), warnings and errors as JSON lines; a summary when stdin closes."""
    from app.audio import device
    from app.audio.device import DeviceSource
    from app.core.clock import SessionClock

    if grace is not None:
        device.RESUME_GRACE = grace
    lock = threading.Lock()

    def emit(obj: dict[str, Any]) -> None:
        with lock:
            sys.stdout.write(json.dumps({**obj, "src": 0, "at": time.monotonic()}) + "\n")
            sys.stdout.flush()

    source = DeviceSource(spec, SessionClock(), kind="loopback")

    def on_frame(frame: Any) -> None:
        rms = float(np.sqrt(np.mean(frame.samples.astype(np.float64) ** 2)))
        emit({"t": frame.t, "rms": rms, "name": source.name})

    source.start(on_frame, lambda m: emit({"error": m}), lambda m: emit({"warning": m}))
    sys.stdin.read()
    source.stop()
    emit({"done": True, "followed": source.followed, "reconnects": source.reconnects,
          "name": source.name})


def _capture(daemon: PulseDaemon, spec: str, grace: float | None = None) -> Any:
    return child_capture(daemon, f"from tests.audio.test_default_sink_follow import _child_main; "
                                 f"_child_main({spec!r}, {grace!r})")




def _tone(path: Path, seconds: float) -> Path:
    """440 Hz at 16 kHz, loud: unmistakable on a monitor of silence."""
    t = np.arange(int(SAMPLE_RATE * seconds)) / SAMPLE_RATE
    samples = (8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(samples.tobytes())
    return path


@pytest.fixture
def tone(tmp_path: Path) -> Path:
    return _tone(tmp_path / "tone.wav", 0.5)


@pytest.fixture
def call(tmp_path: Path) -> Path:
    """The interviewer on a call: long enough to outlast a switch on a busy machine."""
    return _tone(tmp_path / "call.wav", NEVER_S)


def _warnings(cap: Capture) -> list[str]:
    with cap.cond:
        return [x["warning"] for x in cap.lines if "warning" in x]


def _loud_after(cap: Capture, count: int) -> list[dict[str, Any]]:
    return [f for f in cap.frames[count:] if f["rms"] > LOUD_RMS]


def _play_until_heard(pulse: PulseDaemon, cap: Capture, tone: Path, sink: str) -> None:
    """Play the tone into ``sink`` until the capture hears it (or patience runs out)."""
    deadline = time.monotonic() + NEVER_S
    while time.monotonic() < deadline:
        count = len(cap.frames)
        pulse.play(tone, sink=sink)
        time.sleep(0.3)  # the monitor's last blocks
        if _loud_after(cap, count):
            return
    raise AssertionError(f"the tone played into {sink} never reached the capture: "
                         f"{cap.lines[-3:]}")


def test_the_speakers_monitor_follows_the_default_sink(pulse: PulseDaemon, call: Path) -> None:
    """The call plays into ``vsink`` (the headphones) all along; capture hears it only once
    ``vsink`` is the default, and then from the same source, on the same clock."""
    from app.audio.pulse import SPEAKERS_MONITOR

    with _capture(pulse, SPEAKERS_MONITOR) as cap:
        cap.wait_for("the stream to deliver", lambda: len(cap.frames) >= 10)
        assert cap.frames[-1]["name"] == "pulse:decoy.monitor"
        # A call app asks for a low latency (20 ms): the sink then renders in small blocks.
        player = subprocess.Popen(["paplay", "--latency-msec=20", "--device=vsink", str(call)],
                                  env=pulse.env)
        try:
            # 3 s: an idle null sink renders 2 s ahead, so the call's low latency holds only
            # after that (a real sink already playing the call is there from the start).
            count = len(cap.frames)
            cap.wait_for("frames while the call plays", lambda: len(cap.frames) >= count + 100)
            assert not _loud_after(cap, 0)  # not the default yet: not heard
            switched = time.monotonic()
            pulse.pactl("set-default-sink", "vsink")  # headphones plugged in
            cap.wait_for("the call heard on the new default's monitor",
                         lambda: bool(_loud_after(cap, count)))
        finally:
            player.kill()
        summary = cap.finish()
    heard = _loud_after(cap, count)[0]
    print(f"the call heard {heard['at'] - switched:.2f} s after the switch")
    assert heard["name"] == "pulse:vsink.monitor"
    assert cap.errors == [] and _warnings(cap) == []  # following is not a loss
    assert summary["followed"] == 1 and summary["reconnects"] == 0
    ts = np.array([f["t"] for f in cap.frames])
    assert np.all(np.diff(ts) >= FRAME_SAMPLES / SAMPLE_RATE - 1e-9)  # one clock, never back


def test_a_sink_that_goes_and_comes_back_is_waited_for(pulse: PulseDaemon, tone: Path) -> None:
    """A Bluetooth headset dropping out and reconnecting, the sound server alive meanwhile."""
    with _capture(pulse, "pulse:vsink.monitor") as cap:
        cap.wait_for("the stream to deliver", lambda: len(cap.frames) >= 10)
        pulse.remove_sink("vsink")
        cap.wait_for("the loss said", lambda: bool(_warnings(cap)))
        time.sleep(1.5)  # away for a while; not for the grace
        pulse.add_sink("vsink")
        count = len(cap.frames)
        cap.wait_for("frames to resume", lambda: len(cap.frames) >= count + 10)
        _play_until_heard(pulse, cap, tone, "vsink")
        summary = cap.finish()
    assert cap.errors == []  # a headless run would have ended on an error
    lost, back = _warnings(cap)
    assert "pulse:vsink.monitor" in lost and "waiting up to" in lost and "back" in back
    assert summary["reconnects"] == 1


def test_a_sink_gone_past_the_grace_is_an_error(pulse: PulseDaemon) -> None:
    with _capture(pulse, "pulse:vsink.monitor", grace=1.0) as cap:
        cap.wait_for("the stream to deliver", lambda: len(cap.frames) >= 10)
        pulse.remove_sink("vsink")
        cap.wait_for("the error", lambda: bool(cap.errors))
        cap.finish()
    assert len(_warnings(cap)) == 1 and len(cap.errors) == 1
    assert "pulse:vsink.monitor" in cap.errors[0] and "not back after" in cap.errors[0]


def test_a_dead_sound_server_is_an_error_at_once_even_following_the_default(
        pulse: PulseDaemon) -> None:
    """Nothing comes back by waiting: a headless run must end (issue 44 item 6)."""
    from app.audio.pulse import SPEAKERS_MONITOR

    with _capture(pulse, SPEAKERS_MONITOR) as cap:
        cap.wait_for("the stream to deliver", lambda: len(cap.frames) >= 10)
        pulse.kill()
        cap.wait_for("the error", lambda: bool(cap.errors))
        cap.finish()
    assert _warnings(cap) == []
    assert "pulse:decoy.monitor" in cap.errors[0] and "was lost" in cap.errors[0]
