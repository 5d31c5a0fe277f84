"""RapidOCR with the models its wheel carries: loaded on the first capture, read in order.

The PP-OCRv6 small detector and recogniser (one model for Chinese and English, Apache-2.0)
ship inside the ``rapidocr`` wheel; their paths are given explicitly so nothing is ever
fetched from a model hub.  The angle classifier is off: screen text is upright.  The
engine is built on the first :meth:`Reader.read` (importing it alone takes a second, and
a session that never captures never pays it), then kept warm; reads are serialised.

Where the time goes is the recogniser (decision 0056): each line is recognised alone (no
padding to a batch's widest line), the lines shared between the reader's own worker
threads, one ONNX Runtime thread each, all below the listening work's priority, so a
capture takes the cores a question being heard leaves and never the recogniser's.  The
detector gets a smaller image than the recogniser crops from (:func:`for_detection`).
"""

from __future__ import annotations

import re
import threading
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.platform.cores import MAX_THREADS, cores
from app.platform.priority import lower_this_thread
from app.screen.errors import NothingReadable, OcrUnavailable
from app.screen.layout import Box, box_from_points, reading_order
from app.screen.picture import Image, check_not_one_colour, for_detection, prepare

DETECTOR = "PP-OCRv6_det_small.onnx"
RECOGNISER = "PP-OCRv6_rec_small.onnx"
_NUMBER = re.compile(r"\d{1,4}")
_JOINED = re.compile(r"(\d{1,4})\s+(\S.*)")
REC_BATCH = 1
"""Lines recognised per run: one.  A batch is padded to its widest line, and a page's lines
run from a line number to a whole sentence; alone they read the same text in 0.6 of the
time on one thread (decision 0056)."""
REC_MIN_WIDTH = 48
"""The narrowest input the recogniser is given (px at its 48 px height): a line number is
not padded to RapidOCR's 320."""
MIN_SCORE = 0.5
"""RapidOCR's own default text score: below it a box is noise (a cursor, an icon)."""
_ASCII_PUNCTUATION = str.maketrans({"，": ",", "：": ":", "；": ";", "（": "(", "）": ")", "！": "!",
                                    "？": "?", "【": "[", "】": "]", "“": '"', "”": '"', "‘": "'", "’": "'"})


@dataclass(frozen=True, slots=True)
class Reading:
    text: str
    """In reading order, code indented."""
    boxes: tuple[Box, ...]
    seconds: float
    """Time spent reading (preparing, detecting, recognising), not loading."""
    scale: float


def model_folder() -> Path:
    """The folder of RapidOCR's bundled models (found without importing the engine)."""
    import importlib.util

    spec = importlib.util.find_spec("rapidocr")
    if spec is None or spec.origin is None:
        raise OcrUnavailable("the screen reader is not installed (the rapidocr package is missing)")
    return Path(spec.origin).parent / "models"


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
        with self._lock:
            engine, pool = self._engine_now()
            started = time.perf_counter()
            prepared = prepare(image)
            corners = pool.submit(_detect, engine, *for_detection(prepared)).result()
            lines = _recognise(engine, pool, self._threads, prepared.image, corners)
            seconds = time.perf_counter() - started
        boxes = [box_from_points(c, _normalise(text, language), score)
                 for c, (text, score) in zip(corners, lines, strict=True)
                 if score >= MIN_SCORE and text.strip()]
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
        for name in (DETECTOR, RECOGNISER):
            if not (folder / name).is_file():
                raise OcrUnavailable(f"the screen reader's model {name} is missing from {folder}: "
                                     "reinstall Interview Copilot")
        try:
            from rapidocr import RapidOCR

            self._engine = RapidOCR(params={
                "Global.use_cls": False,
                "Global.log_level": "error",
                "Global.max_side_len": 8192,  # prepare() has sized it already
                "Det.model_path": str(folder / DETECTOR),
                "Rec.model_path": str(folder / RECOGNISER),
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


def _detect(engine: Any, image: Image, factor: float) -> list[list[list[float]]]:
    """The lines' corners found on ``image`` (``factor`` times the prepared image), in the
    prepared image's pixels."""
    result = engine(image, use_det=True, use_cls=False, use_rec=False)
    points = getattr(result, "boxes", None)
    return [] if points is None else (np.asarray(points, dtype=np.float64) / factor).tolist()


def _recognise(engine: Any, pool: ThreadPoolExecutor, workers: int, image: Image,
               corners: list[list[list[float]]]) -> list[tuple[str, float]]:
    """Each line's text and score, in ``corners``' order: the lines, by width, dealt in
    turn to ``workers`` threads so each gets a like share."""
    if not corners:
        return []
    crops = engine.crop_text_regions(image, np.asarray(corners, dtype=np.float32))
    order = sorted(range(len(crops)), key=lambda i: crops[i].shape[1] / max(1, crops[i].shape[0]))
    shares = [order[k::workers] for k in range(min(workers, len(crops)))]
    results = pool.map(lambda share: _recognised(engine, [crops[i] for i in share]), shares)
    out: list[tuple[str, float]] = [("", 0.0)] * len(crops)
    for share, result in zip(shares, results, strict=True):
        for i, line in zip(share, result, strict=True):
            out[i] = line
    return out


def _recognised(engine: Any, crops: list[Image]) -> list[tuple[str, float]]:
    result = engine.recognize_txt(crops)
    return [(str(t), float(s)) for t, s in zip(result.txts, result.scores, strict=True)]


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
