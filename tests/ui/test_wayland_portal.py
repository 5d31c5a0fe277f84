"""Wayland: the capture asks the desktop's screenshot portal over a real (private) session
bus, and its picture goes down the same path as a grab; a cancel, a refusal, a hung
dialog, no portal and no bus are each one line in the window, and the window comes back."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PilImage
from PySide6.QtDBus import QDBusConnection
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.screen.picture import Image
from app.ui import portal
from app.ui.capture import Grab, RegionCapture, uses_portal
from app.ui.portal import PortalScreenshot, request_path
from devtools.screen_pages import render
from tests.patience import NEVER_S

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("dbus-daemon") is None or sys.platform != "linux",
                                reason="needs dbus-daemon (Linux)")
_names = itertools.count(1)


@pytest.fixture
def bus_address() -> Iterator[str]:
    """A session bus of our own: a short socket path (a unix socket's name is at most 108 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="icbus-"))
    daemon = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1",
                               f"--address=unix:path={folder / 'bus'}"], stdout=subprocess.PIPE, text=True)
    try:
        assert daemon.stdout is not None
        yield daemon.stdout.readline().strip()
    finally:
        daemon.terminate()
        daemon.wait(NEVER_S)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def connect(bus_address: str) -> Iterator[Callable[[], QDBusConnection]]:
    """What the capture connects with: the private bus, in place of the user's session bus."""
    name = f"portal-test-{next(_names)}"
    yield lambda: QDBusConnection.connectToBus(bus_address, name)
    QDBusConnection.disconnectFromBus(name)


class FakePortal:
    def __init__(self, address: str, answer: str, picture: Path, record: Path) -> None:
        self.record = record
        self._process = subprocess.Popen([sys.executable, "-m", "tests.ui.fake_portal", address, answer,
                                          str(picture), str(record)], cwd=ROOT, stdout=subprocess.PIPE,
                                         text=True)
        assert self._process.stdout is not None and self._process.stdout.readline().strip() == "ready"

    def calls(self) -> list[dict[str, object]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text(encoding="utf-8").splitlines()]

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(NEVER_S)


@pytest.fixture
def fake_portal(bus_address: str, tmp_path: Path) -> Iterator[Callable[[str, Image], FakePortal]]:
    started: list[FakePortal] = []

    def start(answer: str, picture: Image) -> FakePortal:
        png = tmp_path / "Screenshot.png"
        PilImage.fromarray(picture).save(png)
        started.append(FakePortal(bus_address, answer, png, tmp_path / "calls.jsonl"))
        return started[-1]

    yield start
    for fake in started:
        fake.stop()


class Capturing:
    """A RegionCapture through the portal, with what reached the capture path."""

    def __init__(self, qtbot: QtBot, screenshot: PortalScreenshot) -> None:
        self.window = QWidget()
        qtbot.addWidget(self.window)
        self.window.show()
        self.got: list[Image] = []
        self.failures: list[str] = []
        self.visible_when_asked: list[bool] = []
        take = screenshot.take

        def watched(done: Callable[..., object], failed: Callable[[str], object]) -> None:
            self.visible_when_asked.append(self.window.isVisible())
            take(done, failed)

        screenshot.take = watched  # type: ignore[method-assign]
        self.capture = RegionCapture(self.window, lambda pixels, _chosen: self.got.append(pixels),
                                     self.failures.append, grab=_no_grab,
                                     desktop=lambda: screenshot)

    def finished(self) -> bool:
        return bool(self.got or self.failures) and not self.capture.busy


def _no_grab() -> list[Grab]:
    raise AssertionError("on Wayland Qt's grab is black: it must not be used")


def test_the_portals_picture_arrives_in_the_capture_path_with_our_window_hidden(
        qtbot: QtBot, connect: Callable[[], QDBusConnection],
        fake_portal: Callable[[str, Image], FakePortal]) -> None:
    page = render("problem", scale=2).image
    fake = fake_portal("ok", page)
    run = Capturing(qtbot, PortalScreenshot(connect))
    run.capture.capture()
    assert not run.window.isVisible()
    qtbot.waitUntil(run.finished, timeout=round(NEVER_S * 1000))
    assert run.failures == [] and len(run.got) == 1
    assert np.array_equal(run.got[0], page)  # the whole picture the desktop's picker chose, device pixels
    assert run.visible_when_asked == [False] and run.window.isVisible()
    [call] = fake.calls()
    options = call["options"]
    assert isinstance(options, dict) and options["interactive"] is True and call["parent"] == ""
    assert str(options["handle_token"]).startswith("interview_copilot_")


def test_again_asks_the_portal_again(qtbot: QtBot, connect: Callable[[], QDBusConnection],
                                     fake_portal: Callable[[str, Image], FakePortal]) -> None:
    fake = fake_portal("ok", render("chat").image)
    run = Capturing(qtbot, PortalScreenshot(connect))
    run.capture.capture()
    qtbot.waitUntil(run.finished, timeout=round(NEVER_S * 1000))
    run.capture.capture(again=True)
    qtbot.waitUntil(lambda: len(run.got) == 2 and not run.capture.busy, timeout=round(NEVER_S * 1000))
    tokens = [c["options"]["handle_token"] for c in fake.calls()]  # type: ignore[index]
    assert len(tokens) == 2 and tokens[0] != tokens[1]


@pytest.mark.parametrize(("answer", "said"), [("cancel", portal.CANCELLED), ("refuse", portal.ENDED)])
def test_a_cancelled_or_refused_screenshot_is_one_line_and_the_window_comes_back(
        qtbot: QtBot, connect: Callable[[], QDBusConnection],
        fake_portal: Callable[[str, Image], FakePortal], answer: str, said: str) -> None:
    fake_portal(answer, render("chat").image)
    run = Capturing(qtbot, PortalScreenshot(connect))
    run.capture.capture()
    qtbot.waitUntil(run.finished, timeout=round(NEVER_S * 1000))
    assert run.got == [] and run.failures == [said] and run.window.isVisible()


def test_an_all_black_portal_picture_is_named_like_a_black_grab(
        qtbot: QtBot, connect: Callable[[], QDBusConnection],
        fake_portal: Callable[[str, Image], FakePortal]) -> None:
    fake_portal("ok", np.zeros((200, 300, 3), np.uint8))
    run = Capturing(qtbot, PortalScreenshot(connect))
    run.capture.capture()
    qtbot.waitUntil(run.finished, timeout=round(NEVER_S * 1000))
    assert run.got == [] and len(run.failures) == 1 and "all black" in run.failures[0]


def test_a_bus_without_a_portal_says_what_to_install(qtbot: QtBot,
                                                     connect: Callable[[], QDBusConnection]) -> None:
    run = Capturing(qtbot, PortalScreenshot(connect))
    run.capture.capture()
    qtbot.waitUntil(run.finished, timeout=round(NEVER_S * 1000))
    assert run.failures == [portal.NO_PORTAL] and "xdg-desktop-portal" in run.failures[0]
    assert run.window.isVisible()


def test_no_session_bus_is_said(qtbot: QtBot, tmp_path: Path) -> None:
    nowhere = f"unix:path={tmp_path / 'no-bus'}"
    screenshot = PortalScreenshot(lambda: QDBusConnection.connectToBus(nowhere, "portal-test-none"))
    run = Capturing(qtbot, screenshot)
    run.capture.capture()
    qtbot.waitUntil(run.finished, timeout=round(NEVER_S * 1000))
    QDBusConnection.disconnectFromBus("portal-test-none")
    assert run.failures == [portal.NO_BUS] and run.window.isVisible()


def test_a_dialog_that_never_answers_gives_the_window_back(
        qtbot: QtBot, connect: Callable[[], QDBusConnection],
        fake_portal: Callable[[str, Image], FakePortal]) -> None:
    fake = fake_portal("silent", render("chat").image)
    run = Capturing(qtbot, PortalScreenshot(connect, answer_timeout_s=1.0))
    run.capture.capture()
    qtbot.waitUntil(run.finished, timeout=round(NEVER_S * 1000))
    assert len(fake.calls()) == 1 and run.failures == [portal.NO_ANSWER.format(seconds=1)]
    assert run.window.isVisible()


def test_the_request_path_follows_the_portals_rule() -> None:
    assert request_path(":1.42", "interview_copilot_7_1") == \
        "/org/freedesktop/portal/desktop/request/1_42/interview_copilot_7_1"


@pytest.mark.parametrize(("platform", "wayland_display", "portal_used"), [
    ("wayland", "", True),
    ("xcb", "wayland-0", True),  # XWayland: Qt's X11 grab is black for Wayland windows
    ("xcb", "", False),
    ("offscreen", "wayland-0", False),
    ("windows", "", False),
    ("cocoa", "", False),
])
def test_the_portal_is_used_on_wayland_and_xwayland_only(platform: str, wayland_display: str,
                                                         portal_used: bool) -> None:
    environ = {"WAYLAND_DISPLAY": wayland_display} if wayland_display else {}
    assert uses_portal(platform, environ) is portal_used
