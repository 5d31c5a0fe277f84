"""Capturing a region: our window hidden, every screen frozen, a region dragged over it.

Windows and X11 grab each screen through Qt (``QScreen.grabWindow(0)``), in device pixels.
macOS asks for Screen Recording first (:mod:`app.screen.macos`: without it the grab is the
wallpaper), then grabs each display through ScreenCaptureKit (:mod:`app.ui.capture_mac`).
Each screen gets a frameless overlay showing its frozen picture, dimmed, with the dragged
region lit; Escape cancels. The region is cut from the grab in device pixels
(:func:`app.ui.region.device_crop`), so a 2x screen gives its full detail. "Again" cuts
the last region from fresh grabs, without the overlay (a problem that scrolls), and without
hiding our window when it lies outside that region. macOS's grab leaves our windows out,
so there the window is never hidden. Wayland
(and XWayland) gives no client the screen: there the desktop's screenshot portal
(:mod:`app.ui.portal`) shows its own picker, and its picture is the capture, with no
overlay ("again" asks the portal again). A capture that is all one colour is named with
its fix, and never read or sent.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from PySide6.QtCore import QObject, QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QCursor,
    QGuiApplication,
    QImage,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
)
from PySide6.QtWidgets import QWidget

from app.screen.ahead import Chosen, ReadAhead, Region
from app.screen.errors import OneColour
from app.screen.picture import Image, check_not_one_colour
from app.ui.region import Crop, Rect, ScreenGeometry, device_crop, screen_at

Deliver = Callable[[Image, Chosen | None], object]
"""A capture's pixels, and the region on the screen read while it was dragged, if it was."""
StartReadAhead = Callable[[Callable[[], Image]], ReadAhead]
"""Start reading a frozen screen (its pixels fetched on the read's own thread)."""

HIDE_MS = 200
"""Time for the compositor to take our hidden window off the screen before the grab (not
waited where "again" cuts a region our window is outside of, nor where the grab leaves our
window out)."""
GRAB_LEAVES_US_OUT = sys.platform == "darwin"
"""Whether :func:`grab_screens` leaves our own windows out of its pictures: macOS's
ScreenCaptureKit filter does, so there the window is never hidden and no HIDE_MS is waited."""


class Screenshot(Protocol):
    """A screenshot the desktop takes itself (Wayland's portal): the picture, or one line."""

    def take(self, done: Callable[[QImage], object], failed: Callable[[str], object]) -> None: ...


def uses_portal(platform: str, environ: Mapping[str, str]) -> bool:
    """Qt on Wayland, or on XWayland (xcb with WAYLAND_DISPLAY set): Qt's grab is black there.
    Offscreen and other test platforms grab nothing, whatever the session is."""
    return platform == "wayland" or (platform == "xcb" and bool(environ.get("WAYLAND_DISPLAY")))


class _NoPortal:
    """A build without Qt's D-Bus module, on Wayland: said, never a black grab."""

    def take(self, done: Callable[[QImage], object], failed: Callable[[str], object]) -> None:
        failed("the screen could not be captured: on Wayland it goes through the desktop's portal, "
               "and this build lacks Qt's D-Bus module")


def desktop_screenshot() -> Screenshot | None:
    """The portal where Qt cannot grab (see :func:`uses_portal`), else None: Qt grabs."""
    if not uses_portal(QGuiApplication.platformName(), os.environ):
        return None
    try:
        from app.ui.portal import PortalScreenshot
    except ImportError:
        return _NoPortal()
    return PortalScreenshot()


@dataclass(frozen=True)
class Grab:
    geometry: ScreenGeometry
    image: QImage


def grab_screens() -> list[Grab]:
    """Every screen, frozen now, in device pixels."""
    if sys.platform == "darwin":
        from app.ui.capture_mac import grab_displays

        return grab_displays()
    grabs = []
    for screen in QGuiApplication.screens():
        pixmap = screen.grabWindow(0)
        g = screen.geometry()
        ratio = pixmap.devicePixelRatio() or screen.devicePixelRatio()
        geometry = ScreenGeometry(Rect(g.x(), g.y(), g.width(), g.height()), ratio,
                                  (pixmap.width(), pixmap.height()))
        grabs.append(Grab(geometry, pixmap.toImage()))
    return grabs


def to_array(image: QImage, crop: Crop | None = None) -> Image:
    """A grab (or a crop of it) as RGB pixels."""
    part = image.copy(crop.x, crop.y, crop.width, crop.height) if crop is not None else image
    rgb = part.convertToFormat(QImage.Format.Format_RGB888)
    w, h, stride = rgb.width(), rgb.height(), rgb.bytesPerLine()
    data = bytes(rgb.constBits())[: stride * h]  # copied while the image is alive
    array = np.frombuffer(data, np.uint8).reshape(h, stride)
    return np.ascontiguousarray(array[:, : 3 * w].reshape(h, w, 3))


class RegionOverlay(QWidget):
    """One screen's frozen picture; ``chosen`` gives the dragged region in desktop coordinates."""

    chosen = Signal(object)
    pressed = Signal(float, float)
    """Where the drag began, in desktop coordinates."""
    cancelled = Signal()

    def __init__(self, grab: Grab) -> None:
        super().__init__(None, Qt.WindowType.FramelessWindowHint | Qt.WindowType.WindowStaysOnTopHint
                         | Qt.WindowType.Tool)
        self._grab = grab
        logical = grab.geometry.logical
        self.setGeometry(QRect(int(logical.x), int(logical.y), int(logical.width), int(logical.height)))
        self.setCursor(Qt.CursorShape.CrossCursor)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._from: QPoint | None = None
        self._to: QPoint | None = None

    def selection(self) -> QRect | None:
        if self._from is None or self._to is None:
            return None
        return QRect(self._from, self._to).normalized()

    def paintEvent(self, e: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.drawImage(self.rect(), self._grab.image)
        painter.fillRect(self.rect(), QColor(0, 0, 0, 110))
        selected = self.selection()
        if selected is not None:
            ratio = self._grab.geometry.ratio
            source = QRect(round(selected.x() * ratio), round(selected.y() * ratio),
                           round(selected.width() * ratio), round(selected.height() * ratio))
            painter.drawImage(selected, self._grab.image, source)
            painter.setPen(QPen(QColor("#3b82f6"), 2))
            painter.drawRect(selected)
        painter.end()

    def mousePressEvent(self, e: QMouseEvent) -> None:
        self._from = self._to = e.position().toPoint()
        origin = self._grab.geometry.logical
        self.pressed.emit(origin.x + self._from.x(), origin.y + self._from.y())
        self.update()

    def mouseMoveEvent(self, e: QMouseEvent) -> None:
        if self._from is not None:
            self._to = e.position().toPoint()
            self.update()

    def mouseReleaseEvent(self, e: QMouseEvent) -> None:
        if self._from is None:
            return
        self._to = e.position().toPoint()
        origin = self._grab.geometry.logical
        a, b = self._from, self._to
        self.chosen.emit(Rect.spanning(origin.x + a.x(), origin.y + a.y(),
                                       origin.x + b.x(), origin.y + b.y()))

    def keyPressEvent(self, e: QKeyEvent) -> None:
        if e.key() == Qt.Key.Key_Escape:
            self.cancelled.emit()
            return
        super().keyPressEvent(e)


class RegionCapture(QObject):
    """Hotkey → hidden window → frozen screens → region → pixels, or a named failure."""

    def __init__(self, window: QWidget, deliver: Deliver, fail: Callable[[str], object],
                 grab: Callable[[], list[Grab]] = grab_screens,
                 desktop: Callable[[], Screenshot | None] = desktop_screenshot,
                 read_ahead: StartReadAhead | None = None, grab_leaves_us_out: bool = False) -> None:
        """``desktop``: where the desktop takes the screenshot itself (Wayland), else None.
        ``read_ahead``: read the screen under the pointer while the region is dragged
        (:mod:`app.screen.ahead`).  ``grab_leaves_us_out``: ``grab``'s pictures never show
        our window (:data:`GRAB_LEAVES_US_OUT`), so it stays up."""
        super().__init__(window)
        self._window = window
        self._deliver = deliver
        self._fail = fail
        self._grab = grab
        self._grab_leaves_us_out = grab_leaves_us_out
        self._desktop = desktop()
        self._overlays: list[RegionOverlay] = []
        self._grabs: list[Grab] = []
        self._read_ahead = read_ahead
        self._ahead: tuple[int, ReadAhead] | None = None
        """The screen being read while the region is dragged: (its index, its read)."""
        self._asking = False
        """The desktop's dialog is up (Wayland)."""
        self.last_region: Rect | None = None

    @property
    def busy(self) -> bool:
        return bool(self._overlays) or self._asking

    def capture(self, again: bool = False) -> None:
        """Start a capture (again: the last region, no overlay); returns at once."""
        if self.busy:
            return  # one capture at a time
        problem = _permission_problem()
        if problem is not None:
            self._fail(problem)
            return
        desktop = self._desktop
        again = again and self.last_region is not None
        shown = not self._grab_leaves_us_out and (not again or self._in_picture(self.last_region))
        if desktop is None and not shown:
            self._frozen(again)  # our window is not in the picture: nothing to wait for
            return
        self._window.hide()
        if desktop is not None:
            self._asking = True
            QTimer.singleShot(HIDE_MS, lambda: self._ask(desktop))
            return
        QTimer.singleShot(HIDE_MS, lambda: self._frozen(again))

    def _in_picture(self, region: Rect | None) -> bool:
        """Whether our window shows inside ``region`` (desktop coordinates) of the screen."""
        if region is None or not self._window.isVisible() or self._window.isMinimized():
            return False
        frame = self._window.frameGeometry()
        return region.intersect(Rect(frame.x(), frame.y(), frame.width(), frame.height())) is not None

    def _ask(self, desktop: Screenshot) -> None:
        try:
            desktop.take(self._from_desktop, self._desktop_failed)
        except Exception as exc:  # a bus that breaks mid-call: said, not raised
            self._desktop_failed(f"the screen could not be captured: {exc}")

    def _from_desktop(self, image: QImage) -> None:
        """The portal's picture: the candidate chose it in the desktop's dialog."""
        self._asking = False
        self._restore()
        self._hand_over(to_array(image))

    def _desktop_failed(self, message: str) -> None:
        self._asking = False
        self._restore()
        self._fail(message)

    def _frozen(self, again: bool) -> None:
        try:
            self._grabs = self._grab()
        except Exception as exc:  # a platform without screen grabs: said, not raised
            self._restore()
            self._fail(f"the screen could not be captured: {exc}")
            return
        if again and self.last_region is not None:
            self._cut(self.last_region)
            return
        self._start_reading_ahead()
        for grab in self._grabs:
            overlay = RegionOverlay(grab)
            overlay.chosen.connect(self._cut)
            overlay.pressed.connect(self.press)
            overlay.cancelled.connect(self._cancel)
            self._overlays.append(overlay)
            overlay.show()
            overlay.activateWindow()

    def _start_reading_ahead(self) -> None:
        """Read the screen under the pointer while the candidate drags (the drag's second
        is the read's head start)."""
        pointer = QCursor.pos()
        self._read_screen_at(pointer.x(), pointer.y())

    def press(self, x: float, y: float) -> None:
        """The drag began at (x, y), desktop coordinates (the overlay's press; tests and
        demos call it too): that screen is read, nearest lines first."""
        self._read_screen_at(x, y, toward=True)

    def _read_screen_at(self, x: float, y: float, toward: bool = False) -> None:
        if self._read_ahead is None or not self._grabs:
            return
        index, device_x, device_y = screen_at(x, y, [g.geometry for g in self._grabs])
        if self._ahead is not None and self._ahead[0] != index:
            self._ahead[1].cancel()
            self._ahead = None
        if self._ahead is None:
            image = QImage(self._grabs[index].image)  # its own instance for the read's thread
            self._ahead = (index, self._read_ahead(lambda: to_array(image)))
        if toward:
            self._ahead[1].toward(device_x, device_y)

    def choose(self, region: Rect) -> None:
        """As if the candidate dragged ``region`` (desktop coordinates): for tests and demos."""
        self._cut(region)

    def _cut(self, region: Rect) -> None:
        self._close_overlays()
        self._restore()
        crop = device_crop(region, [g.geometry for g in self._grabs])
        ahead, self._ahead = self._ahead, None
        if crop is None:
            if ahead is not None:
                ahead[1].cancel()
            return  # a click, not a drag
        self.last_region = region
        chosen: Chosen | None = None
        if ahead is not None and ahead[0] == crop.screen:
            chosen = Chosen(ahead[1], Region(crop.x, crop.y, crop.x + crop.width, crop.y + crop.height))
        elif ahead is not None:
            ahead[1].cancel()  # the region is on another screen than the one read
        self._hand_over(to_array(self._grabs[crop.screen].image, crop), chosen)

    def _hand_over(self, pixels: Image, chosen: Chosen | None = None) -> None:
        """A capture goes on to be read, unless it is all one colour (named with its fix)."""
        try:
            check_not_one_colour(pixels)
        except OneColour as exc:
            if chosen is not None:
                chosen.cancel()
            self._fail(str(exc))
            return
        self._deliver(pixels, chosen)

    def _cancel(self) -> None:
        if self._ahead is not None:
            self._ahead[1].cancel()
            self._ahead = None
        self._close_overlays()
        self._restore()

    def _close_overlays(self) -> None:
        for overlay in self._overlays:
            overlay.close()
            overlay.deleteLater()
        self._overlays.clear()

    def _restore(self) -> None:
        """The window back and in front, hidden for the grab or not (macOS's grab leaves it
        up, maybe under the problem's window): the text read shows in it."""
        if self._window.isHidden():
            self._window.showNormal()
        self._window.raise_()


def _permission_problem() -> str | None:
    if sys.platform == "darwin":
        from app.screen.macos import screen_recording_problem

        return screen_recording_problem()
    return None
