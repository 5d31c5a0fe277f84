"""Fenced code in the answer pane: monospace while it streams, highlighted by Pygments once
its fence closes (one pass over the block, never per token), with a copy link under it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor, QTextDocument

COPY_PREFIX = "copy-code:"
"""The anchor of a block's copy link: ``copy-code:<n>``, n its index in the pane."""


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    """Offset in the code (characters)."""
    length: int
    colour: str | None
    bold: bool
    italic: bool


@cache
def _style(dark: bool) -> object:
    from pygments.styles import get_style_by_name

    return get_style_by_name("monokai" if dark else "default")


def spans(code: str, language: str, *, dark: bool = False) -> list[Span]:
    """Pygments' colours for ``code`` (lexer by the fence's language, else guessed; plain text
    when neither knows it)."""
    from pygments.lexers import get_lexer_by_name, guess_lexer
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(language.strip().lower() or "text", stripnl=False, ensurenl=False)
    except ClassNotFound:
        try:
            lexer = guess_lexer(code, stripnl=False, ensurenl=False)
        except ClassNotFound:
            return []
    style = _style(dark)
    out: list[Span] = []
    offset = 0
    for kind, value in lexer.get_tokens(code):
        found = style.style_for_token(kind)  # type: ignore[attr-defined]
        if value and (found["color"] or found["bold"] or found["italic"]):
            colour = f"#{found['color']}" if found["color"] else None
            out.append(Span(offset, len(value), colour, bool(found["bold"]), bool(found["italic"])))
        offset += len(value)
    return out


def highlight(document: QTextDocument, start: int, code: str, language: str, *, dark: bool) -> None:
    """Colour the code written at ``start`` in ``document`` (its lines one block each)."""
    cursor = QTextCursor(document)
    cursor.beginEditBlock()
    for span in spans(code, language, dark=dark):
        fmt = QTextCharFormat()
        if span.colour:
            fmt.setForeground(QColor(span.colour))
        if span.bold:
            fmt.setFontWeight(QFont.Weight.Bold)
        if span.italic:
            fmt.setFontItalic(True)
        cursor.setPosition(start + span.start)
        cursor.setPosition(start + span.start + span.length, QTextCursor.MoveMode.KeepAnchor)
        cursor.mergeCharFormat(fmt)
    cursor.endEditBlock()
