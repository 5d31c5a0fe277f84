"""The text of a PDF, page by page, within fixed bounds.

pypdf does the reading (its own limits cap what one stream may decompress to), in a
process of its own where the time limit and a memory cap are enforced from outside
(:mod:`app.prompt.worker`: pypdf parses a whole content stream in one step).  Inside,
its work is cut into steps we can stop between: a page at a time, and inside a page at
each piece of text it finds, where the deadline and the text budget are checked.  pypdf raises
many kinds of exception on a damaged file (its own, and ``ValueError``, ``KeyError``,
``struct.error`` …), so every one of them means "damaged" here.
"""

from __future__ import annotations

import io
from typing import Any

from app.prompt.limits import Deadline, Unreadable
from app.prompt.worker import read_bounded

MAX_PAGES = 40
"""Pages read.  A résumé is one to three pages and a job description one or two; a long
academic CV may run to twenty, and all of them together fill the prompt's budget long
before page 40."""

_FIX_TYPE = "save it as .docx, .pdf, .txt or .md and pick it again in Settings"
_DAMAGED = (
    "could not be read as a PDF (it may be damaged): export or download it again, or save "
    "it as .txt, and pick it again in Settings"
)


class _Stop(Exception):
    """Raised inside pypdf's walk over a page to end it early."""


class _PageText:
    """A pypdf text visitor that keeps what a page says, checks the deadline, and stops the
    page once the text budget is spent."""

    def __init__(self, deadline: Deadline, left: int) -> None:
        self.pieces: list[str] = []
        self.left = left
        self.late: Unreadable | None = None
        self._deadline = deadline

    def __call__(self, text: str, *_: Any) -> None:
        try:
            self._deadline.check()
        except Unreadable as exc:
            self.late = exc  # kept in case pypdf swallows what its visitor raises
            raise
        self.pieces.append(text)
        self.left -= len(text)
        if self.left < 0:
            raise _Stop


def pdf_pages(data: bytes, *, deadline: Deadline, max_text: int) -> list[str]:
    """Text of each page, stopping after about ``max_text`` characters or
    :data:`MAX_PAGES` pages, read in a process of its own within ``deadline``'s seconds
    and a memory cap (:mod:`app.prompt.worker`).  Raises :class:`Unreadable` for any file
    it cannot read."""
    if b"%PDF-" not in data[:1024]:
        raise Unreadable(f"is not a real PDF (its contents are something else): {_FIX_TYPE}")
    return read_bounded(pdf_pages_here, (data, max_text), seconds=deadline.seconds)


def pdf_pages_here(data: bytes, max_text: int, deadline: Deadline) -> list[str]:
    """:func:`pdf_pages` in this process, bounded only by the checks between pypdf's steps
    (what the worker runs)."""
    try:
        return _pages(data, deadline, max_text)
    except Unreadable:
        raise
    except Exception:  # pypdf raises many types (and plain ones) for damaged files
        raise Unreadable(_DAMAGED) from None


def _pages(data: bytes, deadline: Deadline, max_text: int) -> list[str]:
    from pypdf import PdfReader  # imported when a PDF is read: it is slow to import

    reader = PdfReader(io.BytesIO(data), strict=False)
    deadline.check()
    if reader.is_encrypted and not reader.decrypt(""):
        raise Unreadable(
            "is password-protected: save a copy without a password and pick it again in Settings"
        )
    pages: list[str] = []
    left = max_text
    for number in range(min(len(reader.pages), MAX_PAGES)):
        deadline.check()
        visitor = _PageText(deadline, left)
        try:
            text = reader.pages[number].extract_text(visitor_text=visitor) or ""
        except _Stop:
            pages.append("".join(visitor.pieces))
            break
        if visitor.late is not None:
            raise visitor.late
        pages.append(text)
        left -= len(text)
        if visitor.left < 0 or left < 0:
            break
    return pages
