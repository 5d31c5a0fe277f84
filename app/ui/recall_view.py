"""The résumé lines a question touches, above the answer (``recall`` events).

A plain label, not part of the answer document: it changes once or twice per question
(a guess, then the final), while the answer streams token by token below it, so keeping
them apart keeps the answer's incremental rendering untouched.  Empty: hidden, so a
question that touches nothing costs no room.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

from app.core.events import RecallEvent, RecallLine

SOURCE_LABEL = {"resume": "résumé", "job": "job"}


class RecallView(QLabel):
    """Shows the newest turn's recalled lines; an older turn's event never replaces them."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("recall")
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setContentsMargins(12, 4, 12, 4)
        self.setAccessibleName("From your résumé")
        self.turn: int | None = None
        self.lines: tuple[RecallLine, ...] = ()
        self._muted = "#667085"
        self.setVisible(False)

    def set_colors(self, muted: str) -> None:
        self._muted = muted
        self._render()

    def show_recall(self, event: RecallEvent) -> None:
        if self.turn is not None and event.turn < self.turn:
            return  # a late event of an earlier question
        self.turn = event.turn
        self.lines = event.lines
        self._render()

    def clear_recall(self) -> None:
        self.turn, self.lines = None, ()
        self._render()

    def _render(self) -> None:
        if not self.lines:
            self.clear()
            self.setVisible(False)
            return
        rows = "".join(
            f"<div>▸ {escape(line.text)} <span style='color:{self._muted}'>· "
            f"{escape(SOURCE_LABEL.get(line.source, line.source))}</span></div>"
            for line in self.lines)
        self.setText(f"<div style='color:{self._muted}; font-size:small'>FROM YOUR DOCUMENTS</div>{rows}")
        self.setToolTip("Lines of your résumé and the job description this question touches")
        self.setVisible(True)

    def plain_text(self) -> str:
        return "\n".join(line.text for line in self.lines)
