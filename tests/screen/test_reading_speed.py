"""How the reader spends its time (decision 0056): what it runs, on which threads, at which
sizes; each rule checked on the real engine, never how fast it is."""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any

import numpy as np
import pytest

from app.screen import ocr
from app.screen.ocr import (
    REC_MIN_WIDTH,
    SHARED_AT_MOST,
    STRIP_OVERLAP_PX,
    Reader,
    reading_threads,
    side_by_side,
    strips,
)
from app.screen.picture import DETECT_GLYPH_PX, Prepared, for_detection, prepare
from devtools.screen_pages import render


def test_importing_the_reader_and_making_one_loads_no_engine() -> None:
    """Start-up builds a Reader; the OCR libraries arrive with the first capture only."""
    code = ("import sys; from app.screen.ocr import Reader; Reader(); "
            "print(sorted(m for m in ('rapidocr', 'onnxruntime', 'cv2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class Spy:
    """The engine's ONNX Runtime calls: the input shapes, per model, and the threads."""

    def __init__(self, reader: Reader) -> None:
        engine, _ = reader._engine_now()
        self.engine = engine
        self.det: list[tuple[int, ...]] = []
        self.rec: list[tuple[int, ...]] = []
        self.threads: set[str] = set()
        for model in (engine._load_det_model(), engine._load_rec_model()):
            self._wrap(model.session)

    def _wrap(self, session: Any) -> None:
        run = session.__class__.__call__

        def call(x: np.ndarray) -> Any:
            (self.rec if x.shape[2] == 48 else self.det).append(x.shape)
            self.threads.add(threading.current_thread().name)
            return run(session, x)

        session.__class__ = type("Spied", (session.__class__,), {"__call__": lambda s, x: call(x)})


@pytest.fixture(scope="module")
def spied() -> tuple[Reader, Spy]:
    reader = Reader(threads=2)
    return reader, Spy(reader)


def test_each_line_is_recognised_alone_at_its_own_width(spied: tuple[Reader, Spy]) -> None:
    reader, spy = spied
    spy.rec.clear()
    reading = reader.read(render("problem").image)
    assert spy.rec and all(shape[0] == 1 for shape in spy.rec)  # no batch padded to its widest
    assert min(shape[3] for shape in spy.rec) < 320  # a line number is not padded to 320
    assert min(shape[3] for shape in spy.rec) >= REC_MIN_WIDTH
    assert len(spy.rec) >= len(reading.boxes)


def test_the_angle_classifier_is_never_loaded(spied: tuple[Reader, Spy]) -> None:
    reader, spy = spied
    reader.read(render("chat").image)
    assert spy.engine.text_cls is None


def test_the_detector_gets_smaller_glyphs_than_the_recogniser_crops_from(spied: tuple[Reader, Spy]) -> None:
    reader, spy = spied
    page = render("problem", scale=2)
    prepared = prepare(page.image)
    spy.det.clear()
    reader.read(page.image)
    assert spy.det and len({shape[3] for shape in spy.det}) == 1  # strips of rows, each the whole width
    ratio = spy.det[0][3] / prepared.image.shape[1]
    assert prepared.glyph_px is not None
    assert ratio == pytest.approx(DETECT_GLYPH_PX / (prepared.glyph_px * prepared.scale), rel=0.1)
    assert ratio < 0.9


def test_a_read_nobody_stops_is_detected_one_strip_per_worker_side_by_side(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers: the problem crop's detector image goes to both at once, in two strips."""
    reader = Reader(threads=2)
    spy = Spy(reader)
    inside = threading.Barrier(2, timeout=10)
    run = spy.engine.text_det.session.__class__.__call__

    def both_at_once(session: Any, x: np.ndarray) -> Any:
        inside.wait()  # only passes if the other strip is being detected meanwhile
        return run(session, x)

    monkeypatch.setattr(spy.engine.text_det.session.__class__, "__call__", both_at_once)
    reading = reader.read(render("problem").image)
    assert len(spy.det) == 2 and "class Solution" in reading.text


@pytest.mark.parametrize("height", [40, 100, 143, 144, 263, 830, 2160])
@pytest.mark.parametrize("workers", [1, 2, 4])
def test_strips_side_by_side_share_at_most_a_third_more_rows(height: int, workers: int) -> None:
    cuts = strips(height, 400, side_by_side(height, workers))  # narrow: no strip is too wide
    rows = sum(end - start for start, end in cuts)
    assert len(cuts) <= workers and rows <= height * (1 + SHARED_AT_MOST)
    assert len(cuts) == workers or len(cuts) * STRIP_OVERLAP_PX > height * SHARED_AT_MOST  # one more would


def test_detection_never_enlarges_and_leaves_small_text_alone() -> None:
    image = np.full((100, 200, 3), 255, np.uint8)
    small, factor = for_detection(Prepared(image, 1.0, DETECT_GLYPH_PX - 1))
    assert factor == 1.0 and small is image
    unmeasured, factor = for_detection(Prepared(image, 1.0, None))
    assert factor == 1.0 and unmeasured is image
    shrunk, factor = for_detection(Prepared(image, 0.5, 4 * DETECT_GLYPH_PX))  # 2x DETECT at this scale
    assert factor == pytest.approx(0.5) and shrunk.shape[:2] == (50, 100)


def test_the_reads_run_on_the_readers_own_workers_lowered_once_each(monkeypatch: pytest.MonkeyPatch) -> None:
    lowered: list[str] = []
    monkeypatch.setattr(ocr, "lower_this_thread", lambda: lowered.append(threading.current_thread().name))
    reader = Reader(threads=2)
    spy = Spy(reader)
    one = Reader(threads=1)
    page = render("problem")
    for _ in range(2):
        text = reader.read(page.image).text
    assert spy.threads and all(name.startswith("screen-read") for name in spy.threads)
    assert spy.threads <= set(lowered)  # every thread that ran a model was lowered first
    # shared out between two, put back in order; two strips' boxes differ from one image's by a
    # pixel or two, which may move a space inside a line (decision 0063), never a line or an indent
    assert _lines(text) == _lines(one.read(page.image).text)
    assert len(lowered) == 3  # once per worker: two for the reader, one for the other


def _lines(text: str) -> list[tuple[int, str]]:
    """Each line's indent and its characters but spaces."""
    return [(len(line) - len(line.lstrip()), line.replace(" ", "")) for line in text.splitlines()]


def test_reading_threads_take_every_core_up_to_four() -> None:
    assert [reading_threads(n) for n in (1, 2, 4, 16)] == [1, 2, 4, 4]
