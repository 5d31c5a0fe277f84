"""Reading order: the OCR's boxes back into text as a person reads the screen.

The recogniser returns one box per run of text, ordered by height on the page, so the
two panes of a problem page come out interleaved line by line.  Here:

1. boxes are grouped into *rows* (boxes whose vertical extents overlap);
2. runs of rows that share an empty vertical band (a gutter between two panes, at least
   :data:`GUTTER_HEIGHTS` text heights wide, over at least two rows) are *columns*: the
   left one is read whole before the right one, recursively (a pane can hold panes);
3. a column whose every box is a small integer is an editor's line numbers and dropped;
4. within a block of rows, each row's words are joined with as many spaces as their gap
   is wide, and a code block's lines are indented by their left edge, in characters of
   the block's own width (monospace code is what indentation means anything in).

Only positions are used, never the words: the same rules read any language.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

GUTTER_HEIGHTS = 1.5
"""The narrowest gap between panes, in text heights: wider than the widest space a line's
words leave between them (a recogniser joins a sentence's words into one box; two columns of
a table or code and its aligned comment are apart by more than a word space, and are read
in the order a column is), narrower than any pane gutter an IDE or a browser draws (>= 16 px
on 14 px text)."""
RUN_SLACK = 3
"""Rows tried past the last that still split: line numbers are told from a column of
text only from the third number on, so a run's first rows split only with the rows after."""
LINE_NUMBER_HEIGHTS = 0.1
"""The narrowest gap between an editor's line numbers and its code, in text heights: editors
leave a character's width, but the detector pads each box by about a third of its height on
either side, so the two boxes can all but touch; a column of three or more small integers
is what tells it from a word space."""
BLANK_LINE_HEIGHTS = 0.9
"""A vertical gap above a row wider than this many text heights ends a paragraph."""
_CODE = re.compile(
    r"[{};]\s*$|[=(]\S|\b(def|class|return|for|while|if|elif|else|import|from|public|private|static|"
    r"int|void|func|fn|let|const|var|function|struct|impl|try|except|catch|throw|raise)\b|^\s*(#|//)"
)
_LINE_NUMBER = re.compile(r"^\d{1,4}$")


@dataclass(frozen=True, slots=True)
class Box:
    """One run of text the recogniser read: its upright bounds in image pixels."""

    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    score: float = 1.0

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def char_width(self) -> float:
        return (self.x1 - self.x0) / max(1, _cells(self.text))


def box_from_points(points: Sequence[Sequence[float]], text: str, score: float = 1.0) -> Box:
    """A box from the recogniser's four corners (any order)."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return Box(min(xs), min(ys), max(xs), max(ys), text, score)


def reading_order(boxes: Sequence[Box]) -> str:
    """The text of ``boxes`` as read: panes whole, left before right; code indented."""
    boxes = [b for b in boxes if b.text.strip()]
    if not boxes:
        return ""
    height = statistics.median(b.height for b in boxes)
    blocks = _blocks(boxes, height)
    return "\n\n".join(text for text in (_block_text(rows, height) for rows in blocks) if text)


# --- rows and columns ---------------------------------------------------------------------


def _rows(boxes: Sequence[Box]) -> list[list[Box]]:
    """Boxes whose vertical middles fall inside one another's extent, top to bottom."""
    rows: list[list[Box]] = []
    for box in sorted(boxes, key=lambda b: (b.y0 + b.y1) / 2):
        middle = (box.y0 + box.y1) / 2
        if rows:
            top = min(b.y0 for b in rows[-1])
            bottom = max(b.y1 for b in rows[-1])
            row_middle = (top + bottom) / 2
            if top <= middle <= bottom or box.y0 <= row_middle <= box.y1:
                rows[-1].append(box)
                continue
        rows.append([box])
    return [sorted(row, key=lambda b: b.x0) for row in rows]


def _blocks(boxes: Sequence[Box], height: float) -> list[list[list[Box]]]:
    """Blocks of rows in reading order: a run of rows split by a gutter is read column by
    column (each recursively); rows outside any such run form blocks of their own."""
    rows = _rows(boxes)
    out: list[list[list[Box]]] = []
    pending: list[list[Box]] = []
    i = 0
    while i < len(rows):
        end, cut = _column_run(rows, i, height)
        if cut is None:
            pending.append(rows[i])
            i += 1
            continue
        if pending:
            out.append(pending)
            pending = []
        run = [b for row in rows[i:end] for b in row]
        left = [b for b in run if b.x1 <= cut]
        right = [b for b in run if b.x0 >= cut]
        for side in (left, right):
            if not _is_gutter(side):
                out.extend(_blocks(side, height))
        i = end
    if pending:
        out.append(pending)
    return out


def _column_run(rows: Sequence[list[Box]], start: int, height: float) -> tuple[int, float | None]:
    """The longest run of rows from ``start`` (at least two) that one gutter splits, and the
    gutter's middle; (start + 1, None) when no run starts here."""
    best: tuple[int, float | None] = (start + 1, None)
    for end in range(start + 2, len(rows) + 1):
        run = [b for row in rows[start:end] for b in row]
        cut = _gutter(run, height)
        if cut is not None:
            best = (end, cut)
        elif end - best[0] >= RUN_SLACK:
            break
    return best


def _gutter(boxes: Sequence[Box], height: float) -> float | None:
    """The middle of the widest empty vertical band between boxes that splits them into two
    panes side by side: wide enough (or an editor's line numbers on its left, which sit
    closer to the code than a gutter), with text on both sides overlapping in height."""
    spans = sorted((b.x0, b.x1) for b in boxes)
    bands: list[tuple[float, float]] = []  # (width, middle)
    reach = spans[0][1]
    for x0, x1 in spans[1:]:
        if x0 > reach:
            bands.append((x0 - reach, (x0 + reach) / 2))
        reach = max(reach, x1)
    for width, cut in sorted(bands, reverse=True):
        left = [b for b in boxes if b.x1 <= cut]
        right = [b for b in boxes if b.x0 >= cut]
        numbers = _is_gutter(left) and len(right) >= len(left) / 2
        if width < (LINE_NUMBER_HEIGHTS if numbers else GUTTER_HEIGHTS) * height:
            continue
        if len(_rows(left)) < 2 or len(_rows(right)) < 2:
            continue  # a wide space in a line, or a label beside its value: read left to right
        if _overlap(left, right):
            return cut
    return None


def _overlap(left: Sequence[Box], right: Sequence[Box]) -> bool:
    top = max(min(b.y0 for b in left), min(b.y0 for b in right))
    bottom = min(max(b.y1 for b in left), max(b.y1 for b in right))
    return bottom > top


def _is_gutter(boxes: Sequence[Box]) -> bool:
    """An editor's line numbers: a column of small integers, three or more."""
    return len(boxes) >= 3 and all(_LINE_NUMBER.match(b.text.strip()) for b in boxes)


# --- text of a block ----------------------------------------------------------------------


def _block_text(rows: Sequence[list[Box]], height: float) -> str:
    if not rows:
        return ""
    widths = [b.char_width for row in rows for b in row if _cells(b.text) >= 3]
    char = statistics.median(widths) if widths else height / 2
    lines = [_row_text(row, char) for row in rows]
    code = sum(bool(_CODE.search(line)) for line in lines) * 2 >= len(lines)
    left = min(row[0].x0 for row in rows)
    indents = [round((row[0].x0 - left) / char) if code else 0 for row in rows]
    indents = _snap(indents)
    out: list[str] = []
    for i, (row, line, indent) in enumerate(zip(rows, lines, indents, strict=True)):
        if i and row[0].y0 - max(b.y1 for b in rows[i - 1]) > BLANK_LINE_HEIGHTS * height:
            out.append("")
        out.append(" " * indent + line)
    return "\n".join(out)


def _row_text(row: Sequence[Box], char: float) -> str:
    text = row[0].text.strip()
    for before, box in itertools.pairwise(row):
        gap = box.x0 - before.x1
        text += " " * max(1, round(gap / char)) + box.text.strip()
    return text


def _snap(indents: list[int]) -> list[int]:
    """Indents as a multiple of the code's step (2 or 4 spaces) when they are all close to
    one: a box's left edge is off by a pixel or two, a character is seven."""
    levels = sorted({i for i in indents if i > 0})
    if not levels:
        return indents
    for step in (4, 2):
        if all(abs(i - step * round(i / step)) <= 1 for i in levels) and levels[0] >= step - 1:
            return [step * round(i / step) for i in indents]
    return indents


def _cells(text: str) -> int:
    """Monospace cells: a CJK character takes two."""
    return sum(2 if ord(c) >= 0x2E80 else 1 for c in text)
