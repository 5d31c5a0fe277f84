"""The text of a Word document (.docx), read as a stream within fixed bounds.

Read straight from the package (``word/document.xml``) with the standard library rather
than python-docx: we only need the words, python-docx skips text boxes and walks tables
apart from paragraphs (a two-column résumé is usually one or the other), and it would add
lxml, a native library, to every installer.  Every ``w:p`` is taken in document order,
tables and text boxes included; tabs and line breaks are kept, and a list paragraph gets
a "- " so the recall and the model see bullets.

A .docx is a zip of XML, and both layers can be made hostile: a few KB that unpack to
gigabytes, thousands of parts, elements nested deeper than any stack.  So the body is
unpacked in chunks and fed to expat as it comes (never a whole tree in memory, never a
recursive walk), and reading stops at the caps below, at the text budget, or at the
deadline.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from xml.parsers import expat

from app.prompt.limits import Deadline, Unreadable

MAX_XML_BYTES = 4 * 1024 * 1024
"""The unpacked body we will read.  Word writes a few hundred bytes of markup around each
run of text, so a long résumé's ``word/document.xml`` is a few hundred KB (300 bulleted
paragraphs: 400 KB, read in 0.06 s); 4 MB is ten times that, and a zip bomb stops here,
counted as it unpacks (the size the zip declares is not trusted)."""

MAX_PARTS = 1000
"""Entries in the package.  A Word file has a dozen parts plus one per picture, header and
footer (a résumé: under 50); zipfile makes an object per entry before we can look at any,
so a 20 MB file of hundreds of thousands of empty entries is refused before it is opened."""

MAX_DEPTH = 500
"""Element nesting.  The deepest Word writes — a text box inside a table inside a content
control — is a few dozen levels; a document nested thousands deep is built to break
readers (a recursive walk raises RecursionError at about 1,000)."""

_CHUNK = 64 * 1024
"""Bytes unpacked and parsed at a time: the memory the body takes, whatever its size."""

_CHECK_EVERY = 256
"""Elements between two looks at the clock: a fraction of a millisecond of work, so the
deadline is overrun by no more than that."""

_CENTRAL_DIRECTORY_ENTRY = b"PK\x01\x02"
_OLE_SIGNATURE = b"\xd0\xcf\x11\xe0"  # Word saves password-protected files in OLE, not zip
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_P, _T, _TAB, _BR, _CR = _W + "p", _W + "t", _W + "tab", _W + "br", _W + "cr"
_PPR, _NUMPR, _TEXT_BOX = _W + "pPr", _W + "numPr", _W + "txbxContent"
_FALLBACK = "http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_BODY = "word/document.xml"

_DECLARED_ENCODING = re.compile(rb"\A(?:\xef\xbb\xbf)?<\?xml[^>]*?\bencoding\s*=\s*[\"']([^\"']*)[\"']")
_OPC_ENCODINGS = (b"utf-8", b"utf-16")
"""The only encodings a part of an Office package may declare (ECMA-376 Part 2, Open
Packaging Conventions): any other name is refused before expat hands it to one of
Python's codecs, some of which are not text encodings at all (``unicode_escape``)."""

_FIX_TYPE = "save it as .docx, .pdf, .txt or .md and pick it again in Settings"
_PROTECTED = "is password-protected: save a copy without a password and pick it again in Settings"
_NOT_WORD = (
    "could not be read as a Word document (it may be damaged, or another kind of file "
    "renamed as one): " + _FIX_TYPE
)
_TEXT_DAMAGED = f"could not be read as a Word document (its text is damaged): {_FIX_TYPE}"


def docx_text(data: bytes, *, deadline: Deadline, max_text: int) -> str:
    """Every paragraph's text in reading order, one per line, stopping after about
    ``max_text`` characters.  Raises :class:`Unreadable` for any file it cannot read."""
    walker = _Walker(deadline, max_text)
    parser = _parser(walker)
    try:
        for number, chunk in enumerate(_body_chunks(data)):
            if number == 0:
                _check_declared_encoding(chunk)
            parser.Parse(chunk, False)
            deadline.check()
        parser.Parse(b"", True)
    except _Full:
        walker.close()
    except (expat.ExpatError, ValueError, LookupError):
        # ValueError and LookupError: an encoding expat cannot take after all (UTF-16 in
        # a body that is not); Word writes UTF-8.
        raise Unreadable(_TEXT_DAMAGED) from None
    return "\n".join(walker.lines)


def _body_chunks(data: bytes) -> Iterator[bytes]:
    """``word/document.xml`` unpacked a chunk at a time, up to :data:`MAX_XML_BYTES`."""
    if data.startswith(_OLE_SIGNATURE):
        raise Unreadable(_PROTECTED)
    if data.count(_CENTRAL_DIRECTORY_ENTRY) > MAX_PARTS:
        raise Unreadable(
            f"has more than {MAX_PARTS} parts, far more than a Word document has: {_FIX_TYPE}"
        )
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
        info = package.getinfo(_BODY)
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            # Word and every other editor deflate; bzip2 and LZMA would unpack a whole
            # compressed chunk at once, whatever it expands to.
            raise Unreadable(_NOT_WORD)
        member = package.open(info)
    except Unreadable:
        raise
    except RuntimeError:  # zipfile: "File is encrypted, password required"
        raise Unreadable(_PROTECTED) from None
    except Exception:  # zipfile raises a dozen types on a damaged package, none of them ours
        raise Unreadable(_NOT_WORD) from None
    with package, member:
        unpacked = 0
        while True:
            try:
                chunk = member.read(_CHUNK)
            except Exception:  # a bad CRC, a broken deflate stream, a truncated member
                raise Unreadable(_NOT_WORD) from None
            if not chunk:
                return
            unpacked += len(chunk)
            if unpacked > MAX_XML_BYTES:
                raise Unreadable(
                    "is too large once unpacked to be a résumé or job description: "
                    "pick a smaller file in Settings"
                )
            yield chunk


def _check_declared_encoding(start: bytes) -> None:
    """Refuse a body whose XML declaration names an encoding a package may not use."""
    declared = _DECLARED_ENCODING.match(start)
    if declared is not None and declared.group(1).lower() not in _OPC_ENCODINGS:
        raise Unreadable(_TEXT_DAMAGED)


def _parser(walker: _Walker) -> expat.XMLParserType:
    """An expat parser that feeds ``walker`` and refuses any DTD: Word never writes one,
    and a DTD is where entity expansion (the billion laughs) would come from."""
    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True
    parser.ordered_attributes = True
    parser.StartElementHandler = walker.start
    parser.EndElementHandler = walker.end
    parser.CharacterDataHandler = walker.data
    parser.StartDoctypeDeclHandler = _refuse_dtd
    return parser


def _refuse_dtd(*_: object) -> None:
    raise Unreadable(_TEXT_DAMAGED)


class _Full(Exception):
    """The text budget is spent: the rest of the document would be cut off anyway."""


@dataclass(slots=True)
class _Paragraph:
    """A ``w:p`` being read: its text so far and what its text boxes said."""

    target: list[str]
    """Where its line goes: the document's lines, or the text box's paragraph holding it."""
    parts: list[str] = field(default_factory=list)
    box_lines: list[str] = field(default_factory=list)
    bullet: bool = False
    has_box: bool = False

    def finish(self) -> None:
        """Its line, then its text boxes' lines (a box is read after the paragraph that
        anchors it); a paragraph that only anchors boxes adds no line of its own, an empty
        one is spacing and does."""
        text = "".join(self.parts)
        if self.bullet and text.strip():
            text = "- " + text.lstrip()
        if text.strip() or not self.has_box:
            self.target.append(text)
        self.target.extend(self.box_lines)


# What an open element is to the walk: between paragraphs (body, table, text box), inside
# a paragraph, a w:t whose text is being taken, a w:t whose text is taken, or ignored (the
# VML copy of a text box Word keeps for old readers, in mc:Fallback; what a w:tab holds).
_BLOCK, _RUN, _TEXT, _TEXT_TAKEN, _SKIP = range(5)


@dataclass(slots=True)
class _Open:
    mode: int
    target: list[str]
    paragraph: _Paragraph | None = None
    text: list[str] | None = None
    role: str = ""
    """"p" for the paragraph's own element, "pPr" for its properties (where a list
    paragraph says it is one)."""


class _Walker:
    """The reading-order walk over expat's events, with an explicit stack of open
    elements: a document nested deeper than :data:`MAX_DEPTH` is refused, never a
    recursion error."""

    def __init__(self, deadline: Deadline, max_text: int) -> None:
        self.lines: list[str] = []
        self._deadline = deadline
        self._left = max_text
        self._open: list[_Open] = []
        self._elements = 0

    def start(self, name: str, _attributes: list[str]) -> None:
        self._elements += 1
        if self._elements % _CHECK_EVERY == 0:
            self._deadline.check()
        if self._left < 0:
            raise _Full
        if len(self._open) >= MAX_DEPTH:
            raise Unreadable(
                f"could not be read as a Word document (its text is nested over {MAX_DEPTH} levels "
                f"deep, far deeper than any editor writes): {_FIX_TYPE}"
            )
        if not self._open:  # the document element itself is never a paragraph
            self._open.append(_Open(_BLOCK, self.lines))
            return
        parent = self._open[-1]
        if parent.mode == _TEXT:
            parent = self._text_has_children(parent)
        self._open.append(self._child(parent, name))

    def _child(self, parent: _Open, name: str) -> _Open:
        if parent.mode in (_SKIP, _TEXT_TAKEN) or name == _FALLBACK:
            return _Open(_SKIP, parent.target)
        if parent.mode == _BLOCK:
            if name == _P:
                return _Open(_RUN, parent.target, _Paragraph(parent.target), role="p")
            return _Open(_BLOCK, parent.target)
        paragraph = parent.paragraph
        assert paragraph is not None
        if name == _T:
            return _Open(_TEXT, parent.target, paragraph, text=[])
        if name in (_TAB, _BR, _CR):
            self._add(paragraph, "\t" if name == _TAB else "\n")
            return _Open(_SKIP, parent.target)
        if name == _TEXT_BOX:
            paragraph.has_box = True
            return _Open(_BLOCK, paragraph.box_lines)
        if parent.role == "pPr" and name == _NUMPR:
            paragraph.bullet = True
        role = "pPr" if parent.role == "p" and name == _PPR else ""
        return _Open(_RUN, parent.target, paragraph, role=role)

    def _text_has_children(self, element: _Open) -> _Open:
        """A w:t that holds elements: its text is what came before the first one (and
        then its children are ignored); with no text before it, it is read like a run."""
        assert element.paragraph is not None and element.text is not None
        if element.text:  # already spent from the budget as it came
            element.paragraph.parts.append("".join(element.text))
            element.mode = _TEXT_TAKEN
        else:
            element.mode = _RUN
        element.text = None
        return element

    def data(self, text: str) -> None:
        element = self._open[-1] if self._open else None
        if element is not None and element.mode == _TEXT and element.text is not None:
            element.text.append(text)
            self._spend(len(text))

    def end(self, _name: str) -> None:
        element = self._open.pop()
        if element.mode == _TEXT and element.text and element.paragraph is not None:
            element.paragraph.parts.append("".join(element.text))
        elif element.role == "p" and element.paragraph is not None:
            element.paragraph.finish()
            self._left -= 1  # its line break; the next element or text raises once overspent

    def close(self) -> None:
        """End every open element, so the paragraphs read so far keep their text."""
        while self._open:
            self.end("")

    def _add(self, paragraph: _Paragraph, text: str) -> None:
        paragraph.parts.append(text)
        self._spend(len(text))

    def _spend(self, characters: int) -> None:
        self._left -= characters
        if self._left < 0:
            raise _Full
