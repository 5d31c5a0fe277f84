"""Nothing lost without a word (issue 54, item 6): a session log that cannot be written
(a full disk) says so, a headless run exits non-zero and keeps the lines written before,
and the file is fsynced when the session ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.core.events import FinalEvent, StatusEvent
from app.observing.session_files import SessionLog, load_session
from tests.frontends.test_cli_faults import DEAD, env_for
from tests.observing.full_disk import small_disk
from tests.speech import synth

FREE = 4096
"""One page of the tmpfs: the first lines fit, the session's later ones do not."""
QUESTIONS = ("Tell me about a project you are proud of. What was the hardest part of it? "
             "How did you know it had worked? What would you do differently today?")
"""Four questions: some 10 KB of session log, far more than fits."""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_log_that_cannot_be_written_says_so_once_and_counts_as_lost() -> None:
    said: list[str] = []
    log = SessionLog(Path("/dev/full"), on_error=said.append)
    for n in range(50):
        log(FinalEvent(t=float(n), turn=n, text="What is a B-tree?", audio_end=float(n)))
    log.close()
    assert log.lost and len(said) == 1 and "No space left on device" in said[0]


def test_a_log_that_was_written_is_not_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    log = SessionLog(tmp_path / "s.jsonl")
    log(FinalEvent(t=1.0, turn=1, text="Why us?", audio_end=1.0))
    log.close()
    assert not log.lost and synced, "the session file was not fsynced at its end"
    assert [type(e) for e in load_session(log.path).events] == [FinalEvent]


def test_a_fsync_that_fails_is_a_loss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk refusing the data at the end (EIO) is as much a loss as a refused write."""
    def refuse(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", refuse)
    said: list[str] = []
    log = SessionLog(tmp_path / "s.jsonl", on_error=said.append)
    log(StatusEvent(t=0.0, stage="asr", message="ready"))
    log.close()
    assert log.lost and "Input/output error" in said[0]


def test_a_headless_run_on_a_full_disk_says_so_exits_1_and_keeps_what_fit(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with small_disk(home / "data", FREE):
        run = subprocess.run([sys.executable, "-m", "app", "listen", "--headless", "--audio",
                              str(synth(QUESTIONS)), *DEAD],
                             capture_output=True, text=True, timeout=180, env=env_for(home))
        assert run.returncode == 1, run.stderr
        assert "cannot write the session log any more (No space left on device)" in run.stderr
        assert "is incomplete" in run.stderr and "Traceback" not in run.stderr
        [saved] = (home / "data" / "interview-copilot" / "sessions").glob("session-*.jsonl")
        lines = saved.read_bytes().splitlines()
        kept = [json.loads(line) for line in lines[:-1]]  # the last may be torn
        assert 0 < saved.stat().st_size <= FREE and kept and kept[0]["event"]
        assert load_session(saved).events
