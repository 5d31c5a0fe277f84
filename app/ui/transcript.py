"""What was said: finished turns above, the live partial rewriting below.

Each turn of each speaker owns one paragraph, the candidate's marked "You:" (blocks are
only ever appended, so its block number is stable); a partial rewrites just that
paragraph, with the stable prefix in the normal colour and the still-changing tail
lighter, and its final replaces it in place.
"""

from __future__ import annotations

from os.path import commonprefix  # works on any sequences, not only paths

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QTextBlockFormat, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QTextEdit, QWidget

from app.core.events import Speaker
from app.ui.autoscroll import FollowBottom


class TranscriptView(QTextEdit):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.document().setDocumentMargin(12)
        self._follow = FollowBottom(self.verticalScrollBar())
        self._blocks: dict[tuple[Speaker, int], int] = {}
        self._finals: dict[tuple[Speaker, int], str] = {}
        self._new_group = False
        self._faint = QColor("#a0a7b4")

    def set_colors(self, faint: str) -> None:
        self._faint = QColor(faint)

    def show_partial(self, turn: int, text: str, stable: str, speaker: Speaker = "interviewer") -> None:
        key = (speaker, turn)
        if key in self._finals:
            return  # a late partial must not undo the final
        if not stable or not text.startswith(stable):
            stable = commonprefix([stable, text])  # noqa: RUF071 - characters
        self._write(key, [(_clean(stable), False), (_clean(text[len(stable):]), True)])

    def show_final(self, turn: int, text: str, speaker: Speaker = "interviewer") -> None:
        key = (speaker, turn)
        self._finals[key] = text
        self._write(key, [(_clean(text), False)])

    def reopen(self, turn: int) -> None:
        """The interviewer went on after the endpoint: the caption grows again."""
        self._finals.pop(("interviewer", turn), None)

    def end_turn(self) -> None:
        """The next utterance opens a new question group (a little space above it)."""
        self._new_group = True

    def finals(self) -> list[str]:
        return [self._finals[key] for key in sorted(self._finals, key=lambda k: self._blocks[k])]

    def live_text(self) -> str:
        return self.toPlainText()

    def _write(self, key: tuple[Speaker, int], runs: list[tuple[str, bool]]) -> None:
        doc = self.document()
        if key not in self._blocks:
            cursor = QTextCursor(doc)
            cursor.movePosition(QTextCursor.MoveOperation.End)
            fmt = QTextBlockFormat()
            fmt.setBottomMargin(4)
            asks = key[0] == "interviewer"  # your reply stays with the question it answers
            fmt.setTopMargin(12 if asks and self._new_group and self._blocks else 0)
            if self._blocks:
                cursor.insertBlock(fmt)
            else:
                cursor.setBlockFormat(fmt)
            self._new_group = self._new_group and not asks
            self._blocks[key] = cursor.blockNumber()
        yours = key[0] == "candidate"
        block = doc.findBlockByNumber(self._blocks[key])
        cursor = QTextCursor(block)
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        cursor.beginEditBlock()
        cursor.removeSelectedText()
        if yours:  # your own words: labelled and set apart from the questions
            label = QTextCharFormat()
            label.setFontWeight(QFont.Weight.Bold)
            cursor.insertText("You: ", label)
        for text, faint in runs:
            if not text:
                continue
            chars = QTextCharFormat()
            chars.setFontItalic(yours)
            if faint:
                chars.setForeground(self._faint)
            cursor.insertText(text, chars)
        cursor.endEditBlock()


def _clean(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


