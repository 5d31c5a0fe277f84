"""The screen read while the region is dragged: the region's text reads as well as the
region alone, whenever it is let go; the detector's strips find each line once."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein

from app.screen import ahead as ahead_module
from app.screen.ahead import PADDING_HEIGHTS, ReadAhead, Region, clip, sort_lines
from app.screen.ocr import (
    STRIP_OVERLAP_PX,
    STRIP_PX,
    WIDEST_STRIP,
    Reader,
    _distance,
    _one_box_a_line,
    extent,
    strips,
)
from app.screen.picture import Image, prepare
from devtools.screen_pages import Page, render
from tests.patience import NEVER_S

PROBLEM_AT = (40, 30)
CHAT_AT = (300, 520)
AS_WELL = 0.005
"""A read ahead's error rate may be this much above the region's own read: one character
in 200 (a space).  The screen's ink is levelled over the whole screen, not the region, so
a line's pixels, and now and then a space, can differ; either way can be the better."""


@pytest.fixture(scope="module")
def reader() -> Reader:
    return Reader()


@pytest.fixture(scope="module")
def desk() -> tuple[Image, Page, Page]:
    """A 1400x720 screen: a two-pane problem page above a chat, white around them."""
    screen = np.full((720, 1400, 3), 255, np.uint8)
    problem, chat = render("problem"), render("chat", text_px=14)
    for page, (x, y) in ((problem, PROBLEM_AT), (chat, CHAT_AT)):
        h, w = page.image.shape[:2]
        screen[y:y + h, x:x + w] = page.image
    return screen, problem, chat


def around(page: Page, at: tuple[int, int], margin: int) -> Region:
    h, w = page.image.shape[:2]
    return Region(at[0] - margin, at[1] - margin, at[0] + w + margin, at[1] + h + margin)


def cut(screen: Image, region: Region) -> Image:
    return screen[int(region.y0):int(region.y1), int(region.x0):int(region.x1)]


def cer(read: str, expected: str) -> float:
    return Levenshtein.distance(read, expected) / max(1, len(expected))


def test_a_region_let_go_after_the_read_reads_as_well_as_the_region_alone(
        reader: Reader, desk: tuple[Image, Page, Page]) -> None:
    screen, problem, chat = desk
    ahead = ReadAhead(reader, lambda: screen)
    assert ahead.wait(NEVER_S) and ahead.done
    for page, at in ((problem, PROBLEM_AT), (chat, CHAT_AT)):
        for margin in (12, 0):  # drawn loosely, and tight on the page's edge
            region = around(page, at, margin)
            reading = ahead.region(region)
            assert reading is not None
            alone = reader.read(cut(screen, region)).text
            assert cer(reading.text, page.expected) <= cer(alone, page.expected) + AS_WELL
    statement, code = ahead.region(around(problem, PROBLEM_AT, 12)).text.split("\n\n")  # type: ignore[union-attr]
    assert code.splitlines() == problem.expected.split("\n\n")[1].splitlines()  # indented, in order
    assert "Interviewer" not in statement


def test_lines_the_region_cuts_through_are_read_from_their_part_inside_it(
        reader: Reader, desk: tuple[Image, Page, Page]) -> None:
    screen = desk[0]
    ahead = ReadAhead(reader, lambda: screen)
    ahead.wait(NEVER_S)
    x, y = PROBLEM_AT
    left_pane = Region(x, y, x + 640 + 20, y + 400)  # the statement and the editor's edge
    reading = ahead.region(left_pane)
    assert reading is not None
    assert reading.text.splitlines()[0] == "1. Two Sum"
    assert "def two_sum" not in reading.text and "Interviewer" not in reading.text


def test_a_region_let_go_early_reads_as_well_as_once_the_screen_is_read(
        reader: Reader, desk: tuple[Image, Page, Page]) -> None:
    """However little of the screen was read, the region's text is the same (or, before
    the detector is through, None: the region's pixels are read instead)."""
    screen, problem, _ = desk
    region = around(problem, PROBLEM_AT, 12)
    whole = ReadAhead(reader, lambda: screen)
    whole.wait(NEVER_S)
    expected = whole.region(region)
    assert expected is not None
    for head_start in (0.0, 0.2, 0.6):
        ahead = ReadAhead(reader, lambda: screen)
        threading.Event().wait(head_start)
        reading = ahead.region(region)
        assert reading is None or reading.text == expected.text


def test_a_cancelled_read_stops_and_frees_the_reader(reader: Reader, desk: tuple[Image, Page, Page]) -> None:
    screen, _, chat = desk
    ahead = ReadAhead(reader, lambda: screen)
    ahead.cancel()
    assert ahead.wait(NEVER_S) and not ahead.done
    assert "Interviewer" in reader.read(chat.image).text


def test_a_stop_set_before_recognition_leaves_every_line_unread(reader: Reader) -> None:
    prepared = prepare(render("chat").image)
    corners = reader.detect(prepared)
    assert corners
    stop = threading.Event()
    stop.set()
    assert reader.recognise(prepared, corners, stop) == [None] * len(corners)
    assert reader.detect(prepared, stop) is None


def test_a_screen_that_cannot_be_read_ahead_leaves_the_region_to_its_own_read(reader: Reader) -> None:
    def broken() -> Image:
        raise OSError("the grab went away")

    ahead = ReadAhead(reader, broken)
    assert ahead.region(Region(0, 0, 100, 100)) is None


# --- the rules, without the models -------------------------------------------------------


@pytest.mark.parametrize(("height", "width"), [(100, 800), (263, 1118), (263, 1438), (830, 1498),
                                               (1200, 2000), (2160, 3840), (257, 300)])
def test_strips_cover_every_row_share_the_overlap_and_are_never_padded(height: int, width: int) -> None:
    cuts = strips(height, width)
    assert cuts[0][0] == 0 and cuts[-1][1] == height
    for (_, end), (start, _) in itertools.pairwise(cuts):
        assert end - start >= STRIP_OVERLAP_PX
    if len(cuts) > 1:
        assert all(width / (end - start) <= WIDEST_STRIP for start, end in cuts)
    tallest = max(end - start for start, end in cuts)
    one_more = (height + len(cuts) * STRIP_OVERLAP_PX) / (len(cuts) + 1)  # each strip's height
    assert tallest <= STRIP_PX or width / one_more > WIDEST_STRIP  # as many as go unpadded


def box(x0: float, y0: float, x1: float, y1: float) -> list[list[float]]:
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def test_a_line_found_whole_in_one_strip_and_cut_in_the_next_is_kept_once() -> None:
    whole, half, beside, below = box(10, 100, 400, 120), box(10, 110, 400, 120), box(450, 100, 700, 120), \
        box(10, 126, 400, 146)
    assert sorted(_one_box_a_line([half, whole, beside, below])) == sorted([whole, beside, below])


def test_lines_inside_cut_and_outside_a_region() -> None:
    height = 20.0
    pad = PADDING_HEIGHTS * height
    lines = [box(10, 10, 200, 30),                       # inside
             box(10 - pad + 1, 40, 200, 60),             # past the left edge by padding only
             box(10, 70, 400, 90),                       # cut by the right edge
             box(500, 10, 600, 30),                      # outside
             box(10, 98, 200, 118)]                      # under the bottom edge by a sliver
    inside, through = sort_lines(lines, Region(10, 0, 300, 100))
    assert inside == [0, 1] and through == [2]
    assert clip(lines[2], Region(10, 0, 300, 100)) == box(10, 70, 300, 90)


def test_the_lines_nearest_where_the_drag_began_are_read_first() -> None:
    reader = Reader(threads=1)  # one worker: the order is the order asked
    prepared = prepare(render("problem").image)
    corners = reader.detect(prepared)
    assert corners is not None and len(corners) > 10
    start = (prepared.image.shape[1] * 0.75, 0.0)  # the editor pane's top
    stop, asked = threading.Event(), []

    def near() -> tuple[float, float]:
        asked.append(start)
        if len(asked) == 4:
            stop.set()  # after this line
        return start

    lines = reader.recognise(prepared, corners, stop, near)
    distance = [_distance(extent(c), start) for c in corners]
    read = [i for i, line in enumerate(lines) if line is not None]
    unread = [i for i, line in enumerate(lines) if line is None]
    assert len(read) == 4 and max(distance[i] for i in read) <= min(distance[i] for i in unread)
    assert any("class Solution" in (lines[i].text if lines[i] else "") for i in read)  # type: ignore[union-attr]


def test_the_read_ahead_runs_below_the_listening_work(reader: Reader,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """All of it may be thrown away, so even its own thread (the screen's conversion and
    preparing) is lowered, not only the reader's workers."""
    lowered: list[str] = []
    name = threading.current_thread
    monkeypatch.setattr(ahead_module, "lower_this_thread", lambda: lowered.append(name().name))
    ReadAhead(reader, lambda: render("chat").image).wait(NEVER_S)
    assert lowered == ["screen-read-ahead"]
