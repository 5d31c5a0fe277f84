"""The digital-silence detector behind the macOS denied-microphone hint, alone and in DeviceSource."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import wave
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import sounddevice as sd

from app.audio.permission import (
    PRIVACY_PATH,
    WINDOWS_PRIVACY_PATH,
    ZERO_WINDOW_S,
    DigitalSilence,
    access_denied_message,
    silence_message,
    silence_warning,
    watches_for_silence,
)
from tests.audio.test_deadlines import fake_portaudio  # noqa: F401  (a fixture)
from tests.audio.test_device import Capture, PulseDaemon, child_capture, needs_pulse
from tests.patience import NEVER_S

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


def test_macos_and_windows_name_where_to_allow_the_microphone_and_linux_does_not() -> None:
    mac = silence_message("MacBook Pro Microphone", platform="darwin")
    assert "MacBook Pro Microphone" in mac and "permission to use the microphone" in mac
    assert PRIVACY_PATH in mac
    assert PRIVACY_PATH == "System Settings → Privacy & Security → Microphone"
    windows = silence_message("Headset", platform="win32")
    assert "digital silence" in windows and "Headset" in windows
    assert WINDOWS_PRIVACY_PATH in windows and "Let desktop apps access your microphone" in windows
    assert WINDOWS_PRIVACY_PATH == "Settings → Privacy & security → Microphone"
    assert "muted" in windows  # zeros from a muted microphone look the same
    text = silence_message("Headset", platform="linux")
    assert "digital silence" in text and "Headset" in text
    assert "permission" not in text and "Privacy" not in text


def _denied() -> sd.PortAudioError:
    """What sounddevice raises when WASAPI refuses the open with E_ACCESSDENIED: PortAudio's
    WASAPI host logs the HRESULT as the host error code, with the text "UNKNOWN ERROR" (host
    API -1 here, so that ``str()`` needs no PortAudio host list)."""
    return sd.PortAudioError("Error opening InputStream: Unanticipated host error", -9999,
                             (-1, -2147024891, "UNKNOWN ERROR"))


def test_an_open_windows_refused_names_the_privacy_switches() -> None:
    text = access_denied_message(_denied(), "Microphone (Realtek Audio)", platform="win32")
    assert text is not None and "Microphone (Realtek Audio)" in text
    assert WINDOWS_PRIVACY_PATH in text and "Let desktop apps access your microphone" in text
    worded = OSError("[WinError 5] Access is denied")  # another layer, saying it in words
    assert access_denied_message(worded, "Mic", platform="win32") is not None


def test_other_open_failures_and_other_systems_are_not_called_a_denied_microphone() -> None:
    in_use = sd.PortAudioError("Error opening InputStream: Unanticipated host error", -9999,
                               (-1, 0x8889000A - 2**32, "AUDCLNT_E_DEVICE_IN_USE"))
    assert access_denied_message(in_use, "Mic", platform="win32") is None
    bad_rate = sd.PortAudioError("Invalid sample rate", -9997)
    assert access_denied_message(bad_rate, "Mic", platform="win32") is None
    assert access_denied_message(_denied(), "Mic", platform="linux") is None
    assert access_denied_message(_denied(), "Mic", platform="darwin") is None


class _RefusedStream:
    """``sd.InputStream`` on a Windows whose microphone switches are off (WASAPI)."""

    def __init__(self, **_: Any) -> None:
        raise _denied()


class _ZerosStream:
    """``sd.InputStream`` delivering exact zeros, as a microphone the switches keep from
    desktop apps does under MME/DirectSound: 4 s of blocks, then it stays open."""

    def __init__(self, *, callback: Any, channels: int, **_: Any) -> None:
        self.callback, self.channels, self.active = callback, channels, False

    def start(self) -> None:
        self.active = True
        status = type("Status", (), {"input_overflow": False})()
        block = np.zeros((RATE // 100, self.channels), dtype=np.float32)
        for _ in range(400):
            self.callback(block, len(block), None, status)

    def abort(self) -> None:
        self.active = False

    def close(self) -> None:
        self.active = False


@pytest.fixture
def on_windows(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake PortAudio (tests/audio/test_deadlines.py) on a machine that says it is Windows."""
    import app.audio.permission as permission

    request.getfixturevalue("fake_portaudio")
    monkeypatch.setattr(permission, "sys", SimpleNamespace(platform="win32"))


def _first_message(stream: type, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    import app.audio.device as device
    from app.audio.device import DeviceSource
    from app.core.clock import SessionClock

    monkeypatch.setattr(device.sd, "InputStream", stream)
    said = threading.Event()
    errors: list[str] = []
    warnings: list[str] = []
    source = DeviceSource("Fake Mic", SessionClock(), kind="mic")
    source.start(lambda frame: None, lambda m: (errors.append(m), said.set()),
                 lambda m: (warnings.append(m), said.set()))
    try:
        assert said.wait(NEVER_S), "nothing was said"
    finally:
        source.stop()
    return errors, warnings


@pytest.mark.usefixtures("on_windows")
def test_a_microphone_windows_refuses_is_explained_once_not_called_unplugged(
        monkeypatch: pytest.MonkeyPatch) -> None:
    errors, warnings = _first_message(_RefusedStream, monkeypatch)
    assert len(errors) == 1 and warnings == []
    assert WINDOWS_PRIVACY_PATH in errors[0] and "'Fake Mic'" in errors[0]
    assert "plugged in" not in errors[0]  # it is: only the switch helps


@pytest.mark.usefixtures("on_windows")
def test_a_windows_microphone_of_exact_zeros_names_the_privacy_switches(
        monkeypatch: pytest.MonkeyPatch) -> None:
    errors, warnings = _first_message(_ZerosStream, monkeypatch)
    assert errors == [] and len(warnings) == 1
    assert "digital silence" in warnings[0] and WINDOWS_PRIVACY_PATH in warnings[0]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        DigitalSilence(0)


def test_loopbacks_are_watched_on_macos_only() -> None:
    """On a Mac a loopback (BlackHole) of exact zeros may be the permission; elsewhere it is
    only a call that has not started."""
    assert watches_for_silence(loopback=True, platform="darwin")
    for other in ("win32", "linux"):
        assert not watches_for_silence(loopback=True, platform=other)
    for platform in ("darwin", "win32", "linux"):
        assert watches_for_silence(loopback=False, platform=platform)


def test_a_silent_macos_loopback_names_the_permission_and_the_routing() -> None:
    text = silence_warning("BlackHole 2ch", loopback=True, platform="darwin")
    assert "'BlackHole 2ch'" in text and "digital silence" in text
    assert PRIVACY_PATH in text and "Interview Copilot" in text
    assert "permission to use the microphone" in text  # the microphone's wording, for a loopback too
    assert "Multi-Output Device" in text  # or the call does not play into it (yet)
    assert silence_warning("MacBook Pro Microphone", loopback=False, platform="darwin") == \
        silence_message("MacBook Pro Microphone", platform="darwin")


# --- wired into DeviceSource: real PortAudio on a private PulseAudio daemon -------------------


def _child_main(spec: str, kind: str = "mic", platform: str | None = None) -> None:
    """In the child (PortAudio must start inside the daemon's environment): capture ``spec``
    as a ``kind`` input and report frames, errors and warnings as JSON lines.  ``platform``
    stands in for ``sys.platform`` from the source's creation on (with macOS's microphone
    permission granted, since AVFoundation is not here)."""

    from types import SimpleNamespace

    from app.audio import permission
    from app.audio.device import DeviceSource
    from app.core.clock import SessionClock

    if platform is not None:
        granted = SimpleNamespace(authorizationStatusForMediaType_=lambda media: permission.AV_AUTHORIZED)
        permission.load_av_foundation = lambda: SimpleNamespace(
            AVCaptureDevice=granted, AVMediaTypeAudio="soun")
        sys.platform = platform

    lock = threading.Lock()

    def emit(obj: dict[str, object]) -> None:
        with lock:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()

    source = DeviceSource(spec, SessionClock(), kind=kind)  # type: ignore[arg-type]
    last = [0.0]

    def on_frame(frame: Any) -> None:
        last[0] = frame.end
        emit({"t": frame.end, "signal": bool(frame.samples.any())})

    source.start(on_frame, lambda m: emit({"error": m}), lambda m: emit({"warning": m, "t": last[0]}))
    sys.stdin.read()
    source.stop()


def _mic(daemon: PulseDaemon, spec: str, kind: str = "mic",
         platform: str | None = None) -> contextlib.AbstractContextManager[Capture]:
    return child_capture(daemon, "from tests.audio.test_permission_messages import _child_main; "
                                 f"_child_main({spec!r}, {kind!r}, {platform!r})")


@pytest.fixture
def daemon(pulse: PulseDaemon) -> PulseDaemon:
    return pulse


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


@pytest.mark.pulse
@needs_pulse
def test_a_macos_loopback_of_exact_zeros_names_the_permission(daemon: PulseDaemon) -> None:
    """BlackHole without the permission: exact zeros from a loopback, said on macOS only."""
    with _mic(daemon, "pulse", kind="loopback", platform="darwin") as cap:
        cap.wait_for("two windows of audio", lambda: _heard_until(cap) >= 2 * ZERO_WINDOW_S, 60)
        warnings = _warnings(cap)
    assert len(warnings) == 1
    text = warnings[0]["warning"]
    assert "'pulse'" in text and PRIVACY_PATH in text and "permission to use the microphone" in text
    assert warnings[0]["t"] >= ZERO_WINDOW_S
    assert cap.errors == []


@pytest.mark.pulse
@needs_pulse
def test_a_linux_loopback_of_exact_zeros_is_a_call_not_yet_playing(daemon: PulseDaemon) -> None:
    with _mic(daemon, "pulse", kind="loopback") as cap:
        cap.wait_for("two windows of audio", lambda: _heard_until(cap) >= 2 * ZERO_WINDOW_S, 60)
        assert _warnings(cap) == [] and cap.errors == []
