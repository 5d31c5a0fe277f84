"""macOS's grab: each display through ScreenCaptureKit (:func:`app.screen.macos.capture_displays`),
as the :class:`~app.ui.capture.Grab` list the region overlay and the cut expect.

Our own windows are left out of the pictures (ScreenCaptureKit's filter), so the capture
does not hide the window first (:data:`app.ui.capture.GRAB_LEAVES_US_OUT`).  A display's
frame is in points, the desktop's coordinates on macOS, which are Qt's logical
ones; its picture is in device pixels, so the ratio is the picture's width over the frame's.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

from PySide6.QtGui import QImage

from app.screen.macos import CaptureFailed, DisplayShot, capture_displays
from app.ui.capture import Grab
from app.ui.region import Rect, ScreenGeometry


def grab_displays(sck: ModuleType | Any | None = None, quartz: ModuleType | Any | None = None) -> list[Grab]:
    """Every display, frozen now; a refusal or a timeout raises with the sentence to show."""
    shots = capture_displays(sck, quartz, leave_out=os.getpid())
    if not shots:
        raise CaptureFailed("macOS listed no display to capture")
    return [to_grab(shot) for shot in shots]


def to_grab(shot: DisplayShot) -> Grab:
    x, y, width, height = shot.frame
    rows, columns = shot.pixels.shape[:2]
    image = QImage(shot.pixels.tobytes(), columns, rows, 3 * columns, QImage.Format.Format_RGB888).copy()
    geometry = ScreenGeometry(Rect(x, y, width, height), columns / width if width else 1.0, (columns, rows))
    return Grab(geometry, image)
