"""The suggested answer, streamed: each token is on screen at the next paint.

Rendering is incremental on purpose: a token costs the same whatever came before it.
Re-rendering the whole document per token (``setMarkdown``) costs O(document) per token,
and even re-rendering the line being written costs O(line), which made one long bulleted
line quadratic.  Here a token is ``insertText`` at the end in the format the line's
Markdown says so far: ``**`` and a backtick toggle bold and code as they stream, a lone
``*`` is kept until the next token says whether it opens ``**`` (it is then taken back,
one character), and a line's start (a bullet or number marker, a heading's ``#``) is
decided once, within its first few characters, by writing that start again as a list
item or a heading.  Blank lines do not create paragraphs; consecutive bullet lines share
a list. Fenced code (a coding answer) streams line by line into a monospace block with no
Markdown applied, and is coloured by Pygments in one pass when its fence closes
(:mod:`app.ui.code_blocks`), with a "Copy code" link under it. Design notes: decision 0039.
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
    QGuiApplication,
    QMouseEvent,
    QPaintEvent,
    QTextBlock,
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
from app.ui.code_blocks import COPY_PREFIX, highlight
from app.ui.qtcompat import protect_singletons

_MARKER = re.compile(r"^(\s*)(?:([-*+•])|(\d{1,3})[.)])\s+")
_HEADING = re.compile(r"^\s*(#{1,6})\s+")
_UNDECIDED = re.compile(r"\s*(?:[-*+•]|\d{1,3}[.)]?|#{1,6})?")
"""A line that could still turn into a list item or heading with the next character."""
_UNDECIDED_MAX = 16
"""A line's start is decided by then: indentation, a number and a marker fit in it, and an
endless run of spaces cannot keep a line undecided (each token would scan it again)."""
_INLINE = re.compile(r"(\*\*|`)")
KEEP = 12
"""Answers the live document holds: the last dozen questions (a quarter of an hour of an
interview) stay a scroll away, and the document stays small enough that its size is no
cost a token notices (``bench paint``)."""
_EARLIER = "earlier-answers"
"""The anchor of the folded answers' line."""


@dataclass
class _Fence:
    """A fenced code block being written: its language and its lines so far."""

    language: str
    start: int
    """Document position of its first line."""
    lines: list[str] = field(default_factory=lambda: [""])


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
        keep: int | None = KEEP,
    ) -> None:
        """``keep``: answers the live document holds (None: all of them)."""
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
        """Every answer of the session, the folded ones too."""
        self._keep = keep
        self._first_live = 0
        """Index in ``blocks`` of the oldest answer in the document."""
        self._heads: list[QTextBlock] = []
        """The document's answer headings, oldest first (one per live answer)."""
        self._pending: list[tuple[int, int, float]] = []
        self._muted = QColor("#667085")
        self._code_bg = QColor("#eef1f5")
        self._fence: _Fence | None = None
        self.codes: list[str] = []
        """The code of each closed fence in the document, in order (what its link copies)."""
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
        if block is self.blocks[-1] and block.retracted is None:
            self._finish_fence()
        if truncated and not block.truncated:
            block.truncated = True
            if block is self.blocks[-1] and block.retracted is None:
                self._write_note(block)
            else:
                self._rebuild()
        if block is self.blocks[-1]:
            self._fold()

    def show_earlier(self) -> None:
        """Bring the folded answers back into the document (they fold again after the
        next answer, once the reader is back at the end)."""
        if self._first_live:
            self._first_live = 0
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
        self._heads.clear()
        self._first_live = 0
        self._pending.clear()
        self.codes.clear()
        self._fence = None
        self._reset_line()

    def mouseReleaseEvent(self, e: QMouseEvent) -> None:
        anchor = self.anchorAt(e.position().toPoint()) if e.button() == Qt.MouseButton.LeftButton else ""
        if anchor == _EARLIER:
            self.show_earlier()
            return
        if anchor.startswith(COPY_PREFIX):
            self.copy_code(int(anchor.removeprefix(COPY_PREFIX)))
            return
        super().mouseReleaseEvent(e)

    def copy_code(self, index: int) -> None:
        """The copy link of code block ``index``: its code, exactly, on the clipboard."""
        if 0 <= index < len(self.codes):
            QGuiApplication.clipboard().setText(self.codes[index])

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
        self._list: QTextList | None = None
        self._list_style: QTextListFormat.Style | None = None
        self._fresh_line()

    def _fresh_line(self) -> None:
        """The state of the line being written, at its start."""
        self._start = ""
        """The line's text while its start is undecided (at most :data:`_UNDECIDED_MAX`)."""
        self._decided = False
        self._raw = ""
        """The line as written so far (outside code): a fence is known at its end."""
        self._has_text = False
        self._item = False
        self._base = QTextCharFormat()
        self._bold = False
        self._code = False
        self._star = False
        """The last character written is a ``*`` the next token may turn into ``**``."""

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

    def _fold(self) -> None:
        """Fold all but the newest ``keep`` answers into the line at the top, unless the
        reader is scrolled up (the page would move under their eyes).

        The oldest answers' text is cut from the front of the document, which costs what
        they hold, not what the live answers do (laying the live ones out again would cost
        ``keep`` answers at every answer's end)."""
        folding = len(self.blocks) - self._first_live - (self._keep or 0)
        if self._keep is None or folding <= 0 or not self._follow.following:
            return
        cursor = QTextCursor(self.document())
        cursor.beginEditBlock()
        start = self._heads[0].position()
        cursor.setPosition(start)
        cursor.setPosition(self._heads[folding].position(), QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()  # the first folded heading's block takes the next heading
        self._first_live += folding
        if start == 0:  # the first fold: the line goes above, the heading into a block of its own
            cursor.setPosition(0)
            self._write_earlier(self._first_live, cursor)
            cursor.insertBlock(self._head_format(first=False), QTextCharFormat())
        else:
            line = self.document().firstBlock()
            cursor.setPosition(line.position())
            cursor.setPosition(line.position() + line.length() - 1, QTextCursor.MoveMode.KeepAnchor)
            self._write_earlier(self._first_live, cursor)
        head = self.document().firstBlock().next()  # the oldest live answer's heading
        QTextCursor(head).setBlockFormat(self._head_format(first=False))  # which one Qt kept is its own
        cursor.endEditBlock()
        self._heads = [head, *self._heads[folding + 1:]]

    def _rebuild(self) -> None:
        """Lay the live document out again from its blocks (retract, restore, show
        earlier: rare, and over ``keep`` answers at most once folded)."""
        self.clear()
        self._heads.clear()
        self.codes.clear()
        self._fence = None
        self._reset_line()
        if self._first_live:
            self._write_earlier(self._first_live, self._end_cursor())
        for number in range(self._first_live, len(self.blocks)):
            block = self.blocks[number]
            self._write_head(block, number + 1)
            if block.retracted is not None:
                continue
            self._write_text(block.text)
            if block.done or number + 1 < len(self.blocks):
                self._finish_fence()
            if block.truncated:
                self._write_note(block)

    def _write_earlier(self, count: int, cursor: QTextCursor) -> None:
        fmt = QTextCharFormat()
        fmt.setForeground(self._muted)
        fmt.setFontItalic(True)
        fmt.setAnchor(True)
        fmt.setAnchorHref(_EARLIER)
        fmt.setFontUnderline(True)
        plural = "answer" if count == 1 else "answers"
        cursor.setBlockFormat(self._head_format(first=True))
        cursor.insertText(f"{count} earlier {plural} — show them", fmt)

    def _start_block(self, block: AnswerBlock) -> AnswerBlock:
        self.blocks.append(block)
        self._write_head(block, len(self.blocks))
        return block

    def _write_head(self, block: AnswerBlock, number: int) -> None:
        cursor = self._end_cursor()
        first = self.document().characterCount() <= 1
        fmt = self._head_format(first)
        head = QTextCharFormat()
        head.setForeground(self._muted)
        head.setFontWeight(QFont.Weight.DemiBold)
        small = self.font().pointSizeF() * 0.8
        if small > 0:
            head.setFontPointSize(small)
        if first:
            cursor.setBlockFormat(fmt)
        else:
            cursor.insertBlock(fmt, head)
        title = f"ANSWER {number}" + ("  ·  regenerated" if block.regenerated else "")
        if block.retracted is not None:
            why = "the question went on" if block.retracted == "continued" else "withdrawn"
            head.setFontItalic(True)
            cursor.insertText(f"{title}  ·  taken back ({why}): {_first_words(block.text)}", head)
            self._heads.append(cursor.block())
            return
        cursor.insertText(title, head)
        self._heads.append(cursor.block())
        self._list = None
        self._list_style = None
        self._open_line()

    @staticmethod
    def _head_format(first: bool) -> QTextBlockFormat:
        fmt = QTextBlockFormat()
        fmt.setTopMargin(0 if first else 14)
        fmt.setBottomMargin(4)
        return fmt

    def _open_line(self) -> None:
        cursor = self._end_cursor()
        fmt = QTextBlockFormat()
        fmt.setBottomMargin(3)
        cursor.insertBlock(fmt, QTextCharFormat())
        self._fresh_line()

    def _newline(self) -> None:
        if self._fence is not None:
            if self._fence.lines[-1].strip().startswith("```"):
                self._finish_fence()
            else:
                self._fence.lines.append("")
                self._end_cursor().insertBlock(self._code_block_format(), QTextCharFormat())
            return
        if self._raw.lstrip().startswith("```"):
            self._open_fence(self._raw.strip()[3:].strip())
            return
        if not self._has_text:
            # a blank line: reuse the block; it only ends a list of another style
            return
        if not self._item:
            self._list = None
            self._list_style = None
        self._open_line()

    def _open_fence(self, language: str) -> None:
        """The line just ended was a fence: it becomes the code block's first line."""
        cursor = self._end_cursor()
        cursor.movePosition(QTextCursor.MoveOperation.StartOfBlock, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        if cursor.currentList() is not None:
            cursor.currentList().remove(cursor.block())
        cursor.setBlockFormat(self._code_block_format())
        self._list = None
        self._list_style = None
        self._fresh_line()
        self._fence = _Fence(language, cursor.block().position())

    def _finish_fence(self) -> None:
        """Close the code block (its fence arrived, or the answer ended): highlight it once,
        and put its copy link where the closing fence was."""
        fence = self._fence
        if fence is None:
            return
        self._fence = None
        closing = fence.lines[-1].strip().startswith("```")
        if closing:
            fence.lines.pop()
        cursor = self._end_cursor()
        if closing:
            cursor.movePosition(QTextCursor.MoveOperation.StartOfBlock, QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
        else:
            cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
        code = "\n".join(fence.lines)
        highlight(self.document(), fence.start, code, fence.language, dark=self._code_bg.lightness() < 128)
        self.codes.append(code)
        cursor.setBlockFormat(QTextBlockFormat())
        link = QTextCharFormat()
        link.setForeground(self._muted)
        link.setAnchor(True)
        link.setAnchorHref(f"{COPY_PREFIX}{len(self.codes) - 1}")
        link.setFontUnderline(True)
        cursor.insertText("Copy code", link)
        self._open_line()

    def _code_block_format(self) -> QTextBlockFormat:
        fmt = QTextBlockFormat()
        fmt.setBackground(self._code_bg)
        fmt.setLeftMargin(6)
        fmt.setNonBreakableLines(True)
        return fmt

    def _code_format(self) -> QTextCharFormat:
        fmt = QTextCharFormat()
        fmt.setFontFamilies([QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()])
        return fmt

    def _extend(self, part: str) -> None:
        """Write ``part`` (no newline in it) at the end of the line: O(len(part))."""
        if self._fence is not None:
            self._fence.lines[-1] += part
            self._end_cursor().insertText(part, self._code_format())
            return
        if len(self._raw) < _UNDECIDED_MAX:
            self._raw += part
        if not self._has_text and part.strip():
            self._has_text = True
        if self._decided:
            self._write_inline(part)
            return
        self._start += part
        if len(self._start) <= _UNDECIDED_MAX and _UNDECIDED.fullmatch(self._start):
            self._end_cursor().insertText(part, QTextCharFormat())
            return
        # Decided: write the line so far again, as what its start says it is (once a line).
        self._decided = True
        start, self._start = self._start, ""
        cursor = self._end_cursor()
        cursor.movePosition(QTextCursor.MoveOperation.StartOfBlock, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self._write_inline(self._open_markup(start, cursor))

    def _open_markup(self, line: str, cursor: QTextCursor) -> str:
        """Make the current block a list item or a heading if ``line`` starts as one; the
        rest of ``line``, to be written as inline text."""
        marker = _MARKER.match(line)
        heading = _HEADING.match(line) if marker is None else None
        if heading is not None:
            self._base.setFontWeight(QFont.Weight.Bold)
            return line[heading.end():]
        if marker is None:
            return line
        self._item = True
        style = QTextListFormat.Style.ListDecimal if marker.group(3) else QTextListFormat.Style.ListDisc
        nested = len(marker.group(1).expandtabs(4)) >= 2
        if nested and style == QTextListFormat.Style.ListDisc:
            style = QTextListFormat.Style.ListCircle
        if cursor.currentList() is None:
            if self._list is not None and self._list_style == style:
                self._list.add(cursor.block())
            else:
                fmt = QTextListFormat()
                fmt.setStyle(style)
                fmt.setIndent(2 if nested else 1)
                self._list = cursor.createList(fmt)
                self._list_style = style
        return line[marker.end():]

    def _write_inline(self, text: str) -> None:
        """Append ``text`` with ``**bold**`` and ```code``` applied as they stream; an
        unclosed marker holds for the rest of the line, so a bold phrase is bold while it
        streams."""
        cursor = self._end_cursor()
        if self._star and text.startswith("*"):  # the last token's "*" and this one's are "**"
            cursor.deletePreviousChar()
            self._bold = not self._bold
            text = text[1:]
        self._star = False
        pieces = _INLINE.split(text)
        for piece in pieces:
            if piece == "`":
                self._code = not self._code
            elif piece == "**" and not self._code:
                self._bold = not self._bold
            elif piece:
                cursor.insertText(piece, self._format())
        self._star = not self._code and pieces[-1].endswith("*")

    def _format(self) -> QTextCharFormat:
        fmt = QTextCharFormat(self._base)
        if self._bold:
            fmt.setFontWeight(QFont.Weight.Bold)
        if self._code:
            fmt.setFontFamilies([QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()])
            fmt.setBackground(self._code_bg)
        return fmt


def _first_words(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
