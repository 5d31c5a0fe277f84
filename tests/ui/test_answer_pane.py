"""The answer pane's work per token does not grow with the line it extends.

Work is counted, not timed: the characters the pane removes from and adds to its document
(``QTextDocument.contentsChange``), real widget, offscreen.  A long bulleted line with a
bold phrase re-rendered whole per token costs the square of its length; appended, twice
its length at most.  The rendering itself (lists, bold, code, a ``**`` split across
tokens) is checked against what the whole text renders to in one go.
"""

from __future__ import annotations

import pytest
from PySide6.QtGui import QFont, QTextCursor
from pytestqt.qtbot import QtBot

from app.ui.answer_view import AnswerView


def _view(qtbot: QtBot) -> tuple[AnswerView, list[int]]:
    view = AnswerView()
    qtbot.addWidget(view)
    work: list[int] = []
    view.document().contentsChange.connect(lambda _at, removed, added: work.append(removed + added))
    return view, work


@pytest.mark.parametrize("start", ["- **Bold** then", "1. plain then **bold", "## A heading with `code"])
def test_per_token_work_is_independent_of_the_lines_length(qtbot: QtBot, start: str) -> None:
    view, work = _view(qtbot)
    view.append_token(1, 1, "Intro.\n")
    tokens = [start, *([" word"] * 3000)]
    before = sum(work)
    for token in tokens:
        view.append_token(1, 1, token)
    written = sum(len(t) for t in tokens)
    assert sum(work) - before <= 3 * written  # re-rendering the line per token: ~written²/10
    assert view.document().lastBlock().text().endswith(" word word")


def _runs(view: AnswerView) -> list[tuple[str, bool, bool, bool]]:
    """(text, bold, code, in a list) per run of the answer's lines (the heading left out)."""
    out: list[tuple[str, bool, bool, bool]] = []
    block = view.document().firstBlock().next()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            fmt = fragment.charFormat()
            out.append((fragment.text(), fmt.fontWeight() >= QFont.Weight.Bold,
                        fmt.background().color().name() == "#eef1f5", block.textList() is not None))
            it += 1
        block = block.next()
    return out


TEXT = ("**Short answer:** yes.\n- Use `idx` and ***three*** stars\n- Two **bold\n"
        "1. Numbered *one* and ** lone\n## Head `co**de` end\nplain a*b**c**\n")


@pytest.mark.parametrize("cut", [1, 2, 3, 5, 7])
def test_streamed_in_any_pieces_it_renders_as_in_one_piece(qtbot: QtBot, cut: int) -> None:
    whole, _ = _view(qtbot)
    whole.append_token(1, 1, TEXT)
    streamed, _ = _view(qtbot)
    for i in range(0, len(TEXT), cut):
        streamed.append_token(1, 1, TEXT[i:i + cut])
    assert streamed.toPlainText() == whole.toPlainText()
    assert _merge(_runs(streamed)) == _merge(_runs(whole))
    shown = whole.toPlainText()
    assert "Short answer: yes." in shown and "Use idx and *three* stars" in shown
    assert "Head co**de end" in shown and "plain a*bc" in shown


def _merge(runs: list[tuple[str, bool, bool, bool]]) -> list[tuple[str, bool, bool, bool]]:
    """Adjacent runs of one format as one (how the text was split into inserts is no
    difference a reader sees)."""
    out: list[tuple[str, bool, bool, bool]] = []
    for run in runs:
        if out and out[-1][1:] == run[1:]:
            out[-1] = (out[-1][0] + run[0], *run[1:])
        else:
            out.append(run)
    return out


def test_a_split_double_star_is_taken_back(qtbot: QtBot) -> None:
    view, _ = _view(qtbot)
    for token in ["- a", " *", "*b", "**", " c"]:
        view.append_token(1, 1, token)
    line = view.document().lastBlock()
    assert line.text() == "a b c" and line.textList() is not None
    cursor = QTextCursor(line)
    cursor.setPosition(line.position() + 3)
    assert cursor.charFormat().fontWeight() >= QFont.Weight.Bold  # "b"
