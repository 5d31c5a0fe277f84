"""Reading a frozen screen while the candidate drags a region over it.

The drag itself takes a second or two; a read of a whole screen takes about as long on two
cores.  So the screen is read from the moment it is frozen, and when the region is let go
its text comes from the lines already read: the lines inside it as they are, the lines it
cuts through read again from their part inside it, and the lines inside it that the read
had not reached yet read then.  The detector's pass over the screen costs a few tenths of a
second more than over the region alone; every line read before the release is time saved.

No thread here is the UI's: the read runs on its own thread, below the listening work like
the reader's workers (decision 0056), and :meth:`ReadAhead.region` is called off the UI
thread too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from app.platform.priority import lower_this_thread
from app.screen.ocr import Corners, Line, Reader, Reading, extent
from app.screen.picture import Image, Prepared, prepare

_log = logging.getLogger(__name__)

PADDING_HEIGHTS = 0.25
"""How far past the region a line's box may reach, in its heights, and still be taken as
read: the detector pads each box by about a third of its height, so a region drawn tight
around the text cuts only padding, not glyphs."""


@dataclass(frozen=True, slots=True)
class Region:
    """A rectangle of the frozen screen, in its pixels: ``x0 <= x < x1``, ``y0 <= y < y1``."""

    x0: float
    y0: float
    x1: float
    y1: float


@dataclass(frozen=True, slots=True)
class Chosen:
    """A region let go over a screen being read ahead."""

    ahead: ReadAhead
    region: Region

    def reading(self) -> Reading | None:
        """Its text (blocks: call it off the UI thread); None: read its own pixels."""
        return self.ahead.region(self.region)

    def cancel(self) -> None:
        """Its text is not wanted after all."""
        self.ahead.cancel()


class ReadAhead:
    """One frozen screen being read in the background, for the region dragged over it."""

    def __init__(self, reader: Reader, screen: Callable[[], Image], language: str = "en") -> None:
        """``screen``: its pixels, fetched on the read's own thread (converting a 4K grab
        takes tens of milliseconds the UI need not wait)."""
        self._reader = reader
        self._language = language
        self._stop = threading.Event()
        self._ended = threading.Event()
        self._prepared: Prepared | None = None
        self._corners: list[Corners] | None = None
        self._lines: list[Line | None] = []
        self._toward: tuple[float, float] | None = None
        self.seconds: float | None = None
        """How long the read took until it ended (whole, stopped, or failed)."""
        threading.Thread(target=self._read, args=(screen,), name="screen-read-ahead", daemon=True).start()

    @property
    def done(self) -> bool:
        """Every line of the screen is read."""
        return (self._ended.is_set() and self._corners is not None
                and len(self._lines) == len(self._corners) and None not in self._lines)

    def toward(self, x: float, y: float) -> None:
        """The drag began here (the screen's pixels): its nearest lines are read first."""
        self._toward = (x, y)

    def _near(self) -> tuple[float, float] | None:
        point, prepared = self._toward, self._prepared
        return None if point is None or prepared is None else prepared.to_prepared(*point)

    def cancel(self) -> None:
        """Stop reading (the capture was cancelled, or the region was let go)."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the read has ended: for tests and benches."""
        return self._ended.wait(timeout)

    def region(self, region: Region) -> Reading | None:
        """The text in ``region`` (the screen's pixels), from the lines read so far and the
        rest of its lines read now; None if the screen was not through the detector by then
        (or failed): then read the region's own pixels."""
        self.cancel()
        if self._corners is None:
            return None  # not through the detector: the region alone is read no later
        self._ended.wait()  # the workers stop after the line each is on
        prepared, corners = self._prepared, self._corners
        if prepared is None:
            return None
        started = time.perf_counter()
        x0, y0 = prepared.to_prepared(region.x0, region.y0)
        x1, y1 = prepared.to_prepared(region.x1, region.y1)
        inside = Region(x0, y0, x1, y1)
        lines = self._lines or [None] * len(corners)
        whole, cut = sort_lines(corners, inside)
        kept = [lines[i] for i in whole if lines[i] is not None]
        missing = [corners[i] for i in whole if lines[i] is None] + [clip(corners[i], inside) for i in cut]
        kept += self._reader.recognise(prepared, missing)
        return self._reader.reading(kept, prepared, self._language, time.perf_counter() - started)

    def _read(self, screen: Callable[[], Image]) -> None:
        lower_this_thread()  # all of it may be thrown away: it never goes before listening
        started = time.perf_counter()
        try:
            prepared = prepare(screen())
            corners = self._reader.detect(prepared, self._stop)
            if corners is not None:
                self._prepared, self._corners = prepared, corners
                self._lines = self._reader.recognise(prepared, corners, self._stop, self._near)
        except Exception:  # the region's own read will say what is wrong
            _log.debug("the read ahead failed; the region is read alone", exc_info=True)
        self.seconds = time.perf_counter() - started
        self._ended.set()


def sort_lines(lines: list[Corners], region: Region) -> tuple[list[int], list[int]]:
    """Which lines are inside ``region`` (give or take their padding), and which it cuts
    through; lines outside it, or cut to less than half a glyph, are in neither."""
    inside: list[int] = []
    cut: list[int] = []
    for i, line in enumerate(lines):
        x0, y0, x1, y1 = extent(line)
        height = y1 - y0
        slack = PADDING_HEIGHTS * height
        if (x0 >= region.x0 - slack and x1 <= region.x1 + slack
                and y0 >= region.y0 - slack and y1 <= region.y1 + slack):
            inside.append(i)
            continue
        wide = min(x1, region.x1) - max(x0, region.x0)
        tall = min(y1, region.y1) - max(y0, region.y0)
        if wide >= height / 2 and tall >= height / 2:
            cut.append(i)
    return inside, cut


def clip(corners: Corners, region: Region) -> Corners:
    """A line's corners moved inside ``region``: the part of it the region shows."""
    return [[min(max(x, region.x0), region.x1), min(max(y, region.y0), region.y1)] for x, y in corners]
