"""What the app writes about an interview is its user's alone: files 0600, the folders it
creates 0700, on Linux and macOS whatever the umask (issue 42, item 2).

The umask is set here, in the test: 0o022 is the usual one (files 0644, readable by every
account), 0o000 the worst (files 0666, writable by every account).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.asr.errors import ModelError
from app.asr.multilingual import FOLDER, ensure_multilingual_model
from app.core.config import Settings, config_path, save_settings
from app.core.events import FinalEvent, VadEvent
from app.core.private import make_dirs, private_dir, write_private_text
from app.frontends.cli import _open_exclusively
from app.observing.session_files import SessionLog, sessions_dir, write_markdown
from app.platform import bundled
from tests.frontends.test_cli_faults import DEAD, env_for
from tests.speech import synth

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="modes are a no-op on Windows by design")

UMASKS = [0o022, 0o000]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def modes(root: Path) -> dict[str, int]:
    """Every file and folder under ``root`` (itself excluded), by its relative path."""
    return {str(p.relative_to(root)): mode(p) for p in sorted(root.rglob("*"))}


@pytest.fixture(params=UMASKS, ids=lambda m: f"umask {m:03o}")
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    before = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(before)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, folder in (("XDG_DATA_HOME", "data"), ("XDG_CONFIG_HOME", "config")):
        monkeypatch.setenv(name, str(tmp_path / folder))
    monkeypatch.delenv("INTERVIEW_COPILOT_CONFIG_DIR", raising=False)
    monkeypatch.setenv("INTERVIEW_COPILOT_CACHE_DIR", str(tmp_path / "cache" / "interview-copilot"))
    return tmp_path


def test_each_writer_makes_private_files_in_private_folders(umask: int, home: Path) -> None:
    log = SessionLog()
    log(VadEvent(t=0.5, speech=True))
    log(FinalEvent(t=2.0, turn=1, text="Tell me about yourself?", audio_end=2.0))
    log.close()
    events = _open_exclusively(str(home / "events.jsonl"))
    events.write('{"event": "final"}\n')
    events.close()
    export = write_markdown(log.path, home / "interview.md")
    assert "Tell me about yourself?" in export.read_text(encoding="utf-8")
    saved = save_settings(Settings())
    with pytest.raises(ModelError):  # no parts to assemble from: the folder is made first
        ensure_multilingual_model(home / "cache" / "interview-copilot" / "models", locate={})
    with pytest.raises(RuntimeError):  # not a model: the folder is made first
        bundled._requantize(home / "events.jsonl", home / "cache" / "interview-copilot" / "q8" / "x.gguf")
    assert (log.path.parent, saved) == (sessions_dir(), config_path())
    assert modes(home) == {
        "cache": 0o700, "cache/interview-copilot": 0o700, "cache/interview-copilot/models": 0o700,
        f"cache/interview-copilot/models/{FOLDER}": 0o700,
        "cache/interview-copilot/q8": 0o700,
        "config": 0o700, "config/interview-copilot": 0o700, "config/interview-copilot/settings.toml": 0o600,
        "data": 0o700, "data/interview-copilot": 0o700, "data/interview-copilot/sessions": 0o700,
        f"data/interview-copilot/sessions/{log.path.name}": 0o600,
        "events.jsonl": 0o600, "interview.md": 0o600}


def test_files_and_folders_made_wider_before_are_tightened(umask: int, home: Path) -> None:
    """An earlier version left them 0644 and 0755: the next write makes them private."""
    config = home / "config" / "interview-copilot"
    sessions = home / "data" / "interview-copilot" / "sessions"
    for folder in (config, sessions):
        folder.mkdir(parents=True, mode=0o755)
        folder.chmod(0o755)
    for name in ("settings.toml", "events.jsonl", "interview.md"):
        (home / name).write_text("older\n")
        (home / name).chmod(0o644)
    save_settings(Settings(), config / "settings.toml")
    _open_exclusively(str(home / "events.jsonl")).close()
    log = SessionLog()
    log.close()
    write_markdown(log.path, home / "interview.md")
    write_private_text(home / "settings.toml", "x = 1\n")
    assert [mode(p) for p in (config, sessions.parent, sessions)] == [0o700] * 3
    assert [mode(home / n) for n in ("settings.toml", "events.jsonl", "interview.md")] == [0o600] * 3
    assert not [p for p in home.rglob("*.tmp")]  # the atomic writes left no temporary file


def test_a_folder_the_caller_chose_keeps_its_mode(umask: int, tmp_path: Path) -> None:
    chosen = tmp_path / "shared"
    chosen.mkdir()
    chosen.chmod(0o755)
    made = make_dirs(chosen / "a" / "b")
    assert (mode(chosen), mode(chosen / "a"), mode(made)) == (0o755, 0o700, 0o700)
    log = SessionLog(chosen / "c" / "session.jsonl")
    log.close()
    assert (mode(chosen), mode(chosen / "c"), mode(log.path)) == (0o755, 0o700, 0o600)


def test_on_windows_the_modes_are_left_to_the_profile(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows: the profile's ACL makes the files private; chmod would only flip read-only."""
    wide = tmp_path / "wide"
    wide.mkdir()
    wide.chmod(0o755)
    monkeypatch.setattr(sys, "platform", "win32")
    assert private_dir(wide) == wide and mode(wide) == 0o755
    target = write_private_text(wide / "settings.toml", "x = 1\n")
    assert target.read_text() == "x = 1\n"


@pytest.mark.parametrize("mask", UMASKS, ids=lambda m: f"umask {m:03o}")
def test_a_real_session_writes_nothing_others_can_read(mask: int, tmp_path: Path) -> None:
    """A headless replay, as a user runs it: the session log and the ``--events`` file."""
    events = tmp_path / "events.jsonl"
    clip = synth("Hello.")
    run = subprocess.run([sys.executable, "-m", "app", "listen", "--headless", "--audio", str(clip),
                          "--events", str(events), *DEAD],
                         capture_output=True, text=True, timeout=300, env=env_for(tmp_path), umask=mask)
    assert "session saved" in run.stderr and "Traceback" not in run.stderr, run.stderr
    data = modes(tmp_path / "data")
    assert len([name for name in data if name.endswith(".jsonl")]) == 1
    assert data == {name: 0o600 if name.endswith(".jsonl") else 0o700 for name in data}
    assert len(data) == 3 and mode(tmp_path / "data") == 0o700
    assert mode(events) == 0o600 and events.stat().st_size > 0
