"""Résumé and job-description files, turned into short clean text for the prompt.

Everything here runs once per session, before the first question, so it favours clear
failure messages over speed: a bad file must end up as one sentence in the UI telling the
user which file is wrong and what to do, never as a traceback.  The text is capped because
it sits in every request's prefix: a 20-page CV would cost latency and money on every turn.

Word and PDF files are read by ``docx.py`` and ``pdf.py`` beside this module, within the
bounds of ``limits.py`` (a time limit, a text budget); every step here is a single linear
pass, so no file, however made, can stall the session's start or fill the memory.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections import Counter
from pathlib import Path

from app.prompt.docx import docx_text
from app.prompt.limits import READ_TIME_LIMIT_S, Deadline, Unreadable, raw_text_budget
from app.prompt.pdf import pdf_pages

RESUME_MAX_CHARS = 6000
JOB_DESCRIPTION_MAX_CHARS = 3000
TRUNCATION_MARKER = "[…truncated]"
MAX_FILE_BYTES = 20 * 1024 * 1024
"""Bigger files are not résumés; refusing them early keeps a wrong pick from hanging the app."""

TEXT_SUFFIXES = frozenset({".txt", ".text", ".md", ".markdown"})
PDF_SUFFIXES = frozenset({".pdf"})
DOCX_SUFFIXES = frozenset({".docx", ".docm"})

_FIX_TYPE = "save it as .docx, .pdf, .txt or .md and pick it again in Settings"
_LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"}
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_HSPACE = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_PAGE_NUMBER = re.compile(
    r"^(?:page\s*)?[-–—]?\s*\d{1,3}\s*(?:(?:/|of)\s*\d{1,3})?\s*[-–—]?$|^第\s*\d{1,3}\s*页(?:\s*/?\s*共\s*\d{1,3}\s*页)?$",
    re.IGNORECASE,
)
_PAGE_NUMBER_MAX_CHARS = 40
r"""The longest line tried as a page number ("Page 12 of 40" is 13).  The pattern's runs of
``\s*`` can split a long run of spaces many ways, so a 20,000-space line took 12 s."""
_HYPHENATED = re.compile(r"([a-z])-\n([a-z])")
_SENTENCE_END = re.compile(r"[.!?。！？;；](?=\s)|[。！？](?=\S)|\n")


class DocumentError(Exception):
    """A prompt document that cannot be used; ``str()`` is a complete sentence for the user."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


def load_resume(path: str | Path, max_chars: int = RESUME_MAX_CHARS) -> str:
    return load_document(path, max_chars=max_chars, label="résumé")


def load_job_description(path: str | Path, max_chars: int = JOB_DESCRIPTION_MAX_CHARS) -> str:
    return load_document(path, max_chars=max_chars, label="job description")


def load_document(
    path: str | Path, *, max_chars: int, label: str = "document", time_limit: float = READ_TIME_LIMIT_S
) -> str:
    """Read a .txt/.md/.pdf/.docx file into normalised text of at most ``max_chars`` characters.

    Raises :class:`DocumentError` for every way a user-picked file can be unusable, so the
    caller needs one ``except`` and can show ``str(exc)`` as is.  That includes a file that
    takes more than ``time_limit`` seconds to read once its bytes are in memory (see
    :data:`~app.prompt.limits.READ_TIME_LIMIT_S`), or would take more memory than a résumé.
    """
    if max_chars < len(TRUNCATION_MARKER) + 1:
        raise ValueError(f"max_chars must be at least {len(TRUNCATION_MARKER) + 1}")
    p = Path(path).expanduser()
    what = f'The {label} file "{p.name or p}"'
    data = _read_bytes(p, what)
    try:
        text = _text(data, p, what, Deadline(time_limit), raw_text_budget(max_chars))
    except Unreadable as exc:
        raise DocumentError(f"{what} {exc.reason}.", p) from None
    return cap_text(text, max_chars)


def _text(data: bytes, p: Path, what: str, deadline: Deadline, budget: int) -> str:
    """The normalised text of the file, by its type; raises :class:`Unreadable` or
    :class:`DocumentError`."""
    suffix = p.suffix.lower()
    if suffix in PDF_SUFFIXES:
        pages = pdf_pages(data, deadline=deadline, max_text=budget)
        text = _normalise(_strip_page_furniture(pages), pdf=True)
        if not text:
            raise DocumentError(
                f"{what} has no selectable text (it may be a scanned image): export it as a "
                "text PDF, or paste the text into a .txt file and pick that in Settings.",
                p,
            )
    elif suffix in DOCX_SUFFIXES:
        text = _normalise(docx_text(data, deadline=deadline, max_text=budget), pdf=False)
        if not text:
            raise DocumentError(f"{what} has no text: add the text and pick it again in Settings.", p)
    elif suffix == ".doc":
        raise DocumentError(
            f"{what} is in the old Word format (.doc): open it in Word, LibreOffice or Pages, "
            "save it as .docx or .pdf, and pick that in Settings.",
            p,
        )
    elif suffix in TEXT_SUFFIXES:
        raw = _decode_text(data, p, what)
        if suffix in {".md", ".markdown"}:
            raw = strip_html_comments(raw)
        text = _normalise(raw[:budget], pdf=False)
        deadline.check()  # every step above is one linear pass over at most MAX_FILE_BYTES
        if not text:
            raise DocumentError(f"{what} is empty: add the text and pick it again in Settings.", p)
    else:
        raise DocumentError(f"{what} is not a Word, PDF, text or Markdown file: {_FIX_TYPE}.", p)
    return text


def strip_html_comments(text: str) -> str:
    """``text`` without its ``<!-- … -->`` comments (what a Markdown viewer hides).

    One pass of ``str.find``, not the regex ``<!--.*?-->``: that one tries each unclosed
    ``<!--`` against the whole rest of the text, so a file of unclosed markers took time
    growing with the square of its length (80 KB: 11 s).  Here each character is scanned a
    bounded number of times.  The result is the regex's: a comment ends at the first
    ``-->`` after its ``<!--``, and an unclosed ``<!--`` stays as text — as does every later
    one, since no ``-->`` follows them either.
    """
    kept: list[str] = []
    start = 0
    while (opening := text.find("<!--", start)) != -1:
        closing = text.find("-->", opening + 4)
        if closing == -1:
            break
        kept.append(text[start:opening])
        start = closing + 3
    kept.append(text[start:])
    return "".join(kept)


def _read_bytes(p: Path, what: str) -> bytes:
    """The file's bytes, read only from a regular file and only as many as it says it
    holds: a pipe, a device or a system file (``/proc``, ``/sys``) is refused, since
    reading one may never end (a FIFO no one writes to, ``/dev/zero``)."""
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_BINARY", 0) | _NONBLOCK)  # a FIFO opens at once
    except FileNotFoundError:
        raise DocumentError(
            f"{what} was not found at {p}: it may have been moved or deleted; "
            "pick it again in Settings.",
            p,
        ) from None
    except IsADirectoryError:
        raise DocumentError(f"{what} is a folder, not a file: pick the file itself in Settings.", p) from None
    except PermissionError:
        if p.is_dir():  # Windows opens no folder: it says "permission denied" for one
            raise DocumentError(f"{what} is a folder, not a file: pick the file itself in Settings.",
                                p) from None
        raise DocumentError(
            f"{what} could not be opened (permission denied): move it somewhere you can read "
            "it, such as your Documents folder, and pick it again in Settings.",
            p,
        ) from None
    except OSError as exc:
        raise _unreadable(what, p, exc) from None
    try:
        data = _read_regular(fd, p, what)
    finally:
        os.close(fd)
    if not data.strip():
        raise DocumentError(f"{what} is empty: add the text and pick it again in Settings.", p)
    return data


_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
_SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")


def _read_regular(fd: int, p: Path, what: str) -> bytes:
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise DocumentError(f"{what} is a folder, not a file: pick the file itself in Settings.", p)
        if not stat.S_ISREG(st.st_mode) or _in_system_folder(p):
            raise DocumentError(
                f"{what} is not a document but {_kind(st.st_mode, p)}, which could be read "
                "forever: pick the file itself in Settings.",
                p,
            )
        if st.st_size > MAX_FILE_BYTES:
            raise DocumentError(
                f"{what} is too large ({st.st_size // (1024 * 1024)} MB) to be a résumé or "
                "job description: pick a smaller file in Settings.",
                p,
            )
        chunks: list[bytes] = []
        left = st.st_size  # a file that grows while read is cut where it was when opened
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise _unreadable(what, p, exc) from None


def _in_system_folder(p: Path) -> bool:
    """Linux's and macOS's views of the system (``/proc``'s files say they are empty,
    and some never end): no résumé lives there."""
    if sys.platform == "win32":
        return False
    real = os.path.realpath(p)
    return any(real == top or real.startswith(top + "/") for top in _SYSTEM_FOLDERS)


def _kind(mode: int, p: Path) -> str:
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return f"a system file ({os.path.realpath(p)})"


def _unreadable(what: str, p: Path, exc: OSError) -> DocumentError:
    return DocumentError(
        f"{what} could not be read ({exc.strerror or 'input/output error'}): copy it to a "
        "local folder and pick it again in Settings.",
        p,
    )


def _decode_text(data: bytes, p: Path, what: str) -> str:
    """UTF-8 first (with or without BOM), then UTF-16 by BOM, then Windows-1252 as a last resort.

    Binary content saved under a .txt name (a renamed .docx, a PDF) is refused rather than fed
    to the model as garbage.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    if data.startswith(b"%PDF-") or data.startswith(b"PK\x03\x04") or b"\x00" in data[:4096]:
        raise DocumentError(
            f"{what} is not plain text (it looks like a PDF, Word or other binary file "
            f"renamed to {p.suffix}): {_FIX_TYPE}.",
            p,
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _strip_page_furniture(pages: list[str]) -> str:
    """Drop page numbers and running headers/footers repeated on most pages.

    Only the first and last two lines of each page are candidates, so a skill that really is
    listed on every page is not lost.
    """
    split = [[ln.strip() for ln in page.splitlines()] for page in pages]
    edges: Counter[str] = Counter()
    for lines in split:
        content = [ln for ln in lines if ln]
        edges.update({ln for ln in content[:2] + content[-2:]})
    threshold = max(2, (len(pages) + 1) // 2)
    repeated = {ln for ln, n in edges.items() if n >= threshold} if len(pages) > 1 else set()
    kept_pages: list[str] = []
    for lines in split:
        content = [ln for ln in lines if ln]
        edge = set(content[:2] + content[-2:])
        furniture = {ln for ln in edge if ln in repeated or _is_page_number(ln)}
        kept = [ln for ln in lines if ln not in furniture]
        kept_pages.append("\n".join(kept))
    return "\n\n".join(kept_pages)


def _is_page_number(line: str) -> bool:
    return len(line) <= _PAGE_NUMBER_MAX_CHARS and _PAGE_NUMBER.match(line) is not None


def _normalise(text: str, *, pdf: bool) -> str:
    """Plain, compact text: one space between words, at most one blank line between paragraphs."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n\n")
    for lig, plain in _LIGATURES.items():
        text = text.replace(lig, plain)
    text = _INVISIBLE.sub("", text)
    text = _CONTROL.sub(" ", text)
    text = _HSPACE.sub(" ", text)
    text = "\n".join(line.strip() for line in text.split("\n"))
    if pdf:
        text = _HYPHENATED.sub(r"\1\2", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def cap_text(text: str, max_chars: int) -> str:
    """Cut ``text`` to ``max_chars`` (marker included) at the latest clean boundary.

    A paragraph break is preferred, then a sentence or line end, then a space; a boundary
    is only used if it keeps at least 60% of the budget, otherwise the cut is hard.
    """
    if len(text) <= max_chars:
        return text
    budget = max_chars - len(TRUNCATION_MARKER) - 1  # 1 for the newline before the marker
    head = text[:budget]
    floor = int(budget * 0.6)
    cut = head.rfind("\n\n")
    if cut < floor:
        ends = [m.end() for m in _SENTENCE_END.finditer(head)]
        cut = ends[-1] if ends else -1
    if cut < floor:
        cut = head.rfind(" ")
    if cut < floor:
        cut = budget
    return head[:cut].rstrip() + "\n" + TRUNCATION_MARKER
