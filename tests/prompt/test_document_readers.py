"""Résumé / job-description loading: real files on disk, including a PDF written by hand."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import pypdf
import pytest

from app.prompt.documents import (
    TRUNCATION_MARKER,
    DocumentError,
    cap_text,
    load_document,
    load_job_description,
    load_resume,
)
from app.prompt.docx import MAX_XML_BYTES


def make_pdf(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF: one Helvetica text line per entry, one page per list."""
    n = len(pages)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n))
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for i, lines in enumerate(pages):
        ops = ["BT", "/F1 11 Tf", "14 TL", "72 760 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({escaped}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("cp1252")
        objs.append(
            (
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>"
            ).encode()
        )
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


RESUME_PAGES = [
    ["ACME Staffing - Confidential", "Jane Doe", "Senior engineer at Initech, 2019-2024.", "1"],
    ["ACME Staffing - Confidential", "Education: BSc Computer Sci-", "ence, 2015.", "Page 2 of 2"],
]


def test_handmade_pdf_is_real_for_pypdf() -> None:
    reader = pypdf.PdfReader(io.BytesIO(make_pdf(RESUME_PAGES)), strict=True)
    assert len(reader.pages) == 2
    assert "Jane Doe" in reader.pages[0].extract_text()


def test_pdf_text_without_page_furniture(tmp_path: Path) -> None:
    path = tmp_path / "cv.pdf"
    path.write_bytes(make_pdf(RESUME_PAGES))
    text = load_resume(path)
    assert "Jane Doe" in text
    assert "Senior engineer at Initech, 2019-2024." in text
    assert "Computer Science, 2015." in text  # hyphenation across lines joined
    assert "Confidential" not in text  # running header on every page
    assert "Page 2 of 2" not in text
    assert "\n1\n" not in f"\n{text}\n"


def test_pdf_capped_at_a_clean_boundary(tmp_path: Path) -> None:
    sentences = [f"Led project number {i} to a good result." for i in range(60)]
    path = tmp_path / "long.pdf"
    path.write_bytes(make_pdf([sentences[:30], sentences[30:]]))
    text = load_document(path, max_chars=500)
    assert len(text) <= 500
    assert text.endswith("\n" + TRUNCATION_MARKER)
    assert text.removesuffix("\n" + TRUNCATION_MARKER).endswith("result.")


def test_txt_is_normalised(tmp_path: Path) -> None:
    path = tmp_path / "resume.txt"
    raw = (
        "\ufeffJane   Doe\r\n\tPython\u00a0and  Go\r\n\r\n\r\n\r\n"
        "E\ufb03cient tea\u00admwork  \r\n"
    )
    path.write_bytes(raw.encode("utf-8"))
    assert load_resume(path) == "Jane Doe\nPython and Go\n\nEfficient teamwork"


def test_utf16_and_cp1252_text(tmp_path: Path) -> None:
    utf16 = tmp_path / "a.txt"
    utf16.write_bytes("Zoë – résumé".encode("utf-16"))
    assert load_resume(utf16) == "Zoë – résumé"
    legacy = tmp_path / "b.txt"
    legacy.write_bytes("Zoë résumé".encode("cp1252"))
    assert load_resume(legacy) == "Zoë résumé"


def test_markdown_keeps_structure_drops_comments(tmp_path: Path) -> None:
    path = tmp_path / "jd.md"
    path.write_text(
        "# Backend Engineer\n\n<!-- internal: salary band 5 -->\n\n## You will\n\n- Build   APIs\n",
        encoding="utf-8",
    )
    assert load_job_description(path) == "# Backend Engineer\n\n## You will\n\n- Build APIs"


def test_caps_default_to_resume_and_jd_sizes(tmp_path: Path) -> None:
    paragraph = "I shipped a feature that users liked. " * 20
    path = tmp_path / "big.txt"
    path.write_text("\n\n".join([paragraph.strip()] * 40), encoding="utf-8")
    resume, jd = load_resume(path), load_job_description(path)
    assert len(resume) <= 6000 and len(jd) <= 3000
    assert resume.endswith(TRUNCATION_MARKER) and jd.endswith(TRUNCATION_MARKER)
    assert resume.removesuffix("\n" + TRUNCATION_MARKER).endswith("liked.")


def test_cap_text_prefers_paragraph_then_sentence_then_space() -> None:
    assert cap_text("short", 100) == "short"
    para = "A" * 70 + ".\n\n" + "B" * 100
    assert cap_text(para, 100) == "A" * 70 + ".\n" + TRUNCATION_MARKER
    sentence = "First sentence here. " * 10
    capped = cap_text(sentence, 100)
    assert len(capped) <= 100 and capped.split("\n")[0].endswith("here.")
    chinese = "我负责后端服务的设计和开发。" * 20
    capped = cap_text(chinese, 100)
    assert len(capped) <= 100 and capped.split("\n")[0].endswith("。")
    no_spaces = "x" * 300
    hard = "x" * (100 - len(TRUNCATION_MARKER) - 1)
    assert cap_text(no_spaces, 100) == hard + "\n" + TRUNCATION_MARKER


def _error(path: Path, label: str = "résumé") -> DocumentError:
    with pytest.raises(DocumentError) as info:
        load_document(path, max_chars=6000, label=label)
    exc = info.value
    assert exc.path.name == path.name
    assert f'"{path.name}"' in str(exc)
    assert exc.__cause__ is None  # no chained traceback shown with it
    assert exc.__context__ is None or exc.__suppress_context__
    assert str(exc).endswith(".") and "Settings" in str(exc)
    return exc


def test_missing_file(tmp_path: Path) -> None:
    assert "was not found" in str(_error(tmp_path / "gone.pdf"))


def test_empty_and_blank_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert "is empty" in str(_error(empty))
    blank = tmp_path / "blank.md"
    blank.write_text(" \n\t\n", encoding="utf-8")
    assert "is empty" in str(_error(blank))
    only_comment = tmp_path / "comment.md"
    only_comment.write_text("<!-- nothing -->\n", encoding="utf-8")
    assert "is empty" in str(_error(only_comment))


def test_wrong_type(tmp_path: Path) -> None:
    odt = tmp_path / "resume.odt"
    odt.write_bytes(b"PK\x03\x04 open document stuff")
    message = str(_error(odt, "job description"))
    assert message == (
        'The job description file "resume.odt" is not a Word, PDF, text or Markdown file: '
        "save it as .docx, .pdf, .txt or .md and pick it again in Settings."
    )
    old_word = tmp_path / "cv.doc"
    old_word.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64)
    assert "old Word format (.doc)" in str(_error(old_word))


W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def make_docx(body: str, *, extra: dict[str, str] | None = None) -> bytes:
    """A .docx as Word lays it out: a zip whose word/document.xml holds ``body``."""
    xml = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f'<w:document xmlns:w="{W_NS}" '
        'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
        'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape">'
        f"<w:body>{body}</w:body></w:document>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", "<Types/>")
        package.writestr("word/document.xml", xml)
        for name, data in (extra or {}).items():
            package.writestr(name, data)
    return out.getvalue()


def _p(text: str, *, bullet: bool = False) -> str:
    props = "<w:pPr><w:numPr><w:ilvl w:val=\"0\"/><w:numId w:val=\"1\"/></w:numPr></w:pPr>" if bullet else ""
    runs = "".join(f"<w:r><w:t xml:space=\"preserve\">{part}</w:t></w:r>" for part in text.split("|"))
    return f"<w:p>{props}{runs}</w:p>"


def test_docx_paragraphs_lists_tables_and_text_boxes_in_reading_order(tmp_path: Path) -> None:
    box = (  # a text box, with the VML copy Word keeps for old readers (must not be read twice)
        "<w:p><w:r><mc:AlternateContent><mc:Choice Requires=\"wps\"><w:drawing><wps:txbx>"
        f"<w:txbxContent>{_p('Skills: Go, Kafka')}</w:txbxContent></wps:txbx></w:drawing></mc:Choice>"
        f"<mc:Fallback><w:pict><w:txbxContent>{_p('Skills: Go, Kafka')}</w:txbxContent></w:pict>"
        "</mc:Fallback></mc:AlternateContent></w:r></w:p>"
    )
    table = (f"<w:tbl><w:tr><w:tc>{_p('2019–2024')}</w:tc><w:tc>{_p('Engineer at Initech')}</w:tc>"
             "</w:tr></w:tbl>")
    body = (_p("Jane |Doe") + _p("Led the |Kafka migration", bullet=True)
            + "<w:p><w:r><w:t>Phone</w:t><w:tab/><w:t>555</w:t><w:br/><w:t>Lisbon</w:t></w:r></w:p>"
            + table + box + "<w:p><w:del><w:r><w:delText>deleted words</w:delText></w:r></w:del></w:p>")
    path = tmp_path / "Jane Doe.docx"
    path.write_bytes(make_docx(body))
    assert load_resume(path) == (
        "Jane Doe\n- Led the Kafka migration\nPhone 555\nLisbon\n2019–2024\nEngineer at Initech\n"
        "Skills: Go, Kafka"
    )


def test_docx_that_cannot_be_read_says_why(tmp_path: Path) -> None:
    fake = tmp_path / "cv.docx"
    fake.write_text("plain text saved with a .docx name", encoding="utf-8")
    message = str(_error(fake))
    assert message.startswith('The résumé file "cv.docx" could not be read as a Word document')
    assert "save it as .docx, .pdf, .txt or .md" in message
    not_word = tmp_path / "photos.docx"
    not_word.write_bytes(_zip({"image.png": "x"}))  # a zip, but no Word body in it
    assert "could not be read as a Word document" in str(_error(not_word))
    protected = tmp_path / "locked.docx"  # Word encrypts into an OLE container, not a zip
    protected.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512)
    assert "password-protected" in str(_error(protected))
    empty = tmp_path / "empty.docx"
    empty.write_bytes(make_docx(_p(" ")))
    assert "has no text" in str(_error(empty))
    broken = tmp_path / "broken.docx"
    broken.write_bytes(_zip({"word/document.xml": "<w:document><w:body>"}))
    assert "its text is damaged" in str(_error(broken))


def _zip(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        for name, data in files.items():
            package.writestr(name, data)
    return out.getvalue()


def test_binary_renamed_to_txt(tmp_path: Path) -> None:
    fake = tmp_path / "cv.txt"
    fake.write_bytes(make_pdf(RESUME_PAGES))
    assert "not plain text" in str(_error(fake))


def test_corrupt_pdf(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 9 0 R >>\ngarbage\x00\xff")
    assert "could not be read as a PDF" in str(_error(broken))
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(make_pdf(RESUME_PAGES)[:200])
    assert "could not be read as a PDF" in str(_error(truncated))


def test_pdf_that_is_not_a_pdf(tmp_path: Path) -> None:
    text = tmp_path / "cv.pdf"
    text.write_text("I am plain text with a .pdf name", encoding="utf-8")
    assert "is not a real PDF" in str(_error(text))


def test_pdf_without_text(tmp_path: Path) -> None:
    scanned = tmp_path / "scan.pdf"
    scanned.write_bytes(make_pdf([[], []]))
    assert "no selectable text" in str(_error(scanned))


def test_password_protected_pdf(tmp_path: Path) -> None:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(make_pdf(RESUME_PAGES))))
    writer.encrypt(user_password="secret", owner_password="owner")
    locked = tmp_path / "locked.pdf"
    with locked.open("wb") as fh:
        writer.write(fh)
    assert "password-protected" in str(_error(locked))


def test_folder(tmp_path: Path) -> None:
    folder = tmp_path / "cv.pdf"
    folder.mkdir()
    assert "is a folder" in str(_error(folder))


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path: Path) -> None:
    locked = tmp_path / "cv.txt"
    locked.write_text("Jane", encoding="utf-8")
    locked.chmod(0)
    try:
        assert "permission denied" in str(_error(locked))
    finally:
        locked.chmod(0o600)


def test_read_errors_become_document_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cv.txt"
    path.write_text("Jane", encoding="utf-8")

    real_open, real_read = os.open, os.read
    ours: set[int] = set()

    def denied(name: str | os.PathLike[str], *args: int) -> int:
        if Path(name) == path:
            raise PermissionError(13, "Permission denied")
        return real_open(name, *args)

    monkeypatch.setattr(os, "open", denied)
    assert "permission denied" in str(_error(path))

    def opened(name: str | os.PathLike[str], *args: int) -> int:
        fd = real_open(name, *args)
        if Path(name) == path:
            ours.add(fd)
        return fd

    def io_error(fd: int, n: int) -> bytes:
        if fd in ours:
            raise OSError(5, "Input/output error")
        return real_read(fd, n)

    monkeypatch.setattr(os, "open", opened)
    monkeypatch.setattr(os, "read", io_error)
    assert "Input/output error" in str(_error(path))


# Hostile files: every reader is bounded in time and memory, whatever the bytes (issue 42).


def _read_in_child(path: Path, max_chars: int, timeout: float = 60.0) -> str:
    """``load_document`` in a child process, so a reader that never ends fails the test
    (after ``timeout``) instead of holding the suite: a regex cannot be interrupted."""
    code = ("import sys; from app.prompt.documents import load_document; "
            "sys.stdout.buffer.write(load_document(sys.argv[1], max_chars=int(sys.argv[2])).encode())")
    done = subprocess.run([sys.executable, "-c", code, str(path), str(max_chars)],
                          capture_output=True, text=True, encoding="utf-8", timeout=timeout,
                          cwd=Path(__file__).resolve().parents[2], check=True)
    return done.stdout


def test_markdown_of_unclosed_comments_is_read_in_linear_time(tmp_path: Path) -> None:
    """2 MB of ``<!--`` without a ``-->``: the old regex tried each one against the rest of
    the file (80 KB took 11 s, so this would take hours); one pass takes milliseconds.  The
    unclosed markers stay as text, as they did."""
    path = tmp_path / "cv.md"
    path.write_text("# Jane Doe\n\n" + "<!--" * 500_000, encoding="utf-8")
    text = _read_in_child(path, max_chars=200)
    assert text.startswith("# Jane Doe\n\n<!--<!--") and text.endswith(TRUNCATION_MARKER)


def test_pdf_line_of_many_spaces_is_read_in_linear_time(tmp_path: Path) -> None:
    """A page whose first line is a number, 100,000 spaces and a word: the page-number
    pattern split the run of spaces every way it could (40,000 spaces: 34 s)."""
    path = tmp_path / "cv.pdf"
    path.write_bytes(make_pdf([["1" + " " * 100_000 + "Jane", "Doe"]]))
    text = _read_in_child(path, max_chars=30_000)
    assert text == "1 Jane\nDoe"


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_docx_nested_thousands_deep_is_refused_not_a_crash(tmp_path: Path, depth: int) -> None:
    """The old recursive walk raised RecursionError, which nobody caught."""
    path = tmp_path / "deep.docx"
    path.write_bytes(make_docx("<w:sdt>" * depth + _p("Jane Doe") + "</w:sdt>" * depth))
    assert "nested over 500 levels deep" in str(_error(path))


def test_docx_nested_as_deep_as_word_goes_is_read(tmp_path: Path) -> None:
    tables = "<w:tbl><w:tr><w:tc>" * 40 + _p("Jane Doe") + "</w:tc></w:tr></w:tbl>" * 40
    path = tmp_path / "tables.docx"
    path.write_bytes(make_docx(tables))
    assert load_resume(path) == "Jane Doe"


def _deflated(name: str, xml: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as package:
        package.writestr(name, xml)
    return out.getvalue()


def _peak_bytes_while(read: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        read()
    except DocumentError:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_docx_bomb_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """16 KB unpacking to 10 MB of elements: the old reader built the whole tree (about
    100 MB); unpacked and parsed a chunk at a time, the memory stays under the cap itself."""
    header = f'<w:document xmlns:w="{W_NS}"><w:body>'.encode()
    path = tmp_path / "bomb.docx"
    footer = b"</w:body></w:document>"
    path.write_bytes(_deflated("word/document.xml", header + b"<w:x/>" * 1_800_000 + footer))
    assert path.stat().st_size < 20_000
    assert "too large once unpacked" in str(_error(path))
    assert _peak_bytes_while(lambda: load_resume(path)) < MAX_XML_BYTES


def test_docx_of_one_huge_text_is_capped_in_bounded_memory(tmp_path: Path) -> None:
    """10 MB of text in one run (under 4 MB once unpacked, it is not the byte cap that
    stops it): reading stops at the text budget, and the result is capped as usual."""
    body = (f'<w:document xmlns:w="{W_NS}"><w:body><w:p><w:r><w:t>'.encode() + b"word " * 700_000
            + b"</w:t></w:r></w:p></w:body></w:document>")
    path = tmp_path / "huge.docx"
    path.write_bytes(_deflated("word/document.xml", body))
    text = load_resume(path)
    assert text.startswith("word word") and text.endswith("\n" + TRUNCATION_MARKER)
    assert _peak_bytes_while(lambda: load_resume(path)) < MAX_XML_BYTES


def test_docx_with_thousands_of_parts_is_refused(tmp_path: Path) -> None:
    """zipfile makes an object for every entry before any can be read: a 20 MB file of
    empty entries would take hundreds of MB.  A Word file has a few dozen."""
    parts = {f"media/{i}": "" for i in range(1_500)}
    path = tmp_path / "parts.docx"
    path.write_bytes(make_docx(_p("Jane Doe"), extra=parts))
    assert "more than 1000 parts" in str(_error(path))


def test_docx_compressed_as_no_editor_does_is_refused(tmp_path: Path) -> None:
    """bzip2 unpacks a whole compressed chunk at once, whatever it expands to, so the
    chunked reading could not bound it; Word, LibreOffice and Pages all deflate."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_BZIP2) as package:
        package.writestr("word/document.xml", f'<w:document xmlns:w="{W_NS}"><w:body>{_p("Jane")}'
                         "</w:body></w:document>")
    path = tmp_path / "bz.docx"
    path.write_bytes(out.getvalue())
    assert "could not be read as a Word document" in str(_error(path))


def test_docx_with_a_dtd_is_refused(tmp_path: Path) -> None:
    """Entities are where XML multiplies its size (the billion laughs); Word never writes
    a DTD, so one is refused before any entity is declared."""
    xml = ('<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY a "' + "x" * 1000 + '">'
           '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
           f'<w:document xmlns:w="{W_NS}"><w:body><w:p><w:r><w:t>&b;</w:t></w:r></w:p></w:body></w:document>')
    path = tmp_path / "dtd.docx"
    path.write_bytes(_deflated("word/document.xml", xml.encode()))
    assert "its text is damaged" in str(_error(path))


@pytest.mark.parametrize("suffix", [".docx", ".pdf", ".md"])
def test_a_file_past_the_time_limit_is_named_with_the_reason(tmp_path: Path, suffix: str) -> None:
    """The readers look at the clock inside their loops; here the limit is already over at
    the first look, so the refusal does not depend on this machine's speed."""
    path = tmp_path / f"cv{suffix}"
    content = {".docx": make_docx(_p("Jane Doe")), ".pdf": make_pdf(RESUME_PAGES), ".md": b"# Jane Doe"}
    path.write_bytes(content[suffix])
    with pytest.raises(DocumentError) as info:
        load_document(path, max_chars=6000, label="résumé", time_limit=0.0)
    assert str(info.value) == (
        f'The résumé file "cv{suffix}" took longer than 0 s to read, so it was skipped (it may be '
        "damaged, or made to stall programs that read it): save it again as .docx, .pdf, .txt or "
        ".md, or paste its text into a .txt file, and pick that in Settings."
    )
    assert load_document(path, max_chars=6000).startswith(("Jane Doe", "# Jane Doe"))


def test_pdf_reads_forty_pages_at_most(tmp_path: Path) -> None:
    path = tmp_path / "long.pdf"
    path.write_bytes(make_pdf([[f"Section {n} of the thesis."] for n in range(1, 61)]))
    text = load_document(path, max_chars=100_000)
    assert "Section 40 of" in text and "Section 41 of" not in text


def test_pdf_page_of_endless_text_stops_at_the_text_budget(tmp_path: Path) -> None:
    """One page holding far more than the prompt keeps: the page is cut inside pypdf's walk
    (the text budget), and the result is capped at a clean boundary as usual."""
    path = tmp_path / "endless.pdf"
    path.write_bytes(make_pdf([[f"Shipped feature {n} on time." for n in range(3_000)]]))
    text = load_document(path, max_chars=1000)
    assert text.startswith("Shipped feature 0 on time.") and text.endswith("time.\n" + TRUNCATION_MARKER)
    assert len(text) <= 1000
