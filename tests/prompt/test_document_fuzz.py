"""Generated hostile input for the document readers (issue 42): random bytes under every
name, damaged zips, random and deeply nested Word XML, Markdown made of comment markers,
damaged PDFs.  Whatever the bytes, a read returns capped text or raises DocumentError,
within a bound derived from the time limit it was given: never another exception, never
a hang.  Where the old code is a correct answer (shallow XML, the comment regex on short
text), the new code must give the same one.
"""

from __future__ import annotations

import encodings
import encodings.aliases
import io
import pkgutil
import re
import tempfile
import time
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.prompt.documents import DocumentError, load_document, strip_html_comments
from app.prompt.docx import MAX_DEPTH, docx_text
from app.prompt.limits import READ_TIME_LIMIT_S, Deadline, Unreadable
from tests.prompt.test_document_readers import W_NS, make_docx, make_pdf

TIME_LIMIT = 0.25
"""Small, so that a read the limit stops is seen stopping."""
SLACK = 4.0
"""What a read may run past its limit: one step of a reader's loop (256 XML elements, one
64 KB chunk, one piece of a PDF page), the start of a PDF's reader process (an
interpreter and pypdf: its limit counts from when it is ready), and the scheduler of a
loaded two-core machine.  The old readers overran by minutes."""
MAX_CHARS = 2000

FUZZ = settings(max_examples=300, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def read(folder: Path, data: bytes, suffix: str, time_limit: float = TIME_LIMIT) -> str | None:
    """``load_document`` on ``data`` saved as ``cv<suffix>``: the text, or None when it was
    refused with a DocumentError; any other exception fails the example."""
    path = folder / f"cv{suffix}"
    path.write_bytes(data)
    began = time.monotonic()
    try:
        text: str | None = load_document(path, max_chars=MAX_CHARS, label="résumé", time_limit=time_limit)
    except DocumentError as exc:
        message = str(exc)
        assert message.startswith(f'The résumé file "cv{suffix}" ') and message.endswith(".")
        assert exc.__cause__ is None and "Settings" in message
        text = None
    elapsed = time.monotonic() - began
    assert elapsed < time_limit + SLACK, f"{elapsed:.2f} s"
    if text is not None:
        assert 0 < len(text) <= MAX_CHARS
    return text


SUFFIXES = st.sampled_from([".docx", ".pdf", ".txt", ".md", ".doc", ".odt", ".docm", ".markdown"])
MAGIC = st.sampled_from([b"", b"PK\x03\x04", b"%PDF-1.4\n", b"\xd0\xcf\x11\xe0", b"\xff\xfe", b"<!--"])


@FUZZ
@given(magic=MAGIC, body=st.binary(max_size=3000), suffix=SUFFIXES)
def test_random_bytes_under_any_name(folder: Path, magic: bytes, body: bytes, suffix: str) -> None:
    read(folder, magic + body, suffix)


W = "{" + W_NS + "}"
MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
TAGS = [W + t for t in ("p", "r", "t", "tab", "br", "cr", "pPr", "numPr", "txbxContent", "tbl", "tc", "sdt")]
TAGS += [MC_FALLBACK, "{urn:other}x"]
XML_CHARACTERS = st.characters(codec="utf-8", exclude_categories=["Cs", "Cc", "Cn"])
"""Any character XML may hold (no surrogates, controls or non-characters), tabs and newlines."""
WORDS = st.text(XML_CHARACTERS | st.sampled_from(" \t\n"), max_size=12)


def _element(tag: str, text: str, tail: str, children: list[ElementTree.Element]) -> ElementTree.Element:
    element = ElementTree.Element(tag)
    element.text, element.tail = text or None, tail or None
    element.extend(children)
    return element


ELEMENTS = st.recursive(
    st.builds(_element, st.sampled_from(TAGS), WORDS, WORDS, st.just([])),
    lambda children: st.builds(_element, st.sampled_from(TAGS), WORDS, WORDS, st.lists(children, max_size=5)),
    max_leaves=40,
)


def _document(children: list[ElementTree.Element]) -> bytes:
    body = _element(W + "body", "", "", children)
    return ElementTree.tostring(_element(W + "document", "", "", [body]))


def old_docx_text(xml: bytes) -> str:
    """The recursive walk this change replaced, kept as the oracle for shallow documents:
    its answers were right, only its depth and memory were unbounded."""
    lines: list[str] = []

    def paragraphs(node: ElementTree.Element) -> None:
        for child in node:
            if child.tag == MC_FALLBACK:
                continue
            if child.tag == W + "p":
                parts: list[str] = []
                boxes: list[ElementTree.Element] = []
                runs(child, parts, boxes)
                text = "".join(parts)
                if child.find(f"{W}pPr/{W}numPr") is not None and text.strip():
                    text = "- " + text.lstrip()
                if text.strip() or not boxes:
                    lines.append(text)
                for box in boxes:
                    paragraphs(box)
            else:
                paragraphs(child)

    def runs(node: ElementTree.Element, parts: list[str], boxes: list[ElementTree.Element]) -> None:
        for child in node:
            if child.tag == W + "t" and child.text:
                parts.append(child.text)
            elif child.tag == W + "tab":
                parts.append("\t")
            elif child.tag in (W + "br", W + "cr"):
                parts.append("\n")
            elif child.tag == W + "txbxContent":
                boxes.append(child)
            elif child.tag != MC_FALLBACK:
                runs(child, parts, boxes)

    paragraphs(ElementTree.fromstring(xml))
    return "\n".join(lines)


def _zipped(xml: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("word/document.xml", xml)
    return out.getvalue()


@FUZZ
@given(children=st.lists(ELEMENTS, max_size=6))
def test_word_xml_reads_as_the_recursive_walk_did(children: list[ElementTree.Element]) -> None:
    xml = _document(children)
    text = docx_text(_zipped(xml), deadline=Deadline(60.0), max_text=10**9)
    assert text == old_docx_text(xml)


PREFIXES = {W_NS: "w", MC_FALLBACK[1:].split("}")[0]: "mc", "urn:other": "o"}


def _prefixed(tag: str) -> str:
    namespace, local = tag[1:].split("}")
    return f"{PREFIXES[namespace]}:{local}"


@settings(FUZZ, max_examples=60)
@given(depth=st.integers(0, 3 * MAX_DEPTH), tags=st.lists(st.sampled_from(TAGS), min_size=1, max_size=4))
@example(depth=MAX_DEPTH - 5, tags=[W + "sdt"])  # the deepest read
@example(depth=MAX_DEPTH - 4, tags=[W + "sdt"])  # the shallowest refused
@example(depth=100_000, tags=[W + "r", W + "p"])
def test_word_xml_nested_at_any_depth(depth: int, tags: list[str]) -> None:
    """Read like the recursive walk up to the depth cap, refused past it; never a
    RecursionError.  (Written as a string: ElementTree's own writer recurses.)"""
    wrappers = [_prefixed(tags[level % len(tags)]) for level in range(depth)]
    declarations = " ".join(f'xmlns:{prefix}="{namespace}"' for namespace, prefix in PREFIXES.items())
    xml = (f"<w:document {declarations}><w:body>" + "".join(f"<{t}>" for t in wrappers)
           + "<w:p><w:r><w:t>deep</w:t></w:r></w:p>" + "".join(f"</{t}>" for t in reversed(wrappers))
           + "</w:body></w:document>").encode()
    opened = depth + 5  # document, body, the wrappers, p, r, t
    try:
        text = docx_text(_zipped(xml), deadline=Deadline(60.0), max_text=10**9)
    except Unreadable as exc:
        assert opened > MAX_DEPTH and "nested" in exc.reason
    else:
        assert opened <= MAX_DEPTH and text == old_docx_text(xml)


CODECS = sorted({module.name for module in pkgutil.iter_modules(encodings.__path__)}
                | set(encodings.aliases.aliases))
"""Every codec name Python knows, text or not (the test adds names no codec has)."""


@FUZZ
@given(encoding=st.sampled_from(CODECS) | st.text(st.sampled_from("abcxyz-_819"), max_size=12),
       children=st.lists(ELEMENTS, max_size=3))
@example(encoding="unicode_escape", children=[])
def test_word_xml_in_any_declared_encoding(folder: Path, encoding: str,
                                           children: list[ElementTree.Element]) -> None:
    """A package's parts declare UTF-8 or UTF-16 (ECMA-376 Part 2); any other name is refused
    before expat would hand it to one of Python's codecs, some of which are no text codec at
    all (``unicode_escape`` ran the body's backslashes as escapes, and warned)."""
    declaration = f'<?xml version="1.0" encoding="{encoding}"?>'.encode()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no codec of ours runs on the body: nothing warns
        text = read(folder, _zipped(declaration + _document(children)), ".docx")
    if encoding.lower() not in ("utf-8", "utf-16"):
        assert text is None


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` cut short, or with a few bytes overwritten (a header, a length, the
    compressed stream: wherever they fall)."""
    if draw(st.booleans()):
        return data[: draw(st.integers(0, len(data)))]
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        out[draw(st.integers(0, len(out) - 1))] = draw(st.integers(0, 255))
    return bytes(out)


PLAIN = st.characters(categories=["L", "N", "P", "Zs"], exclude_characters="\ufb00\ufb01\ufb02\ufb03\ufb04")
"""Characters normalising keeps as they are (no ligature, no invisible or control one), and spaces."""
PARAGRAPHS = st.lists(st.text(PLAIN, max_size=40), min_size=1, max_size=8)


def _docx_of(paragraphs: list[str]) -> bytes:
    return make_docx("".join(f"<w:p><w:r><w:t>{_escape(p)}</w:t></w:r></w:p>" for p in paragraphs))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@FUZZ
@given(data=st.data(), paragraphs=PARAGRAPHS, suffix=st.sampled_from([".docx", ".docm"]))
def test_damaged_word_files(folder: Path, data: st.DataObject, paragraphs: list[str], suffix: str) -> None:
    read(folder, data.draw(damaged(_docx_of(paragraphs))), suffix)


PART_NAMES = st.sampled_from(["word/document.xml", "[Content_Types].xml", "word/media/a.png", "x"])
PART_CONTENTS = st.binary(max_size=500) | st.builds(_document, st.lists(ELEMENTS, max_size=3))
MEMBERS = st.dictionaries(PART_NAMES, PART_CONTENTS, max_size=4)
COMPRESSIONS = st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                                zipfile.ZIP_LZMA])


@FUZZ
@given(members=MEMBERS, compression=COMPRESSIONS)
def test_random_zips(folder: Path, members: dict[str, bytes], compression: int) -> None:
    """Packages of any parts, the body XML or not, packed every way zipfile can."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as package:
        for name, content in members.items():
            package.writestr(name, content)
    read(folder, out.getvalue(), ".docx")


@settings(FUZZ, max_examples=60)
@given(paragraphs=PARAGRAPHS)
def test_whole_word_files_keep_their_words(folder: Path, paragraphs: list[str]) -> None:
    text = read(folder, _docx_of(paragraphs), ".docx", time_limit=READ_TIME_LIMIT_S)  # words, not time
    assert " ".join((text or "").split()) == " ".join(" ".join(paragraphs).split())


MARKERS = st.lists(st.sampled_from(["<!--", "-->", "<!-", "--", "-", "<", "!", ">", "a", "b", " ", "\n"]),
                   max_size=60).map("".join)
OLD_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@settings(FUZZ, max_examples=1000)
@given(text=MARKERS)
def test_comment_stripping_is_the_regex_s(text: str) -> None:
    assert strip_html_comments(text) == OLD_COMMENT.sub("", text)


@FUZZ
@given(text=MARKERS, repeat=st.integers(1, 20_000))
def test_markdown_of_comment_markers(folder: Path, text: str, repeat: int) -> None:
    read(folder, (text * repeat).encode(), ".md")


PRINTABLE = st.characters(min_codepoint=32, max_codepoint=126)
LINES = st.lists(st.lists(st.text(PRINTABLE, max_size=30), max_size=6), min_size=1, max_size=4)


@settings(FUZZ, max_examples=300)
@given(data=st.data(), pages=LINES)
def test_damaged_pdfs(folder: Path, data: st.DataObject, pages: list[list[str]]) -> None:
    read(folder, data.draw(damaged(make_pdf(pages))), ".pdf")


@settings(FUZZ, max_examples=60)
@given(line=st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz ABCXYZ,."), max_size=60))
def test_whole_pdfs_keep_their_words(folder: Path, line: str) -> None:
    """A one-page PDF of one line of words (nothing a page number could be) says them."""
    text = read(folder, make_pdf([[line]]), ".pdf", time_limit=READ_TIME_LIMIT_S)  # words, not time
    assert " ".join((text or "").split()) == " ".join(line.split())
