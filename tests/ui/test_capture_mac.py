"""macOS's grabs as the overlay expects them: a 2x display's frame in points, its picture in
device pixels, and a region dragged on it cut at full detail."""

from __future__ import annotations

import numpy as np
from pytestqt.qtbot import QtBot

from app.screen.macos import DisplayShot
from app.ui.capture import to_array
from app.ui.capture_mac import to_grab
from app.ui.region import Rect, device_crop


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
