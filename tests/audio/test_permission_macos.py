"""macOS asks before any input is opened: a microphone permission that is denied, restricted
or never answered fails the start with one sentence, BlackHole included (pyobjc's
AVFoundation faked: it only exists on a Mac)."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from app.audio import AudioError
from app.audio.permission import PRIVACY_PATH, require_microphone_access
from app.core.clock import SessionClock

# AVAuthorizationStatus, AVCaptureDevice.h
NOT_DETERMINED, RESTRICTED, DENIED, AUTHORIZED = 0, 1, 2, 3
AUDIO = "soun"  # AVMediaTypeAudio


class FakeCaptureDevice:
    """``AVCaptureDevice``'s two class methods, answering as the user (or nobody) would."""

    def __init__(self, status: int, answer: bool | None = None) -> None:
        self.status = status
        self.answer = answer
        """What the user clicks in macOS's dialog (None: nothing, the dialog stays)."""
        self.asked: list[object] = []
        self.requested: list[object] = []

    def authorizationStatusForMediaType_(self, media: object) -> int:
        self.asked.append(media)
        return self.status

    def requestAccessForMediaType_completionHandler_(
            self, media: object, handler: Callable[[bool], None]) -> None:
        self.requested.append(media)
        if self.answer is not None:  # macOS answers on a queue of its own, later
            answer = self.answer
            threading.Timer(0.05, lambda: handler(answer)).start()


def _av(device: FakeCaptureDevice) -> Callable[[], Any]:
    return lambda: SimpleNamespace(AVCaptureDevice=device, AVMediaTypeAudio=AUDIO)


def _refused(device: FakeCaptureDevice, wait_s: float = 10.0) -> str:
    with pytest.raises(AudioError) as caught:
        require_microphone_access(platform="darwin", av_foundation=_av(device), wait_s=wait_s)
    return str(caught.value)


def _one_sentence(message: str) -> None:
    assert message.endswith(".") and ". " not in message and "\n" not in message


def test_authorized_goes_on_without_asking() -> None:
    device = FakeCaptureDevice(AUTHORIZED)
    require_microphone_access(platform="darwin", av_foundation=_av(device))
    assert device.asked == [AUDIO] and device.requested == []


def test_denied_fails_with_one_sentence_naming_the_setting_and_the_app() -> None:
    device = FakeCaptureDevice(DENIED)
    message = _refused(device)
    _one_sentence(message)
    assert PRIVACY_PATH in message and "Interview Copilot" in message
    assert "BlackHole" in message  # a loopback input needs it too: say so, it is not obvious
    assert device.requested == []


def test_restricted_fails_and_says_who_can_change_it() -> None:
    message = _refused(FakeCaptureDevice(RESTRICTED))
    _one_sentence(message)
    assert PRIVACY_PATH in message and "Interview Copilot" in message
    assert "restricted" in message and "manages this Mac" in message


def test_not_determined_asks_and_goes_on_when_allowed() -> None:
    device = FakeCaptureDevice(NOT_DETERMINED, answer=True)
    require_microphone_access(platform="darwin", av_foundation=_av(device), wait_s=30.0)
    assert device.requested == [AUDIO]


def test_not_determined_asks_and_fails_when_refused() -> None:
    device = FakeCaptureDevice(NOT_DETERMINED, answer=False)
    message = _refused(device, wait_s=30.0)
    assert device.requested == [AUDIO]
    assert message == _refused(FakeCaptureDevice(DENIED))  # refused now = denied before


def test_a_dialog_nobody_answers_fails_once_the_wait_is_over() -> None:
    device = FakeCaptureDevice(NOT_DETERMINED, answer=None)
    message = _refused(device, wait_s=0.2)
    _one_sentence(message)
    assert device.requested == [AUDIO]
    assert "still asking" in message and PRIVACY_PATH in message and "Interview Copilot" in message


@pytest.mark.parametrize("platform", ["linux", "win32"])
def test_only_macos_asks(platform: str) -> None:
    def load() -> Any:
        raise AssertionError("AVFoundation loaded off macOS")

    require_microphone_access(platform=platform, av_foundation=load)


def test_without_pyobjc_it_goes_on_and_says_so_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """The digital-silence check is then what tells the user (tests/audio/test_permission_messages.py)."""

    def load() -> Any:
        raise ModuleNotFoundError("No module named 'AVFoundation'")

    with caplog.at_level(logging.WARNING, logger="app.audio.permission"):
        require_microphone_access(platform="darwin", av_foundation=load)
    assert "pyobjc-framework-AVFoundation" in caplog.text


def test_the_default_is_sys_platform_read_at_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    device = FakeCaptureDevice(DENIED)
    monkeypatch.setattr("app.audio.permission.load_av_foundation", _av(device))
    require_microphone_access()  # this machine is not a Mac: nothing asked
    assert device.asked == []
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(AudioError):
        require_microphone_access()
    assert device.asked == [AUDIO]


@pytest.mark.parametrize(("name", "kind"), [("BlackHole 2ch", "loopback"), ("MacBook Pro Microphone", "mic")])
def test_every_input_device_asks_before_it_is_opened(monkeypatch: pytest.MonkeyPatch, name: str,
                                                     kind: str) -> None:
    """A DeviceSource on macOS with the permission denied: refused before PortAudio is asked
    for any device (its list would not have BlackHole here)."""
    from app.audio import device as device_module

    def no_portaudio() -> Any:
        raise AssertionError("PortAudio asked before the permission")

    capture = FakeCaptureDevice(DENIED)
    monkeypatch.setattr("app.audio.permission.load_av_foundation", _av(capture))
    monkeypatch.setattr(device_module, "list_devices", no_portaudio)
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(AudioError) as caught:
        device_module.DeviceSource(name, SessionClock(), kind=kind)  # type: ignore[arg-type]
    assert PRIVACY_PATH in str(caught.value) and capture.asked == [AUDIO]
