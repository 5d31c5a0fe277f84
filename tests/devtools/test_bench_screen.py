"""``bench screen --against REV``: another tree's reader is loaded beside ours, not instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.screen import ocr
from devtools.bench.screen import _against_summary, reader_of


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
