"""macOS's grabs as the overlay expects them: a 2x display's frame in points, its picture in
device pixels, and a region dragged on it cut at full detail."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.screen.macos import DisplayShot, capture_displays
from app.ui.capture import to_array
from app.ui.capture_mac import grab_displays, to_grab
from app.ui.region import Rect, device_crop
from tests.screen.test_macos_capture import App, Display, FakeQuartz, FakeSCK


def test_a_retina_display_keeps_its_points_and_its_pixels(qtbot: QtBot) -> None:
    pixels = np.zeros((1964, 3024, 3), np.uint8)
    pixels[100:300, 200:600] = (10, 200, 30)
    grab = to_grab(DisplayShot((0, 0, 1512, 982), pixels))
    assert grab.geometry.logical == Rect(0, 0, 1512, 982)
    assert grab.geometry.ratio == 2.0 and grab.geometry.pixels == (3024, 1964)
    crop = device_crop(Rect(100, 50, 200, 100), [grab.geometry])
    assert crop is not None and (crop.width, crop.height) == (400, 200)
    cut = to_array(grab.image, crop)
    assert cut.shape == (200, 400, 3) and (cut == (10, 200, 30)).all()


def test_the_window_grab_leaves_this_process_out(qtbot: QtBot) -> None:
    """So the capture need not hide our window first (GRAB_LEAVES_US_OUT on macOS)."""
    ours = App(os.getpid())
    sck = FakeSCK([Display(0, 0, 800, 600, 2.0)], apps=[App(os.getpid() + 1), ours])
    [grab] = grab_displays(sck, FakeQuartz())
    assert sck.left_out == [[ours]] and grab.geometry.pixels == (1600, 1200)


@pytest.mark.skipif(sys.platform != "darwin", reason="ScreenCaptureKit is macOS's")
def test_on_a_mac_our_window_is_in_a_plain_screenshot_and_not_in_ours(qtbot: QtBot) -> None:
    """The real filter, on the macOS runner (skipped where it may not record the screen)."""
    import Quartz

    if QGuiApplication.platformName() != "cocoa":
        pytest.skip("Qt draws offscreen here (the CI step for it sets QT_QPA_PLATFORM=cocoa)")
    if not Quartz.CGPreflightScreenCaptureAccess():
        pytest.skip("this machine has not allowed the tests to record the screen")
    window = QWidget()
    qtbot.addWidget(window)
    palette = window.palette()
    palette.setColor(QPalette.ColorRole.Window, QColor(255, 0, 255))
    window.setPalette(palette)
    window.setAutoFillBackground(True)
    window.setGeometry(120, 120, 300, 200)
    window.show()
    qtbot.waitExposed(window)
    qtbot.wait(500)  # on the screen, composited

    def magenta(shots: list[DisplayShot]) -> int:
        pixels = np.concatenate([shot.pixels.reshape(-1, 3) for shot in shots]).astype(int)
        return int(((pixels[:, 0] > 200) & (pixels[:, 1] < 90) & (pixels[:, 2] > 200)).sum())

    assert magenta(capture_displays()) > 300 * 200 // 2  # the plain screenshot shows it
    assert magenta(capture_displays(leave_out=os.getpid())) < 300 * 200 // 20
