"""The suggested answer, streamed: each token is on screen at the next paint.

Rendering is incremental on purpose.  Re-rendering the whole document per token
(``setMarkdown``) costs O(document) per token and grows with every answer kept above;
here a token is one ``insertText`` at the end, and only the line being written is
re-rendered when it carries Markdown (a bullet marker, ``**bold**``, ```code```), which is
O(line).  Blank lines do not create paragraphs; consecutive bullet lines share a list.

Each request is a block of its own (one answer in front at a time: the engine cuts an
older one before a newer one shows).  A block taken back (the question went on) collapses
to one dimmed line; the rare re-layouts that needs rebuild the document from the blocks.

Paint latency: after each paint that follows new tokens, one ``PaintedEvent`` is reported
for the *oldest* token not yet painted (the worst case of that paint); tokens that arrive
while the view is hidden or scrolled away from the bottom are not stamped, since they
were not shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QPaintEvent,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextList,
    QTextListFormat,
)
from PySide6.QtWidgets import QTextEdit, QWidget

from app.core.clock import SessionClock
from app.core.events import Event, PaintedEvent
from app.ui.autoscroll import FollowBottom
from app.ui.qtcompat import protect_singletons

_MARKER = re.compile(r"^(\s*)(?:([-*+•])|(\d{1,3})[.)])\s+")
_HEADING = re.compile(r"^\s*(#{1,6})\s+")
_UNDECIDED = re.compile(r"\s*(?:[-*+•]|\d{1,3}[.)]?|#{1,6})?")
"""A line that could still turn into a list item or heading with the next character."""
_INLINE = re.compile(r"(\*\*|`)")


@dataclass
class AnswerBlock:
    turn: int
    request: int
    regenerated: bool
    chunks: list[str] = field(default_factory=list)
    done: bool = False
    truncated: bool = False
    cut: bool = False
    """Ended because a newer answer took its place."""
    retracted: str | None = None
    """Why it was taken back ("continued", "user"); None while it stands."""

    @property
    def text(self) -> str:
        return "".join(self.chunks)


class AnswerView(QTextEdit):
    """Read-only answer pane; feed it with :meth:`append_token`."""

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        clock: SessionClock | None = None,
        post: Callable[[Event], None] | None = None,
    ) -> None:
        protect_singletons()
        super().__init__(parent)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)  # the undo stack would keep every token forever
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.document().setDocumentMargin(12)
        self.document().setIndentWidth(14)
        self._follow = FollowBottom(self.verticalScrollBar())
        self._clock = clock
        self._post = post
        self.blocks: list[AnswerBlock] = []
        self._pending: list[tuple[int, int, float]] = []
        self._muted = QColor("#667085")
        self._code_bg = QColor("#eef1f5")
        self._reset_line()

    # --- public -----------------------------------------------------------------------

    def set_colors(self, muted: str, code_bg: str) -> None:
        self._muted, self._code_bg = QColor(muted), QColor(code_bg)

    def append_token(self, turn: int, request: int, text: str, t: float | None = None) -> None:
        block = self._block(request)
        if block is None:
            regenerated = any(b.turn == turn and b.retracted is None for b in self.blocks)
            block = self._start_block(AnswerBlock(turn, request, regenerated))
        block.chunks.append(text)
        if block is not self.blocks[-1] or block.retracted is not None:
            self._rebuild()  # never happens in a live session: one answer is in front
            return
        follow = self._follow.following
        self._write_text(text)
        if t is not None and self._clock is not None and follow and self.isVisible():
            self._pending.append((turn, request, t))

    def mark_cut(self, request: int) -> None:
        """A newer answer took this one's place; its ``answer_done`` follows."""
        block = self._block(request)
        if block is not None:
            block.cut = True

    def mark_done(self, request: int, truncated: bool) -> None:
        block = self._block(request)
        if block is None:
            return
        block.done = True
        if truncated and not block.truncated:
            block.truncated = True
            if block is self.blocks[-1] and block.retracted is None:
                self._write_note(block)
            else:
                self._rebuild()

    def retract(self, request: int, reason: str) -> None:
        """The answer was taken back: one dimmed line remains (the session log keeps it)."""
        block = self._block(request)
        if block is not None and block.retracted is None:
            block.retracted = reason
            self._rebuild()

    def restore(self, request: int) -> None:
        """A retracted answer stands after all (only a tag such as "right?" followed)."""
        block = self._block(request)
        if block is not None and block.retracted is not None:
            block.retracted = None
            self._rebuild()

    def current_answer(self) -> str:
        standing = [b for b in self.blocks if b.retracted is None]
        return standing[-1].text.strip() if standing else ""

    def clear_answers(self) -> None:
        self.clear()
        self.blocks.clear()
        self._pending.clear()
        self._reset_line()

    # --- paint hook -------------------------------------------------------------------

    def paintEvent(self, e: QPaintEvent) -> None:
        super().paintEvent(e)
        if not self._pending or self._clock is None:
            return
        now = self._clock.now()
        oldest: dict[tuple[int, int], float] = {}
        for turn, request, t in self._pending:
            oldest.setdefault((turn, request), t)
        self._pending.clear()
        if self._post is not None:
            for (turn, request), t in oldest.items():
                self._post(PaintedEvent(t=now, turn=turn, latency=max(0.0, now - t), request=request))

    # --- rendering --------------------------------------------------------------------

    def _reset_line(self) -> None:
        self._line = ""
        self._decided = False
        self._rich = False
        self._list: QTextList | None = None
        self._list_style: QTextListFormat.Style | None = None

    def _end_cursor(self) -> QTextCursor:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _block(self, request: int) -> AnswerBlock | None:
        return next((b for b in reversed(self.blocks) if b.request == request), None)

    def _write_text(self, text: str) -> None:
        for i, part in enumerate(text.split("\n")):
            if i:
                self._newline()
            if part:
                self._extend(part)

    def _write_note(self, block: AnswerBlock) -> None:
        self._newline()
        cursor = self._end_cursor()
        fmt = QTextCharFormat()
        fmt.setForeground(self._muted)
        fmt.setFontItalic(True)
        note = ("(cut short — a newer answer took its place)" if block.cut
                else "(stream cut off — what arrived is kept)")
        cursor.insertText(note, fmt)
        self._newline()

    def _rebuild(self) -> None:
        """Lay the whole document out again from the blocks (retract, restore: rare)."""
        blocks = list(self.blocks)
        self.clear()
        self.blocks.clear()
        self._reset_line()
        for block in blocks:
            self._start_block(block)
            if block.retracted is not None:
                continue
            self._write_text(block.text)
            if block.truncated:
                self._write_note(block)

    def _start_block(self, block: AnswerBlock) -> AnswerBlock:
        self.blocks.append(block)
        cursor = self._end_cursor()
        fmt = QTextBlockFormat()
        fmt.setTopMargin(14 if len(self.blocks) > 1 else 0)
        fmt.setBottomMargin(4)
        head = QTextCharFormat()
        head.setForeground(self._muted)
        head.setFontWeight(QFont.Weight.DemiBold)
        small = self.font().pointSizeF() * 0.8
        if small > 0:
            head.setFontPointSize(small)
        if len(self.blocks) > 1:
            cursor.insertBlock(fmt, head)
        else:
            cursor.setBlockFormat(fmt)
        title = f"ANSWER {len(self.blocks)}" + ("  ·  regenerated" if block.regenerated else "")
        if block.retracted is not None:
            why = "the question went on" if block.retracted == "continued" else "withdrawn"
            head.setFontItalic(True)
            cursor.insertText(f"{title}  ·  taken back ({why}): {_first_words(block.text)}", head)
            return block
        cursor.insertText(title, head)
        self._list = None
        self._list_style = None
        self._line = ""
        self._open_line()
        return block

    def _open_line(self) -> None:
        cursor = self._end_cursor()
        fmt = QTextBlockFormat()
        fmt.setBottomMargin(3)
        cursor.insertBlock(fmt, QTextCharFormat())
        self._line = ""
        self._decided = False
        self._rich = False

    def _newline(self) -> None:
        if not self._line.strip():
            # a blank line: reuse the block; it only ends a list of another style
            return
        if self._rich:
            self._render_line()
        is_item = bool(_MARKER.match(self._line))
        if not is_item:
            self._list = None
            self._list_style = None
        self._open_line()

    def _extend(self, part: str) -> None:
        self._line += part
        if not self._decided:
            if _UNDECIDED.fullmatch(self._line):
                self._end_cursor().insertText(part, QTextCharFormat())
                return
            self._decided = True
            if _MARKER.match(self._line) or _HEADING.match(self._line):
                self._rich = True
        if self._rich or _INLINE.search(part) or "*" in part:
            self._rich = True
            self._render_line()
        else:
            self._end_cursor().insertText(part, QTextCharFormat())

    def _render_line(self) -> None:
        """Re-render only the current (last) block from its raw text."""
        doc = self.document()
        block = doc.lastBlock()
        cursor = QTextCursor(block)
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        body = self._line
        base = QTextCharFormat()
        marker = _MARKER.match(body)
        heading = _HEADING.match(body) if marker is None else None
        if marker is not None:
            body = body[marker.end():]
            style = (
                QTextListFormat.Style.ListDecimal
                if marker.group(3)
                else QTextListFormat.Style.ListDisc
            )
            nested = len(marker.group(1).expandtabs(4)) >= 2
            if nested and style == QTextListFormat.Style.ListDisc:
                style = QTextListFormat.Style.ListCircle
            current = cursor.currentList()
            if current is None:
                if self._list is not None and self._list_style == style:
                    self._list.add(cursor.block())
                else:
                    fmt = QTextListFormat()
                    fmt.setStyle(style)
                    fmt.setIndent(2 if nested else 1)
                    self._list = cursor.createList(fmt)
                    self._list_style = style
        elif heading is not None:
            body = body[heading.end():]
            base.setFontWeight(QFont.Weight.Bold)
        for text, bold, code in _spans(body):
            fmt = QTextCharFormat(base)
            if bold:
                fmt.setFontWeight(QFont.Weight.Bold)
            if code:
                fmt.setFontFamilies(
                    [QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()]
                )
                fmt.setBackground(self._code_bg)
            cursor.insertText(text, fmt)


def _first_words(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _spans(text: str) -> list[tuple[str, bool, bool]]:
    """(text, bold, code) runs; an unclosed marker applies to the rest of the line, so a
    bold phrase is bold while it streams."""
    out: list[tuple[str, bool, bool]] = []
    bold = code = False
    for piece in _INLINE.split(text):
        if piece == "`":
            code = not code
        elif piece == "**" and not code:
            bold = not bold
        elif piece:
            out.append((piece, bold, code))
    return out
