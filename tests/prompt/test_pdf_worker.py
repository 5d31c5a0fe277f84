"""PDF reading where its limits are real (issue 54, item 3): a process of its own, killed
at the time limit, under a memory cap, so a hostile PDF is named and skipped within the
limit however long pypdf would spend inside one of its steps."""

from __future__ import annotations

import sys
import time
import zlib
from pathlib import Path

import psutil
import pytest

from app.prompt.documents import DocumentError, load_resume
from app.prompt.limits import READ_TIME_LIMIT_S, Deadline, Unreadable
from app.prompt.worker import read_bounded
from tests.prompt.test_document_readers import make_pdf

SLACK_S = 3.0
"""Past the limit: the child's start (an interpreter and pypdf, on a loaded two-core
machine) and its kill.  The unbounded reads took 4-24 s past nothing."""


def one_page_pdf(content: bytes, filters: str) -> bytes:
    """A valid one-page PDF whose content stream is ``content`` under ``filters``."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d /Filter %s >>\nstream\n" % (len(content), filters.encode()) + content
               + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def many_operators() -> bytes:
    """150,000 text operators in 2 KB: pypdf parses them all before it shows any text."""
    return one_page_pdf(zlib.compress(b"BT /F1 12 Tf 72 700 Td " + b"() Tj " * 150_000 + b"ET", 9),
                        "/FlateDecode")


def two_flate_layers() -> bytes:
    """1 KB under two Flate layers: 70 MB of operators (24 s and 330 MB unbounded)."""
    inner = zlib.compress(b"BT /F1 12 Tf 72 700 Td " + b"0 0 Td " * 10_000_000 + b"ET", 9)
    return one_page_pdf(zlib.compress(inner, 9), "[/FlateDecode /FlateDecode]")


@pytest.mark.parametrize("make", [many_operators, two_flate_layers],
                         ids=["150k operators", "two Flate layers"])
def test_a_hostile_pdf_is_named_and_skipped_within_the_limit(tmp_path: Path, make: object) -> None:
    path = tmp_path / "cv.pdf"
    path.write_bytes(make())  # type: ignore[operator]
    began = time.monotonic()
    with pytest.raises(DocumentError) as info:
        load_resume(path)
    assert time.monotonic() - began < READ_TIME_LIMIT_S + SLACK_S
    assert str(info.value).startswith('The résumé file "cv.pdf" ')
    assert not readers_left()


def readers_left() -> list[psutil.Process]:
    """Children still running, multiprocessing's own resource tracker (one per process,
    started with the first child, kept for the next) aside."""
    return [c for c in psutil.Process().children(recursive=True)
            if c.is_running() and c.status() != psutil.STATUS_ZOMBIE
            and not any("resource_tracker" in part for part in c.cmdline())]


def test_a_real_pdf_still_reads_through_the_worker(tmp_path: Path) -> None:
    path = tmp_path / "cv.pdf"
    path.write_bytes(make_pdf([["Jane Doe", "Staff engineer, payments"]]))
    assert "Staff engineer, payments" in load_resume(path)


def allocate(size: int, deadline: Deadline) -> int:
    """A reader that needs ``size`` bytes at once."""
    return len(bytearray(size))


def dawdle(seconds: float, deadline: Deadline) -> None:
    """A reader stuck in one step: no check of the deadline until it is long past."""
    time.sleep(seconds)


@pytest.mark.skipif(sys.platform != "linux", reason="only Linux enforces RLIMIT_AS")
def test_a_reader_past_the_memory_cap_is_stopped_and_said_to_be() -> None:
    assert read_bounded(allocate, (10 << 20,), seconds=30, memory=1 << 30) == 10 << 20
    with pytest.raises(Unreadable, match="more memory than a document"):
        read_bounded(allocate, (2 << 30,), seconds=30, memory=1 << 30)


def test_a_reader_stuck_inside_one_step_is_killed_at_the_limit() -> None:
    began = time.monotonic()
    with pytest.raises(Unreadable, match=r"longer than 0\.5 s"):
        read_bounded(dawdle, (60.0,), seconds=0.5)
    assert time.monotonic() - began < 0.5 + SLACK_S and not readers_left()
