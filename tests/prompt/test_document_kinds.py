"""Only regular files are read as documents (issue 54, item 2): a FIFO, a device or a
file of ``/proc`` is named and skipped at once, and the session starts without it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.prompt.documents import DocumentError, load_resume
from app.session.candidate_documents import read_documents
from tests.frontends.test_cli_faults import DEAD, env_for
from tests.speech import synth

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, /dev and /proc are POSIX's")

QUICK_S = 2.0
"""Far longer than refusing a name takes (an open and an fstat), far shorter than the 60 s
a FIFO held the start for, or the 2 GiB /dev/zero filled."""


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "cv.txt"
    os.mkfifo(path)
    return path


def _refused(path: Path | str) -> str:
    started = time.monotonic()
    with pytest.raises(DocumentError) as info:
        load_resume(path)
    assert time.monotonic() - started < QUICK_S
    return str(info.value)


def test_a_fifo_is_named_and_skipped_without_waiting_for_a_writer(fifo: Path) -> None:
    said = _refused(fifo)
    assert "cv.txt" in said and "a pipe (FIFO)" in said


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_named_and_skipped(device: str) -> None:
    assert "a device" in _refused(device)


def test_a_link_to_a_device_is_a_device(tmp_path: Path) -> None:
    link = tmp_path / "cv.md"
    link.symlink_to("/dev/zero")
    assert "a device" in _refused(link)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no /proc")
@pytest.mark.parametrize("name", ["/proc/self/status", "/proc/self/environ"])
def test_a_file_of_proc_is_named_and_skipped(name: str) -> None:
    """``/proc``'s files say they are empty and hold the process's own secrets."""
    assert "a system file" in _refused(name)


def test_the_other_document_is_still_read(fifo: Path, tmp_path: Path) -> None:
    job = tmp_path / "job.txt"
    job.write_text("Senior engineer, payments.\n")
    read = read_documents(str(fifo), str(job))
    assert read.resume is None and read.job_description == "Senior engineer, payments."
    assert len(read.problems) == 1 and "a pipe (FIFO)" in read.problems[0]


def test_a_session_with_a_fifo_for_a_resume_starts_and_says_why(fifo: Path, tmp_path: Path) -> None:
    """The measured hang: ``listen --resume FIFO`` was killed at 60 s with no message."""
    clip = synth("Hello.")
    run = subprocess.run([sys.executable, "-m", "app", "listen", "--headless", "--audio", str(clip),
                          "--resume", str(fifo), *DEAD],
                         capture_output=True, text=True, timeout=120, env=env_for(tmp_path))
    said = run.stdout + run.stderr
    assert "cv.txt" in said and "a pipe (FIFO)" in said and "session saved" in run.stderr, said
    assert "Traceback" not in run.stderr


def test_a_folder_is_named_where_opening_one_is_refused(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows refuses to open a folder with "permission denied": it is still a folder."""
    real = os.open

    def like_windows(name: str | os.PathLike[str], *args: int) -> int:
        if os.path.isdir(name):
            raise PermissionError(13, "Permission denied")
        return real(name, *args)

    monkeypatch.setattr(os, "open", like_windows)
    folder = tmp_path / "cv.pdf"
    folder.mkdir()
    assert "is a folder" in _refused(folder)
