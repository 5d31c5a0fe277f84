"""The bounds every document reader works within: a wall-clock deadline and a text budget.

The user picks the résumé, but its bytes may come from anywhere (a download, a recruiter's
e-mail), and it is read while the session starts: no file may hang that start or fill the
memory.  Each reader is a loop (XML events, PDF pages and text pieces), so it checks these
bounds itself, inside its loop; no thread is left running that nothing can stop.
"""

from __future__ import annotations

import time

READ_TIME_LIMIT_S = 5.0
"""How long one file may take to read.  A long résumé takes a tenth of a second or so (a
400 KB Word body 0.06 s, a 10-page PDF 0.1 s on the development machine; a PDF with
embedded fonts, or a machine busy loading the models, a few tenths), so a file still being
read after 5 s — over ten times that — is not a résumé but a damaged or hostile file, and
the session should start without it."""

RAW_TEXT_FACTOR = 4
"""How much raw text a reader keeps, in multiples of the characters the prompt will use.
Normalising only collapses runs of spaces and blank lines, which in a real document is far
less than 4×, so the capped result ends at the same place; past that the rest would be cut
off anyway, and reading on would only cost time and memory."""


class Unreadable(Exception):
    """A reader's refusal.  ``reason`` completes the sentence that starts with the file's
    name ('The résumé file "cv.docx" …'), without its final period."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Deadline:
    """The moment a file's reading must be over, checked cooperatively by the readers."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def check(self) -> None:
        """Raise :class:`Unreadable` once the time is up."""
        if time.monotonic() >= self._end:  # ">=": a limit of 0 is over at once, however coarse the clock
            raise late(self.seconds)


def late(seconds: float) -> Unreadable:
    """The refusal of a file still being read after ``seconds``."""
    return Unreadable(
        f"took longer than {seconds:g} s to read, so it was skipped (it may be "
        "damaged, or made to stall programs that read it): save it again as .docx, "
        ".pdf, .txt or .md, or paste its text into a .txt file, and pick that in Settings"
    )


def raw_text_budget(max_chars: int) -> int:
    """The raw characters worth reading for a text capped at ``max_chars``."""
    return RAW_TEXT_FACTOR * max_chars
