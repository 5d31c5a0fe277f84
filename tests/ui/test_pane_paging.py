"""An hour of answers: the live document holds the newest few, the older ones stay reachable.

The pane's per-token cost must not grow with the answers it has shown (issue 44), so the
document that receives tokens keeps at most ``keep`` answers; the older ones fold into one
line at the top ("N earlier answers — show them"), still in ``blocks`` and brought back on
demand.  Real widget, offscreen.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from app.ui.answer_view import AnswerView

KEEP = 4


def _headings(view: AnswerView) -> list[str]:
    doc = view.document()
    lines = [doc.findBlockByNumber(i).text() for i in range(doc.blockCount())]
    return [line for line in lines if line.startswith("ANSWER ")]


def _answer(view: AnswerView, number: int) -> None:
    for token in [f"Answer {number} opens.", "\n- ", "**point**", " one\n", f"- closes {number}."]:
        view.append_token(number, number, token)
    view.mark_done(number, False)


def _view(qtbot: QtBot) -> AnswerView:
    view = AnswerView(keep=KEEP)
    qtbot.addWidget(view)
    view.resize(500, 300)
    view.show()
    return view


def test_after_many_answers_the_live_document_holds_the_newest_few(qtbot: QtBot) -> None:
    view = _view(qtbot)
    for number in range(1, 31):
        _answer(view, number)
        assert len(_headings(view)) <= KEEP
    size = view.document().characterCount()
    for number in range(31, 61):
        _answer(view, number)
    assert view.document().characterCount() <= size + 10  # bounded: no growth with the count
    assert _headings(view) == [f"ANSWER {n}" for n in range(57, 61)]  # numbered as they came
    plain = view.toPlainText()
    assert "56 earlier answers" in plain and "Answer 1 opens." not in plain
    assert len(view.blocks) == 60 and view.blocks[0].text.startswith("Answer 1 opens.")
    assert view.current_answer() == "Answer 60 opens.\n- **point** one\n- closes 60."


def test_older_answers_come_back_on_demand(qtbot: QtBot) -> None:
    view = _view(qtbot)
    for number in range(1, 11):
        _answer(view, number)
    view.show_earlier()
    assert _headings(view) == [f"ANSWER {n}" for n in range(1, 11)]
    assert "earlier answers" not in view.toPlainText()
    _answer(view, 11)  # the next answer folds them again
    assert _headings(view) == [f"ANSWER {n}" for n in range(8, 12)]


def test_clicking_the_earlier_line_shows_them(qtbot: QtBot) -> None:
    view = _view(qtbot)
    for number in range(1, 8):
        _answer(view, number)
    view.verticalScrollBar().setValue(0)
    line = view.document().firstBlock()
    rect = view.document().documentLayout().blockBoundingRect(line)
    at = QPoint(int(rect.left()) + 20, int(rect.center().y()) - view.verticalScrollBar().value())
    assert view.anchorAt(at)
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, at)
    assert len(_headings(view)) == 7


def test_a_reader_scrolled_up_is_not_moved_until_back_at_the_end(qtbot: QtBot) -> None:
    view = _view(qtbot)
    for number in range(1, 5):
        _answer(view, number)
    view.show_earlier()
    view.verticalScrollBar().setValue(0)  # rereading the first answer
    _answer(view, 5)
    assert len(_headings(view)) == 5  # nothing folded under the reader's eyes
    bar = view.verticalScrollBar()
    bar.setValue(bar.maximum())
    _answer(view, 6)
    assert len(_headings(view)) == KEEP


def test_withdrawn_and_cut_answers_keep_their_lines_among_the_live_ones(qtbot: QtBot) -> None:
    view = _view(qtbot)
    for number in range(1, 8):
        _answer(view, number)
    view.retract(7, "continued")
    view.append_token(7, 8, "The whole question's answer.")
    plain = view.toPlainText()
    assert "ANSWER 7  ·  taken back (the question went on): Answer 7 opens." in plain
    assert plain.rstrip().endswith("The whole question's answer.")
    view.retract(1, "user")  # an answer folded away: its block knows, the live page is untouched
    assert view.blocks[0].retracted == "user" and "earlier answers" in view.toPlainText()


def test_folding_at_the_front_leaves_what_laying_it_out_again_would(qtbot: QtBot) -> None:
    view = _view(qtbot)
    for number in range(1, 12):
        _answer(view, number)
        if number == 6:
            view.retract(6, "continued")  # a one-line answer among the live ones
    folded = _layout(view)
    view._rebuild()  # the reference: the live answers written afresh
    assert _layout(view) == folded


def _layout(view: AnswerView) -> list[tuple[str, float, bool, int, bool]]:
    """(text, top margin, in a list, its first run's weight and italics) per line."""
    doc = view.document()
    blocks = [doc.findBlockByNumber(i) for i in range(doc.blockCount())]
    runs = [b.begin().fragment().charFormat() for b in blocks]
    return [(b.text(), b.blockFormat().topMargin(), b.textList() is not None, int(f.fontWeight()),
             f.fontItalic()) for b, f in zip(blocks, runs, strict=True)]
