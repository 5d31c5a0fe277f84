"""A dragged region in logical (desktop) coordinates to device pixels of each screen's grab.

Qt places screens in one logical desktop; each screen's grab has
``logical size x devicePixelRatio`` pixels.  A region dragged across the frozen screens is
cut from the screen that holds most of it (a problem's text is on one screen; a region
straddling two is clipped to the larger part rather than stitched from two scales).
Pure arithmetic, no Qt: tested at 2x and with mixed scales.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rect:
    x: float
    y: float
    width: float
    height: float

    @property
    def right(self) -> float:
        return self.x + self.width

    @property
    def bottom(self) -> float:
        return self.y + self.height

    def intersect(self, other: Rect) -> Rect | None:
        x, y = max(self.x, other.x), max(self.y, other.y)
        right, bottom = min(self.right, other.right), min(self.bottom, other.bottom)
        if right <= x or bottom <= y:
            return None
        return Rect(x, y, right - x, bottom - y)

    @staticmethod
    def spanning(x0: float, y0: float, x1: float, y1: float) -> Rect:
        """The rectangle two corners of a drag span, whichever way it went."""
        return Rect(min(x0, x1), min(y0, y1), abs(x1 - x0), abs(y1 - y0))


@dataclass(frozen=True, slots=True)
class ScreenGeometry:
    logical: Rect
    """Where the screen sits in the desktop, logical pixels."""
    ratio: float
    """Device pixels per logical pixel (2 on a Retina display, 1.25 at 125 % on Windows)."""
    pixels: tuple[int, int] | None = None
    """(width, height) of its grab in device pixels, when known (else logical x ratio)."""


@dataclass(frozen=True, slots=True)
class Crop:
    screen: int
    """Index of the screen whose grab it is cut from."""
    x: int
    y: int
    width: int
    height: int
    """Device pixels within that screen's grab."""


def screen_at(x: float, y: float, screens: list[ScreenGeometry]) -> tuple[int, float, float]:
    """The screen holding the point (logical, desktop coordinates; the first screen if none
    does): its index, and the point in its grab's device pixels."""
    index = next((i for i, s in enumerate(screens)
                  if s.logical.x <= x < s.logical.right and s.logical.y <= y < s.logical.bottom), 0)
    screen = screens[index]
    return index, (x - screen.logical.x) * screen.ratio, (y - screen.logical.y) * screen.ratio


MIN_LOGICAL = 8
"""A drag smaller than this (logical px, either side) is a click, not a region."""


def device_crop(region: Rect, screens: list[ScreenGeometry]) -> Crop | None:
    """The device-pixel crop for ``region`` (logical, desktop coordinates), or None when it is
    too small or on no screen."""
    if region.width < MIN_LOGICAL or region.height < MIN_LOGICAL:
        return None
    best: tuple[float, int, Rect] | None = None
    for index, screen in enumerate(screens):
        part = region.intersect(screen.logical)
        if part is not None and (best is None or part.width * part.height > best[0]):
            best = (part.width * part.height, index, part)
    if best is None:
        return None
    _, index, part = best
    screen = screens[index]
    full_w, full_h = screen.pixels or (round(screen.logical.width * screen.ratio),
                                       round(screen.logical.height * screen.ratio))
    x0 = round((part.x - screen.logical.x) * screen.ratio)
    y0 = round((part.y - screen.logical.y) * screen.ratio)
    x1 = round((part.right - screen.logical.x) * screen.ratio)
    y1 = round((part.bottom - screen.logical.y) * screen.ratio)
    x0, y0 = max(0, min(x0, full_w)), max(0, min(y0, full_h))
    x1, y1 = max(x0, min(x1, full_w)), max(y0, min(y1, full_h))
    if x1 - x0 < 1 or y1 - y0 < 1:
        return None
    return Crop(index, x0, y0, x1 - x0, y1 - y0)
