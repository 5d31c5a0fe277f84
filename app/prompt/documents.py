"""Résumé and job-description files, turned into short clean text for the prompt.

Everything here runs once per session, before the first question, so it favours clear
failure messages over speed: a bad file must end up as one sentence in the UI telling the
user which file is wrong and what to do, never as a traceback.  The text is capped because
it sits in every request's prefix: a 20-page CV would cost latency and money on every turn.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

RESUME_MAX_CHARS = 6000
JOB_DESCRIPTION_MAX_CHARS = 3000
TRUNCATION_MARKER = "[…truncated]"
MAX_FILE_BYTES = 20 * 1024 * 1024
"""Bigger files are not résumés; refusing them early keeps a wrong pick from hanging the app."""
MAX_PDF_PAGES = 40

TEXT_SUFFIXES = frozenset({".txt", ".text", ".md", ".markdown"})
PDF_SUFFIXES = frozenset({".pdf"})
DOCX_SUFFIXES = frozenset({".docx", ".docm"})
MAX_DOCX_XML_BYTES = 50 * 1024 * 1024
"""The unpacked document body we will parse: a résumé's is well under 1 MB, and a zip bomb
renamed .docx must not fill the memory."""

_FIX_TYPE = "save it as .docx, .pdf, .txt or .md and pick it again in Settings"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"}
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_HSPACE = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_PAGE_NUMBER = re.compile(
    r"^(?:page\s*)?[-–—]?\s*\d{1,3}\s*(?:(?:/|of)\s*\d{1,3})?\s*[-–—]?$|^第\s*\d{1,3}\s*页(?:\s*/?\s*共\s*\d{1,3}\s*页)?$",
    re.IGNORECASE,
)
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


def load_document(path: str | Path, *, max_chars: int, label: str = "document") -> str:
    """Read a .txt/.md/.pdf/.docx file into normalised text of at most ``max_chars`` characters.

    Raises :class:`DocumentError` for every way a user-picked file can be unusable, so the
    caller needs one ``except`` and can show ``str(exc)`` as is.
    """
    if max_chars < len(TRUNCATION_MARKER) + 1:
        raise ValueError(f"max_chars must be at least {len(TRUNCATION_MARKER) + 1}")
    p = Path(path).expanduser()
    what = f'The {label} file "{p.name or p}"'
    data = _read_bytes(p, what)
    suffix = p.suffix.lower()
    if suffix in PDF_SUFFIXES:
        text = _normalise(_strip_page_furniture(_pdf_pages(data, p, what, max_chars)), pdf=True)
        if not text:
            raise DocumentError(
                f"{what} has no selectable text (it may be a scanned image): export it as a "
                "text PDF, or paste the text into a .txt file and pick that in Settings.",
                p,
            )
    elif suffix in DOCX_SUFFIXES:
        text = _normalise(_docx_text(data, p, what), pdf=False)
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
            raw = _HTML_COMMENT.sub("", raw)
        text = _normalise(raw, pdf=False)
        if not text:
            raise DocumentError(f"{what} is empty: add the text and pick it again in Settings.", p)
    else:
        raise DocumentError(f"{what} is not a Word, PDF, text or Markdown file: {_FIX_TYPE}.", p)
    return cap_text(text, max_chars)


def _read_bytes(p: Path, what: str) -> bytes:
    try:
        if not p.exists():
            raise DocumentError(
                f"{what} was not found at {p}: it may have been moved or deleted; "
                "pick it again in Settings.",
                p,
            )
        if p.is_dir():
            raise DocumentError(
                f"{what} is a folder, not a file: pick the file itself in Settings.", p
            )
        if p.stat().st_size > MAX_FILE_BYTES:
            raise DocumentError(
                f"{what} is too large ({p.stat().st_size // (1024 * 1024)} MB) to be a résumé or "
                "job description: pick a smaller file in Settings.",
                p,
            )
        data = p.read_bytes()
    except PermissionError:
        raise DocumentError(
            f"{what} could not be opened (permission denied): move it somewhere you can read "
            "it, such as your Documents folder, and pick it again in Settings.",
            p,
        ) from None
    except OSError as exc:
        raise DocumentError(
            f"{what} could not be read ({exc.strerror or 'input/output error'}): copy it to a "
            "local folder and pick it again in Settings.",
            p,
        ) from None
    if not data.strip():
        raise DocumentError(f"{what} is empty: add the text and pick it again in Settings.", p)
    return data


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


def _pdf_pages(data: bytes, p: Path, what: str, max_chars: int) -> list[str]:
    """Text of each page; stops early once far more than the cap has been extracted."""
    if b"%PDF-" not in data[:1024]:
        raise DocumentError(
            f"{what} is not a real PDF (its contents are something else): {_FIX_TYPE}.", p
        )
    try:
        from pypdf import PdfReader

        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError(
                f"{what} is password-protected: save a copy without a password and pick it "
                "again in Settings.",
                p,
            )
        pages: list[str] = []
        total = 0
        for page in reader.pages[:MAX_PDF_PAGES]:
            text = page.extract_text() or ""
            pages.append(text)
            total += len(text)
            if total > 3 * max_chars:
                break
        return pages
    except DocumentError:
        raise
    except Exception:  # pypdf raises many types (and plain ones) for damaged files
        raise DocumentError(
            f"{what} could not be read as a PDF (it may be damaged): export or download it "
            "again, or save it as .txt, and pick it again in Settings.",
            p,
        ) from None


def _docx_text(data: bytes, p: Path, what: str) -> str:
    """The text of a Word document: every paragraph in reading order, one per line.

    Read straight from the package (``word/document.xml``) with the standard library
    rather than python-docx: we only need the words, python-docx skips text boxes and
    walks tables apart from paragraphs (a two-column résumé is usually one or the other),
    and it would add lxml, a native library, to every installer.  Every ``w:p`` is taken
    in document order, tables and text boxes included; tabs and line breaks are kept,
    and a list paragraph gets a "- " so the recall and the model see bullets.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            info = package.getinfo("word/document.xml")
            if info.file_size > MAX_DOCX_XML_BYTES:
                raise DocumentError(
                    f"{what} is too large once unpacked to be a résumé or job description: "
                    "pick a smaller file in Settings.",
                    p,
                )
            xml = package.read(info)
    except DocumentError:
        raise
    except RuntimeError:  # zipfile: "File is encrypted, password required"
        raise DocumentError(
            f"{what} is password-protected: save a copy without a password and pick it "
            "again in Settings.",
            p,
        ) from None
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, EOFError, NotImplementedError):
        encrypted = data.startswith(b"\xd0\xcf\x11\xe0")  # Word saves protected files in OLE
        raise DocumentError(
            f"{what} is password-protected: save a copy without a password and pick it "
            "again in Settings." if encrypted else
            f"{what} could not be read as a Word document (it may be damaged, or another "
            f"kind of file renamed to {p.suffix}): {_FIX_TYPE}.",
            p,
        ) from None
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError:
        raise DocumentError(
            f"{what} could not be read as a Word document (its text is damaged): "
            f"{_FIX_TYPE}.",
            p,
        ) from None
    lines: list[str] = []
    _docx_paragraphs(root, lines)
    return "\n".join(lines)


def _docx_paragraphs(node: ElementTree.Element, lines: list[str]) -> None:
    """Append the text of each paragraph under ``node`` in reading order; a text box's
    paragraphs come after the paragraph that anchors it, and the VML copy Word keeps of
    each text box for old readers (``mc:Fallback``) is skipped, so nothing is said twice."""
    for child in node:
        if child.tag == _MC_FALLBACK:
            continue
        if child.tag == f"{_W}p":
            parts: list[str] = []
            boxes: list[ElementTree.Element] = []
            _docx_runs(child, parts, boxes)
            text = "".join(parts)
            if child.find(f"{_W}pPr/{_W}numPr") is not None and text.strip():
                text = "- " + text.lstrip()
            if text.strip() or not boxes:  # an empty paragraph is spacing; an anchor is not
                lines.append(text)
            for box in boxes:
                _docx_paragraphs(box, lines)
        else:
            _docx_paragraphs(child, lines)


def _docx_runs(node: ElementTree.Element, parts: list[str], boxes: list[ElementTree.Element]) -> None:
    for child in node:
        tag = child.tag
        if tag == f"{_W}t" and child.text:
            parts.append(child.text)
        elif tag == f"{_W}tab":
            parts.append("\t")
        elif tag in (f"{_W}br", f"{_W}cr"):
            parts.append("\n")
        elif tag == f"{_W}txbxContent":
            boxes.append(child)
        elif tag != _MC_FALLBACK:
            _docx_runs(child, parts, boxes)


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
        furniture = {ln for ln in edge if ln in repeated or _PAGE_NUMBER.match(ln)}
        kept = [ln for ln in lines if ln not in furniture]
        kept_pages.append("\n".join(kept))
    return "\n\n".join(kept_pages)


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
