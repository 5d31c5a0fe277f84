"""The digital-silence detector behind the macOS denied-microphone hint, alone and in DeviceSource."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.audio.permission import PRIVACY_PATH, ZERO_WINDOW_S, DigitalSilence, silence_message
from tests.test_audio_device import Capture, PulseDaemon, child_capture, needs_pulse

RATE = 48_000


def blocks(total_s: float, block: int, channels: int = 1,
           dtype: type[np.generic] = np.float32) -> list[np.ndarray]:
    n = int(total_s * RATE)
    return [np.zeros((min(block, n - i), channels), dtype=dtype) for i in range(0, n, block)]


@pytest.mark.parametrize("block", [128, 441, 512, 4800, 48_000])
@pytest.mark.parametrize(("channels", "dtype"), [(1, np.float32), (2, np.float32), (1, np.int16)])
def test_says_once_on_the_block_that_completes_the_window(block: int, channels: int,
                                                          dtype: type[np.generic]) -> None:
    detector = DigitalSilence(RATE)
    fed = 0
    said_at: list[int] = []
    for b in blocks(ZERO_WINDOW_S * 2, block, channels, dtype):
        fed += len(b)
        if detector.feed(b):
            said_at.append(fed)
    assert len(said_at) == 1
    needed = int(ZERO_WINDOW_S * RATE)
    assert needed <= said_at[0] < needed + block  # not before 3 s of samples, nor a block late
    assert detector.settled


def test_one_least_significant_bit_anywhere_in_the_window_is_a_signal() -> None:
    """A quiet room is not digital silence: its analog noise sets a bit now and then."""
    for where_s in (0.0, 1.5, ZERO_WINDOW_S - 0.01):
        detector = DigitalSilence(RATE)
        said = False
        for i, b in enumerate(blocks(ZERO_WINDOW_S * 2, 480)):
            if i == int(where_s * RATE / 480):
                b[7, 0] = 1 / 32768
            said = detector.feed(b) or said
        assert not said
        assert detector.settled


def test_zeros_after_a_signal_are_a_pause_not_a_denied_microphone() -> None:
    detector = DigitalSilence(RATE)
    assert not detector.feed(np.full((480, 1), 0.01, dtype=np.float32))
    assert not any(detector.feed(b) for b in blocks(ZERO_WINDOW_S * 3, 480))


def test_short_stream_says_nothing() -> None:
    detector = DigitalSilence(RATE)
    assert not any(detector.feed(b) for b in blocks(ZERO_WINDOW_S - 0.1, 480))
    assert not detector.settled


def test_only_macos_names_the_permission_and_where_to_grant_it() -> None:
    mac = silence_message("MacBook Pro Microphone", platform="darwin")
    assert "MacBook Pro Microphone" in mac and "permission to use the microphone" in mac
    assert PRIVACY_PATH in mac
    assert PRIVACY_PATH == "System Settings → Privacy & Security → Microphone"
    for other in ("win32", "linux"):
        text = silence_message("Headset", platform=other)
        assert "digital silence" in text and "Headset" in text
        assert "permission" not in text and "Privacy" not in text


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        DigitalSilence(0)


# --- wired into DeviceSource: real PortAudio on a private PulseAudio daemon -------------------


def _child_main(spec: str) -> None:
    """In the child (PortAudio must start inside the daemon's environment): capture ``spec``
    as a microphone and report frames, errors and warnings as JSON lines."""

    from app.audio.device import DeviceSource
    from app.core.clock import SessionClock

    lock = threading.Lock()

    def emit(obj: dict[str, object]) -> None:
        with lock:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()

    source = DeviceSource(spec, SessionClock(), kind="mic")
    last = [0.0]

    def on_frame(frame: Any) -> None:
        last[0] = frame.end
        emit({"t": frame.end, "signal": bool(frame.samples.any())})

    source.start(on_frame, lambda m: emit({"error": m}), lambda m: emit({"warning": m, "t": last[0]}))
    sys.stdin.read()
    source.stop()


def _mic(daemon: PulseDaemon, spec: str) -> contextlib.AbstractContextManager[Capture]:
    return child_capture(daemon, f"from tests.test_permission import _child_main; _child_main({spec!r})")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[PulseDaemon]:
    pulse = PulseDaemon(tmp_path)
    pulse.start()
    try:
        yield pulse
    finally:
        pulse.kill()


def _warnings(cap: Capture) -> list[dict[str, Any]]:
    with cap.cond:
        return [x for x in cap.lines if "warning" in x]


def _heard_until(cap: Capture) -> float:
    with cap.cond:
        return max((x["t"] for x in cap.lines if "signal" in x), default=0.0)


@pytest.mark.pulse
@needs_pulse
def test_a_microphone_of_exact_zeros_is_said_once_and_is_not_an_error(daemon: PulseDaemon) -> None:
    """``pulse`` opens the daemon's default source: the monitor of a sink nothing plays
    into, exact zeros, as a denied macOS microphone delivers."""
    with _mic(daemon, "pulse") as cap:
        cap.wait_for("two windows of audio", lambda: _heard_until(cap) >= 2 * ZERO_WINDOW_S, 60)
        warnings = _warnings(cap)
    assert len(warnings) == 1
    assert "'pulse'" in warnings[0]["warning"] and "digital silence" in warnings[0]["warning"]
    assert warnings[0]["t"] >= ZERO_WINDOW_S  # not before 3 s of audio
    assert cap.errors == []


@pytest.mark.pulse
@needs_pulse
def test_a_microphone_that_hears_anything_says_nothing(daemon: PulseDaemon, tmp_path: Path) -> None:
    clip = tmp_path / "hum.wav"
    t = np.arange(int(RATE * 4 * ZERO_WINDOW_S)) / RATE
    hum = (0.001 * np.sin(2 * np.pi * 120 * t) * 32767).astype(np.int16)  # -60 dBFS: quiet, not zero
    with wave.open(str(clip), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(hum.tobytes())
    player = subprocess.Popen(["paplay", "--device=decoy", str(clip)], env=daemon.env)
    try:
        with _mic(daemon, "pulse") as cap:
            cap.wait_for("the hum", lambda: any(x.get("signal") for x in cap.lines), 60)
            cap.wait_for("two windows of audio", lambda: _heard_until(cap) >= 2 * ZERO_WINDOW_S, 60)
            assert _warnings(cap) == []
    finally:
        player.kill()
        player.wait(5)
