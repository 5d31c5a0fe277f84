"""``bench screen``: another tree's reader is loaded beside ours, not instead; a page dragged
over a whole screen is placed where its region is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.screen import ocr
from devtools.bench.screen import _against_summary, _read_ahead_summary, on_a_screen, reader_of
from devtools.screen_pages import render


def test_another_trees_reader_loads_beside_ours(tmp_path: Path) -> None:
    theirs = tmp_path / "app" / "screen"
    theirs.mkdir(parents=True)
    source = Path(ocr.__file__).read_text(encoding="utf-8")
    (theirs / "ocr.py").write_text(source.replace("REC_BATCH = 1", "REC_BATCH = 6"), encoding="utf-8")
    other = reader_of(tmp_path)
    assert other is not ocr.Reader and other.__module__ == "against_ocr"
    assert __import__("sys").modules["against_ocr"].REC_BATCH == 6 and ocr.REC_BATCH == 1
    assert not other().loaded  # built like ours: on its first read


def test_a_tree_without_a_reader_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"no app/screen/ocr\.py"):
        reader_of(tmp_path)


def test_the_summary_gives_both_trees_and_the_ratio_per_size() -> None:
    def row(size: str, here: float, there: float) -> dict[str, object]:
        return {"size": size, "here": {"median_s": here, "p95_s": here, "cer": 0.0},
                "old": {"median_s": there, "p95_s": there, "cer": 0.01}, "ratio": here / there}

    summary = _against_summary([row("1920x1080", 0.5, 1.0), row("760x140", 0.2, 0.4),
                                row("1280x400", 0.4, 0.4)], "old")
    assert summary["1920x1080"]["ratio"] == 0.5
    assert summary["crops"]["ratio"] == pytest.approx(0.75)
    assert summary["mean_cer"] == {"here": 0.0, "old": 0.01}


def test_a_page_dragged_over_a_whole_screen_is_placed_in_the_region_with_other_text_beside() -> None:
    page = render("problem", scale=2)
    screen, (x0, y0, x1, y1) = on_a_screen(page)
    assert screen.shape == (2160, 3840, 3)
    assert np.array_equal(screen[y0 + 16:y1 - 16, x0 + 16:x1 - 16], page.image)  # 8 px loose at 2x
    outside = screen.copy()
    outside[y0:y1, x0:x1] = 255
    assert (outside < 128).any()  # the chat beside it is on the screen, not in the region


def test_the_read_ahead_summary_gives_each_drag_against_the_region_read_alone() -> None:
    rows = [{"alone_s": 0.6, "alone_cer": 0.0,
             "drag_0.0_s": 0.7, "drag_0.0_cer": 0.0, "drag_0.0_whole_s": 0.9,
             "drag_1.0_s": 0.06, "drag_1.0_cer": 0.01, "drag_1.0_whole_s": 1.2}]
    summary = _read_ahead_summary(rows, (0.0, 1.0))
    assert summary["drag_0.0"]["ratio_to_alone"] == pytest.approx(0.7 / 0.6)
    assert summary["drag_1.0"]["ratio_to_alone"] == pytest.approx(0.1)
    assert summary["whole_screen_read_median_s"] == 1.2
