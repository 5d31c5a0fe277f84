"""A capture checked and prepared for the recogniser: one colour refused, text scaled, ink dark.

- A capture that is all one colour (macOS without the Screen Recording permission gives
  the wallpaper or black; a locked screen; a black frame) is never read or sent: it is
  named, with the fix.
- Text is brought to the size the detector reads best and fastest: a 2x screen's text is
  halved (four times fewer pixels to detect), very small text is enlarged.  The size is
  measured on the page (the median height of its glyphs), not taken from the screen's
  scale, so a screenshot file reads the same as a live capture.
- Only the part with ink is detected (its bounding box): a whole screen around a problem
  is mostly empty, and detection costs by the pixel.
- Whatever the theme, the recogniser gets dark ink on white: each pixel's distance from
  the local background colour (estimated on a coarse grid), so light-on-dark editors,
  coloured syntax and a dark pane beside a light one all come out the same.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from app.screen.errors import NotAnImage, OneColour

Image = npt.NDArray[np.uint8]

MAX_PIXELS = 40_000_000
"""Larger than three 4K screens side by side: anything bigger is not a screen capture."""
ONE_COLOUR_SPREAD = 12
"""Channel values within this many levels of each other everywhere: one colour (a JPEG's
noise on a flat frame stays within a few levels; the faintest text a person reads, grey on
white, is 60 or more apart)."""
GLYPH_TARGET_PX = 11.0
"""The glyph height (median connected component: about a capital's) the detector gets: the
size of 16 px body text at 1x, which both PP-OCR models read at their best."""
KEEP_SCALE = (0.7, 1.6)
"""Scale factors this close to 1 are not applied: resampling native pixels blurs them."""
MIN_SCALE, MAX_SCALE = 0.25, 2.0
INK_LEVEL = 40
"""Distance from the background above which a pixel counts as ink (for measuring glyphs)."""
DETECT_GLYPH_PX = 9.0
"""The glyph height the detector is given (the recogniser still crops from the prepared
image): finding lines needs less detail than reading them, and detection costs by the
pixel.  At 8 px one space of the rendered corpus went missing ("Example1:"), at 9 none
(bench screen, decision 0056); smaller text is never shrunk for detection."""
CONTENT_MARGIN = 16
"""Blank pixels kept around the text: the detector needs some background at the edges."""
BACKGROUND_CELL = 16
"""The background is estimated on a grid this coarse (px), then smoothed over 5 cells: a
glyph never fills a cell's neighbourhood, a pane's edge is kept within a cell."""


@dataclass(frozen=True, slots=True)
class Prepared:
    image: Image
    """Dark ink on white, RGB, at ``scale`` times the capture's size."""
    scale: float
    glyph_px: float | None
    """The capture's median glyph height (None: no glyph found)."""
    origin: tuple[int, int] = (0, 0)
    """Where the prepared image's top left is in the capture (x, y; capture pixels): only
    the part with ink is kept."""

    def to_prepared(self, x: float, y: float) -> tuple[float, float]:
        """A point of the capture in the prepared image's pixels."""
        return (x - self.origin[0]) * self.scale, (y - self.origin[1]) * self.scale


def load(path: Path) -> Image:
    """An image file as RGB; :class:`NotAnImage` for anything else (one line, no traceback)."""
    from PIL import Image as PilImage
    from PIL import UnidentifiedImageError

    try:
        with PilImage.open(path) as opened:
            if opened.width * opened.height > MAX_PIXELS:
                raise NotAnImage(f"{path}: {opened.width}x{opened.height} is too large for a screen capture")
            rgb = opened.convert("RGB")
    except FileNotFoundError:
        raise NotAnImage(f"{path}: no such file") from None
    except IsADirectoryError:
        raise NotAnImage(f"{path}: is a folder, not an image") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise NotAnImage(f"{path}: not an image ({_reason(exc)})") from None
    return np.asarray(rgb, dtype=np.uint8)


def as_rgb(pixels: npt.NDArray[np.generic]) -> Image:
    """Grey, RGB or RGBA pixels (from a screen grab) as RGB uint8."""
    array = np.asarray(pixels)
    if array.ndim == 2:
        array = np.stack([array] * 3, axis=-1)
    if array.ndim != 3 or array.shape[2] not in (3, 4) or min(array.shape[:2]) < 1:
        raise NotAnImage(f"not an image: pixels of shape {array.shape}")
    return np.ascontiguousarray(array[:, :, :3], dtype=np.uint8)


def check_not_one_colour(image: Image) -> None:
    """:class:`OneColour` for a capture with nothing on it, with the platform's fix."""
    sample = image[:: max(1, image.shape[0] // 400), :: max(1, image.shape[1] // 400)]
    spread = int((sample.max(axis=(0, 1)).astype(np.int16) - sample.min(axis=(0, 1))).max())
    if spread <= ONE_COLOUR_SPREAD:
        full = int((image.max(axis=(0, 1)).astype(np.int16) - image.min(axis=(0, 1))).max())
        if full <= ONE_COLOUR_SPREAD:
            raise OneColour(one_colour_message(image))


def one_colour_message(image: Image, platform: str | None = None) -> str:
    colour = "black" if int(image.max()) <= 16 else "one colour"
    platform = platform or sys.platform
    if platform == "darwin":
        fix = ("grant Screen Recording in System Settings → Privacy & Security → "
               "Screen & System Audio Recording, then capture again")
    elif platform == "win32":
        fix = "unlock the screen, and capture a window that is not minimised or protected"
    else:
        fix = "unlock the screen; on Wayland, choose the screen in the desktop's picker"
    return f"the capture is all {colour}: nothing on it to read ({fix})"


def prepare(image: Image) -> Prepared:
    """Scale and ink for the recogniser (see the module)."""
    import cv2

    ink, origin = _content(_ink(image))
    glyph = _glyph_height(ink)
    scale = 1.0
    if glyph is not None:
        wanted = GLYPH_TARGET_PX / glyph
        if not KEEP_SCALE[0] <= wanted <= KEEP_SCALE[1]:
            scale = min(MAX_SCALE, max(MIN_SCALE, wanted))
    if scale != 1.0:
        size = (max(1, round(ink.shape[1] * scale)), max(1, round(ink.shape[0] * scale)))
        method = cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC
        ink = np.asarray(cv2.resize(ink, size, interpolation=method), dtype=np.uint8)
    level = np.percentile(ink[ink > INK_LEVEL], 90) if (ink > INK_LEVEL).any() else 255.0
    dark = 255 - np.clip(ink.astype(np.float32) * (230.0 / max(float(level), 1.0)), 0, 255).astype(np.uint8)
    return Prepared(np.ascontiguousarray(np.stack([dark] * 3, axis=-1)), scale, glyph, origin)


def for_detection(prepared: Prepared) -> tuple[Image, float]:
    """The prepared image shrunk to :data:`DETECT_GLYPH_PX` glyphs, and the factor applied."""
    import cv2

    glyph = prepared.glyph_px * prepared.scale if prepared.glyph_px is not None else None
    if glyph is None or glyph <= DETECT_GLYPH_PX:
        return prepared.image, 1.0
    factor = DETECT_GLYPH_PX / glyph
    h, w = prepared.image.shape[:2]
    size = (max(1, round(w * factor)), max(1, round(h * factor)))
    return np.asarray(cv2.resize(prepared.image, size, interpolation=cv2.INTER_AREA), dtype=np.uint8), factor


def _ink(image: Image) -> npt.NDArray[np.uint8]:
    """Each pixel's largest channel distance from the local background (0 = background)."""
    import cv2

    h, w = image.shape[:2]
    small = cv2.resize(image, (max(1, w // BACKGROUND_CELL), max(1, h // BACKGROUND_CELL)),
                       interpolation=cv2.INTER_AREA)
    if min(small.shape[:2]) >= 5:
        small = cv2.medianBlur(small, 5)
    background = cv2.resize(small, (w, h), interpolation=cv2.INTER_NEAREST)
    distance = cv2.absdiff(image, background)
    return np.asarray(distance.max(axis=2), dtype=np.uint8)


def _content(ink: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.uint8], tuple[int, int]]:
    """The ink's bounding box with a margin, and its top left: the detector's time grows
    with the pixels it is given, and most of a whole screen around a problem is empty."""
    rows = np.flatnonzero((ink > INK_LEVEL).any(axis=1))
    columns = np.flatnonzero((ink > INK_LEVEL).any(axis=0))
    if rows.size == 0:
        return ink, (0, 0)
    top, bottom = max(0, rows[0] - CONTENT_MARGIN), min(ink.shape[0], rows[-1] + 1 + CONTENT_MARGIN)
    left, right = max(0, columns[0] - CONTENT_MARGIN), min(ink.shape[1], columns[-1] + 1 + CONTENT_MARGIN)
    return np.ascontiguousarray(ink[top:bottom, left:right]), (int(left), int(top))


def _glyph_height(ink: npt.NDArray[np.uint8]) -> float | None:
    """The median height of the ink's connected components that look like glyphs."""
    import cv2

    binary = (ink > INK_LEVEL).astype(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(binary, connectivity=8)
    if count <= 1:
        return None
    heights = stats[1:, cv2.CC_STAT_HEIGHT]
    widths = stats[1:, cv2.CC_STAT_WIDTH]
    glyphs = heights[(heights >= 4) & (heights <= 300) & (widths <= heights * 3) & (widths >= 1)]
    if glyphs.size < 3:
        return None
    return float(np.median(glyphs))


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:120]


def png_bytes(image: Image) -> bytes:
    """The capture as PNG (for an endpoint that takes images, or the session's copy)."""
    import cv2

    ok, encoded = cv2.imencode(".png", np.ascontiguousarray(image[:, :, ::-1]))
    if not ok:
        raise NotAnImage("the capture could not be encoded as PNG")
    return bytes(encoded.tobytes())
