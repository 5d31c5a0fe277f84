"""ScreenCaptureKit's path with fake frameworks: each display sized in device pixels, the
picture read in a layout we chose, and a refusal or a silence named, never a hang."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from app.screen.macos import USER_DECLINED, CaptureFailed, capture_displays, rgb_pixels


@dataclass
class Point:
    x: float
    y: float


@dataclass
class Size:
    width: float
    height: float


@dataclass
class Frame:
    origin: Point
    size: Size


class Display:
    def __init__(self, x: float, y: float, width: int, height: int, scale: float) -> None:
        self._frame = Frame(Point(x, y), Size(width, height))
        self.scale = scale

    def frame(self) -> Frame:
        return self._frame

    def width(self) -> int:
        return int(self._frame.size.width)

    def height(self) -> int:
        return int(self._frame.size.height)


class Error:
    def __init__(self, code: int, text: str) -> None:
        self._code, self._text = code, text

    def code(self) -> int:
        return self._code

    def localizedDescription(self) -> str:
        return self._text


class FakeImage:
    """A CGImage: RGB pixels the fake Quartz draws into the caller's bitmap."""

    def __init__(self, pixels: np.ndarray) -> None:
        self.pixels = pixels


class FakeQuartz:
    """Just the Core Graphics calls :func:`rgb_pixels` makes; the drawn bitmap is RGBX with
    rows padded to a multiple of 64 bytes, as Core Graphics pads them."""

    kCGImageAlphaNoneSkipLast = 5

    def __init__(self) -> None:
        self.bitmaps: list[dict[str, Any]] = []

    def CGImageGetWidth(self, image: FakeImage) -> int:
        return int(image.pixels.shape[1])

    def CGImageGetHeight(self, image: FakeImage) -> int:
        return int(image.pixels.shape[0])

    def CGColorSpaceCreateDeviceRGB(self) -> str:
        return "rgb"

    def CGBitmapContextCreate(self, data: None, width: int, height: int, bits: int, row: int,
                              space: str, info: int) -> dict[str, Any]:
        assert (bits, row, space, info) == (8, 4 * width, "rgb", self.kCGImageAlphaNoneSkipLast)
        context: dict[str, Any] = {"width": width, "height": height}
        self.bitmaps.append(context)
        return context

    def CGRectMake(self, x: float, y: float, w: float, h: float) -> tuple[float, ...]:
        return (x, y, w, h)

    def CGContextDrawImage(self, context: dict[str, Any], rect: tuple[float, ...], image: FakeImage) -> None:
        assert rect == (0, 0, context["width"], context["height"])
        context["image"] = image

    def CGBitmapContextCreateImage(self, context: dict[str, Any]) -> dict[str, Any]:
        return context

    def CGImageGetBytesPerRow(self, drawn: dict[str, Any]) -> int:
        return -(-4 * drawn["width"] // 64) * 64

    def CGImageGetDataProvider(self, drawn: dict[str, Any]) -> dict[str, Any]:
        return drawn

    def CGDataProviderCopyData(self, drawn: dict[str, Any]) -> bytes:
        pixels = drawn["image"].pixels
        h, w = pixels.shape[:2]
        rows = np.zeros((h, self.CGImageGetBytesPerRow(drawn)), np.uint8)
        rgbx = np.concatenate([pixels, np.full((h, w, 1), 255, np.uint8)], axis=2)
        rows[:, : 4 * w] = rgbx.reshape(h, 4 * w)
        return rows.tobytes()


class App:
    """A running application as the shareable content lists it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def processID(self) -> int:
        return self.pid


class FakeSCK:
    """ScreenCaptureKit's three classes; answers come on another thread, as the real one's do."""

    def __init__(self, displays: list[Display], *, error: Error | None = None, silent: bool = False,
                 apps: list[App] | None = None) -> None:
        sck = self
        self.configs: list[Any] = []
        self.left_out: list[list[App]] = []
        """The applications each display's filter left out."""
        listed = apps or []

        class SCShareableContent:
            @staticmethod
            def getShareableContentWithCompletionHandler_(done: Any) -> None:
                content = type("Content", (), {"displays": lambda self: displays,
                                               "applications": lambda self: listed})()
                threading.Thread(target=done, args=(content, None)).start()

        class SCContentFilter:
            @classmethod
            def alloc(cls) -> SCContentFilter:
                return cls()

            def initWithDisplay_excludingApplications_exceptingWindows_(
                    self, display: Display, apps: list[App], windows: list[Any]) -> SCContentFilter:
                assert windows == []
                sck.left_out.append(list(apps))
                self.display = display
                return self

            def pointPixelScale(self) -> float:
                return self.display.scale

        class SCStreamConfiguration:
            @classmethod
            def alloc(cls) -> SCStreamConfiguration:
                return cls()

            def init(self) -> SCStreamConfiguration:
                sck.configs.append(self)
                return self

            def setWidth_(self, w: int) -> None:
                self.width = w

            def setHeight_(self, h: int) -> None:
                self.height = h

            def setShowsCursor_(self, shows: bool) -> None:
                self.cursor = shows

        class SCScreenshotManager:
            @staticmethod
            def captureImageWithFilter_configuration_completionHandler_(f: Any, c: Any, done: Any) -> None:
                if silent:
                    return
                picture = np.zeros((c.height, c.width, 3), np.uint8)
                picture[..., 0] = 200  # red: the channel order must survive
                picture[:, : c.width // 2, 2] = 90
                answer = (None, error) if error else (FakeImage(picture), None)
                threading.Thread(target=done, args=answer).start()

        self.SCShareableContent = SCShareableContent
        self.SCContentFilter = SCContentFilter
        self.SCStreamConfiguration = SCStreamConfiguration
        self.SCScreenshotManager = SCScreenshotManager


def test_each_display_is_taken_in_device_pixels_where_it_sits() -> None:
    sck = FakeSCK([Display(0, 0, 1512, 982, 2.0), Display(1512, -200, 1920, 1080, 1.0)])
    shots = capture_displays(sck, FakeQuartz())
    assert [s.frame for s in shots] == [(0, 0, 1512, 982), (1512, -200, 1920, 1080)]
    assert [s.pixels.shape for s in shots] == [(1964, 3024, 3), (1080, 1920, 3)]
    assert all(c.cursor is False for c in sck.configs)


def test_our_own_windows_are_left_out_of_every_display_and_nobody_elses() -> None:
    """The capture then need not hide our window first (no wait for it to leave the screen)."""
    ours, other = App(4242), App(77)
    sck = FakeSCK([Display(0, 0, 800, 600, 1.0), Display(800, 0, 800, 600, 1.0)], apps=[other, ours])
    capture_displays(sck, FakeQuartz(), leave_out=4242)
    assert sck.left_out == [[ours], [ours]]
    capture_displays(sck, FakeQuartz())  # nobody named: the whole screen
    assert sck.left_out[2:] == [[], []]


def test_the_picture_is_rgb_whatever_the_rows_padding() -> None:
    picture = np.random.default_rng(3).integers(0, 256, (7, 13, 3), dtype=np.uint8)
    assert np.array_equal(rgb_pixels(FakeQuartz(), FakeImage(picture)), picture)


def test_a_refusal_names_the_setting() -> None:
    sck = FakeSCK([Display(0, 0, 800, 600, 1.0)], error=Error(USER_DECLINED, "declined"))
    with pytest.raises(CaptureFailed, match="Screen & System Audio Recording"):
        capture_displays(sck, FakeQuartz())


def test_another_error_is_said_in_the_systems_words() -> None:
    sck = FakeSCK([Display(0, 0, 800, 600, 1.0)], error=Error(-3802, "The display is asleep"))
    with pytest.raises(CaptureFailed, match="The display is asleep"):
        capture_displays(sck, FakeQuartz())


def test_no_answer_is_a_message_not_a_hang() -> None:
    sck = FakeSCK([Display(0, 0, 800, 600, 1.0)], silent=True)
    with pytest.raises(CaptureFailed, match="did not hand over"):
        capture_displays(sck, FakeQuartz(), timeout_s=0.2)
