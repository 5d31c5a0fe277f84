"""Capturing in the window: the region cut in device pixels from frozen grabs, a blank
capture named and never read, the read text in an editable box, Enter asks, thumbnails drop."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PIL import Image as PilImage
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.screen.ahead import Chosen, ReadAhead, Region
from app.screen.ocr import Reading
from app.screen.picture import Image
from app.ui.capture import Grab, RegionCapture, RegionOverlay, to_array
from app.ui.capture_panel import CapturePanel
from app.ui.region import Crop, Rect, ScreenGeometry, device_crop
from devtools.screen_pages import render
from tests.patience import NEVER_S

WAIT_MS = round(NEVER_S * 1000)


def qimage(pixels: Image) -> QImage:
    h, w = pixels.shape[:2]
    return QImage(np.ascontiguousarray(pixels).data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()


def keep(got: list[Image]) -> Callable[[Image, Chosen | None], None]:
    """A capture's receiver that keeps its pixels (and drops a read ahead's region)."""
    return lambda pixels, _chosen: got.append(pixels)


def test_a_region_of_a_2x_screen_is_cut_in_its_device_pixels(qtbot: QtBot) -> None:
    page = render("editor", scale=2)  # 760x380 logical, 1520x760 device pixels
    grab = Grab(ScreenGeometry(Rect(0, 0, 760, 380), 2.0, (1520, 760)), qimage(page.image))
    window = QWidget()
    qtbot.addWidget(window)
    got: list[Image] = []
    failures: list[str] = []
    capture = RegionCapture(window, keep(got), failures.append, grab=lambda: [grab])
    capture._grabs = [grab]
    capture.choose(Rect(10, 20, 300, 100))
    assert failures == [] and len(got) == 1
    assert got[0].shape == (200, 600, 3)
    assert np.array_equal(got[0], page.image[40:240, 20:620])
    assert capture.last_region == Rect(10, 20, 300, 100)  # what "again" cuts next time


def test_an_all_black_capture_is_named_with_its_fix_and_never_read(qtbot: QtBot) -> None:
    black = Grab(ScreenGeometry(Rect(0, 0, 400, 300), 1.0), qimage(np.zeros((300, 400, 3), np.uint8)))
    window = QWidget()
    qtbot.addWidget(window)
    got: list[Image] = []
    failures: list[str] = []
    capture = RegionCapture(window, keep(got), failures.append, grab=lambda: [black])
    capture._grabs = [black]
    capture.choose(Rect(0, 0, 200, 100))
    assert got == [] and len(failures) == 1 and "all black" in failures[0]


def test_to_array_keeps_rgb_order() -> None:
    pixels = np.zeros((4, 5, 3), np.uint8)
    pixels[..., 0] = 200  # red
    assert np.array_equal(to_array(qimage(pixels)), pixels)


def test_the_read_text_is_editable_and_enter_asks_the_queue_as_one_question(qtbot: QtBot) -> None:
    asked: list[tuple[str, list[bytes], int]] = []
    panel = CapturePanel(lambda text, images, n: asked.append((text, images, n)))
    qtbot.addWidget(panel)
    panel.add_capture(render("problem").image)
    panel.add_capture(render("editor", theme="dark").image)
    assert panel.isVisibleTo(panel.parentWidget() or panel) and panel.thumbs.count() == 2
    qtbot.waitUntil(lambda: "TypeError" in panel.box.toPlainText() and "Two Sum" in panel.box.toPlainText(),
                    timeout=240_000)
    panel.box.setPlainText(panel.box.toPlainText().replace("Two Sum", "Two Sums"))  # the candidate's fix
    qtbot.keyClick(panel.box, Qt.Key.Key_Return)
    [(text, images, captures)] = asked
    assert "1. Two Sums" in text and "    def two_sum(self, nums, target):" in text
    assert images == [] and captures == 2  # the image setting is off: text only
    assert panel.captures == [] and panel.box.toPlainText() == ""


def test_a_dropped_capture_leaves_the_question_and_a_sixth_is_refused(qtbot: QtBot) -> None:
    panel = CapturePanel(lambda *_: None, max_captures=2)
    qtbot.addWidget(panel)
    first = render("chat").image
    assert panel.add_capture(first) and panel.add_capture(first)
    assert not panel.add_capture(first) and "2 captures at most" in panel.note.text()
    qtbot.waitUntil(lambda: all(c.text for c in panel.captures), timeout=240_000)
    panel.drop(panel.captures[0])
    assert len(panel.captures) == 1 and panel.thumbs.count() == 1


class Raised(QWidget):
    """A window that counts the times it was brought to the front."""

    def __init__(self) -> None:
        super().__init__()
        self.raised = 0

    def raise_(self) -> None:
        self.raised += 1
        super().raise_()


@dataclass
class Watched:
    """A shown window, a capture of a 2x editor page, and whether the window was visible at
    each grab."""
    page: Image
    window: Raised
    capture: RegionCapture
    got: list[Image]
    visible_at_grab: list[bool]


def watched_capture(qtbot: QtBot, geometry: tuple[int, int, int, int] | None = None,
                    leaves_us_out: bool = False) -> Watched:
    page = render("editor", scale=2).image
    grab = Grab(ScreenGeometry(Rect(0, 0, 760, 380), 2.0, (1520, 760)), qimage(page))
    window = Raised()
    qtbot.addWidget(window)
    if geometry is not None:
        window.setGeometry(*geometry)
    window.show()
    visible_at_grab: list[bool] = []

    def grab_screens() -> list[Grab]:
        visible_at_grab.append(window.isVisible())
        return [grab]

    got: list[Image] = []
    capture = RegionCapture(window, keep(got), lambda message: None, grab=grab_screens, desktop=lambda: None,
                            grab_leaves_us_out=leaves_us_out)
    return Watched(page, window, capture, got, visible_at_grab)


def test_our_window_is_hidden_while_the_screens_are_grabbed_and_comes_back(qtbot: QtBot) -> None:
    w = watched_capture(qtbot)
    window, capture, got, visible_at_grab = w.window, w.capture, w.got, w.visible_at_grab
    capture.capture()
    assert not window.isVisible()  # hidden before anything is grabbed
    qtbot.waitUntil(lambda: capture.busy and bool(visible_at_grab), timeout=WAIT_MS)  # the overlay is up
    assert visible_at_grab == [False] and not window.isVisible()
    capture.choose(Rect(10, 20, 300, 100))
    assert window.isVisible() and not capture.busy and got[0].shape == (200, 600, 3)
    capture.capture(again=True)  # the last region from a fresh grab: no overlay, hidden all the same
    assert not window.isVisible()
    qtbot.waitUntil(lambda: len(got) == 2, timeout=WAIT_MS)
    assert visible_at_grab == [False, False] and window.isVisible()
    assert np.array_equal(got[1], got[0])


def test_again_outside_our_window_grabs_at_once_and_leaves_the_window_alone(qtbot: QtBot) -> None:
    """Hiding costs the compositor's HIDE_MS; a region our window is not in needs none."""
    w = watched_capture(qtbot, (400, 100, 200, 100))
    window, capture, got, visible_at_grab = w.window, w.capture, w.got, w.visible_at_grab
    capture.last_region = Rect(10, 20, 300, 70)  # left of and above the window's frame
    capture.capture(again=True)
    assert visible_at_grab == [True] and window.isVisible() and len(got) == 1  # at once, no timer
    assert np.array_equal(got[0], w.page[40:180, 20:620])
    capture.last_region = Rect(10, 20, 400, 100)  # now the window's corner is in it
    capture.capture(again=True)
    assert not window.isVisible()
    qtbot.waitUntil(lambda: len(got) == 2, timeout=WAIT_MS)
    assert visible_at_grab == [True, False] and window.isVisible()


def test_a_grab_that_leaves_our_window_out_never_hides_it_nor_waits(qtbot: QtBot) -> None:
    """macOS's filter: the overlay is up at once, and "again" over our window cuts at once."""
    w = watched_capture(qtbot, (0, 0, 300, 200), leaves_us_out=True)
    window, capture, got, visible_at_grab = w.window, w.capture, w.got, w.visible_at_grab
    capture.capture()
    assert capture.busy and visible_at_grab == [True] and window.isVisible()  # no timer
    capture.choose(Rect(10, 20, 300, 100))
    assert window.isVisible() and got[0].shape == (200, 600, 3)
    assert window.raised == 1  # in front, where the text read shows: it may be under the problem
    capture.capture(again=True)  # the region lies under our window
    assert visible_at_grab == [True, True] and window.isVisible() and len(got) == 2
    assert window.raised == 2


def test_escape_over_the_frozen_screen_cancels_and_gives_the_window_back(qtbot: QtBot) -> None:
    grab = Grab(ScreenGeometry(Rect(0, 0, 400, 300), 1.0), qimage(render("chat").image[:300, :400]))
    window = QWidget()
    qtbot.addWidget(window)
    window.show()
    got: list[Image] = []
    capture = RegionCapture(window, keep(got), lambda message: None, grab=lambda: [grab],
                            desktop=lambda: None)
    capture.capture()
    qtbot.waitUntil(lambda: capture.busy, timeout=WAIT_MS)
    [overlay] = capture._overlays
    qtbot.keyClick(overlay, Qt.Key.Key_Escape)
    assert got == [] and not capture.busy and window.isVisible()


def test_a_drag_on_a_second_2x_screen_is_in_desktop_coordinates_then_its_own_pixels(qtbot: QtBot) -> None:
    side = ScreenGeometry(Rect(1920, 0, 760, 380), 2.0, (1520, 760))  # right of a 1x 1920-wide screen
    overlay = RegionOverlay(Grab(side, qimage(render("editor", scale=2).image)))
    qtbot.addWidget(overlay)
    chosen: list[Rect] = []
    overlay.chosen.connect(chosen.append)
    qtbot.mousePress(overlay, Qt.MouseButton.LeftButton, pos=QPoint(310, 120))
    qtbot.mouseMove(overlay, QPoint(100, 40))
    qtbot.mouseRelease(overlay, Qt.MouseButton.LeftButton, pos=QPoint(10, 20))  # dragged up and left
    assert chosen == [Rect(1930, 20, 300, 100)]
    primary = ScreenGeometry(Rect(0, 0, 1920, 1080), 1.0)
    assert device_crop(chosen[0], [primary, side]) == Crop(1, 20, 40, 600, 200)


def test_when_a_setting_wants_the_images_asking_hands_them_as_png(qtbot: QtBot) -> None:
    asked: list[tuple[str, list[bytes], int]] = []
    panel = CapturePanel(lambda text, images, n: asked.append((text, images, n)), with_images=lambda: True)
    qtbot.addWidget(panel)
    chat = render("chat").image
    panel.add_capture(chat)
    qtbot.waitUntil(lambda: bool(panel.box.toPlainText().strip()), timeout=240_000)  # read, in the box
    panel.submit()
    [(_, [png], captures)] = asked
    assert captures == 1 and np.array_equal(np.asarray(PilImage.open(io.BytesIO(png)).convert("RGB")), chat)


class FakeAhead:
    """Stands for :class:`app.screen.ahead.ReadAhead`: records what the capture asks of it."""

    def __init__(self, screen: Callable[[], Image]) -> None:
        self.screen = screen()
        self.cancelled = False
        self.regions: list[Region] = []
        self.towards: list[tuple[float, float]] = []

    def toward(self, x: float, y: float) -> None:
        self.towards.append((x, y))

    def cancel(self) -> None:
        self.cancelled = True

    def region(self, region: Region) -> Reading | None:
        self.regions.append(region)
        return None


def reading_ahead(qtbot: QtBot) -> tuple[RegionCapture, list[FakeAhead], list[Chosen | None], Image]:
    page = render("editor", scale=2).image
    grab = Grab(ScreenGeometry(Rect(0, 0, 760, 380), 2.0, (1520, 760)), qimage(page))
    window = QWidget()
    qtbot.addWidget(window)
    window.show()
    started: list[FakeAhead] = []
    chosen: list[Chosen | None] = []

    def start(screen: Callable[[], Image]) -> ReadAhead:
        started.append(FakeAhead(screen))
        return started[-1]  # type: ignore[return-value]

    capture = RegionCapture(window, lambda _pixels, region: chosen.append(region), lambda message: None,
                            grab=lambda: [grab], desktop=lambda: None, read_ahead=start)
    return capture, started, chosen, page


def test_the_frozen_screen_is_read_while_the_region_is_dragged_and_handed_over_in_its_pixels(
        qtbot: QtBot) -> None:
    capture, started, chosen, page = reading_ahead(qtbot)
    capture.capture()
    qtbot.waitUntil(lambda: capture.busy, timeout=WAIT_MS)
    [ahead] = started  # from the moment the screen is frozen, before any drag
    assert np.array_equal(ahead.screen, page)  # the whole screen, in device pixels
    capture.choose(Rect(10, 20, 300, 100))
    [handed] = chosen
    assert handed is not None and handed.ahead is ahead  # type: ignore[comparison-overlap]
    assert handed.region == Region(20, 40, 620, 240)  # the 2x screen's pixels
    capture.capture(again=True)  # no drag, nothing to read ahead
    qtbot.waitUntil(lambda: len(chosen) == 2, timeout=WAIT_MS)
    assert chosen[1] is None and len(started) == 1


def test_a_cancelled_capture_or_a_click_stops_the_read_ahead(qtbot: QtBot) -> None:
    capture, started, chosen, _ = reading_ahead(qtbot)
    capture.capture()
    qtbot.waitUntil(lambda: capture.busy, timeout=WAIT_MS)
    qtbot.keyClick(capture._overlays[0], Qt.Key.Key_Escape)
    assert started[0].cancelled and chosen == []
    capture.capture()
    qtbot.waitUntil(lambda: capture.busy, timeout=WAIT_MS)
    capture.choose(Rect(10, 20, 2, 2))  # a click, not a region
    assert started[1].cancelled and chosen == []


def test_the_panel_takes_the_text_read_ahead_and_reads_the_pixels_when_there_is_none(qtbot: QtBot) -> None:
    panel = CapturePanel(lambda *_: None)
    qtbot.addWidget(panel)
    chat = render("chat").image
    early = Reading("read ahead: the whole question", (), 0.0, 1.0)
    given = FakeAhead(lambda: chat)
    given.region = lambda region: early  # type: ignore[method-assign]
    panel.add_capture(chat, Chosen(given, Region(0, 0, 10, 10)))  # type: ignore[arg-type]
    qtbot.waitUntil(lambda: bool(panel.box.toPlainText()), timeout=WAIT_MS)
    assert panel.box.toPlainText() == early.text
    panel.clear()
    panel.add_capture(chat, Chosen(FakeAhead(lambda: chat), Region(0, 0, 10, 10)))  # type: ignore[arg-type]
    qtbot.waitUntil(lambda: bool(panel.box.toPlainText()), timeout=240_000)
    assert "Interviewer" in panel.box.toPlainText()  # None from the read ahead: the pixels are read


def test_the_drag_begins_where_its_screen_is_read_nearest_lines_first(qtbot: QtBot) -> None:
    """A press on the screen being read points it there (its device pixels); a press on
    another screen reads that one instead."""
    page = render("editor", scale=2).image
    left = Grab(ScreenGeometry(Rect(0, 0, 760, 380), 2.0, (1520, 760)), qimage(page))
    right = Grab(ScreenGeometry(Rect(760, 0, 760, 380), 1.0), qimage(page[:380, :760]))
    window = QWidget()
    qtbot.addWidget(window)
    started: list[FakeAhead] = []

    def start(screen: Callable[[], Image]) -> ReadAhead:
        started.append(FakeAhead(screen))
        return started[-1]  # type: ignore[return-value]

    capture = RegionCapture(window, lambda *_: None, lambda message: None, grab=lambda: [left, right],
                            desktop=lambda: None, read_ahead=start)
    capture._grabs = [left, right]
    capture._read_screen_at(100, 50)  # the pointer at the freeze: the left screen
    left_overlay, right_overlay = RegionOverlay(left), RegionOverlay(right)
    for overlay in (left_overlay, right_overlay):
        qtbot.addWidget(overlay)
        overlay.pressed.connect(capture.press)
    qtbot.mousePress(left_overlay, Qt.MouseButton.LeftButton, pos=QPoint(30, 40))
    assert len(started) == 1 and started[0].towards == [(60.0, 80.0)]  # 2x device pixels
    qtbot.mousePress(right_overlay, Qt.MouseButton.LeftButton, pos=QPoint(30, 40))
    assert started[0].cancelled and len(started) == 2
    assert started[1].screen.shape == (380, 760, 3) and started[1].towards == [(30.0, 40.0)]
