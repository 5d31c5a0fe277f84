"""The private writers write only to the user's own files (issue 54, item 2): a link, a
file of another user's or a second name of a file is refused, files the app names are
created exclusively, whole files are replaced atomically, a folder the app did not make
keeps its mode, and settings saves land in the order they were asked for.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from datetime import datetime
from pathlib import Path

import pytest

from app.core import config
from app.core.config import Settings, load_settings, save_settings, save_ticket
from app.core.events import FinalEvent
from app.core.private import NotPrivate, open_private, private_fd, write_private_text
from app.frontends.cli import FatalError, _open_exclusively
from app.observing import session_files
from app.observing.session_files import SessionLog

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX links and owners; win32 below")

VICTIM = "a file of the user's that was never meant to hold events\n"  # 55 bytes, as measured


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text(VICTIM)
    path.chmod(0o644)
    return path


def test_events_through_a_symlink_are_refused_and_the_target_untouched(tmp_path: Path, victim: Path) -> None:
    link = tmp_path / "events.jsonl"
    link.symlink_to(victim)
    with pytest.raises(FatalError, match="symbolic link"):
        _open_exclusively(str(link))
    assert (victim.read_text(), mode(victim)) == (VICTIM, 0o644)


@pytest.mark.parametrize("how", ["a", "w", "x"])
def test_no_private_writer_follows_a_link(tmp_path: Path, victim: Path, how: str) -> None:
    link = tmp_path / "session.jsonl"
    link.symlink_to(victim)
    with pytest.raises((NotPrivate, FileExistsError)):
        open_private(link, how)  # type: ignore[arg-type]
    with pytest.raises(NotPrivate):
        write_private_text(link, "x = 1\n")
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "made-through-the-link")
    with pytest.raises((NotPrivate, FileExistsError)):
        open_private(dangling, how)  # type: ignore[arg-type]
    assert not (tmp_path / "made-through-the-link").exists()
    assert (victim.read_text(), mode(victim), link.is_symlink()) == (VICTIM, 0o644, True)


def test_a_link_to_a_pipe_is_still_a_pipe(tmp_path: Path) -> None:
    """``--events /dev/stdout`` under a pipe: a link to a pipe keeps nothing to protect."""
    read_end, write_end = os.pipe()
    link = tmp_path / "out"
    link.symlink_to(f"/proc/self/fd/{write_end}")
    try:
        with open_private(link, "a") as out:
            out.write("line\n")
        assert os.read(read_end, 100) == b"line\n"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_file_of_another_user_is_refused(tmp_path: Path, victim: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() == 0:  # root can make the file truly another user's
        os.chown(victim, 65534, 65534)
    else:
        monkeypatch.setattr(os, "geteuid", lambda: victim.stat().st_uid + 1)
    with pytest.raises(FatalError, match="another user"):
        _open_exclusively(str(victim))
    with pytest.raises(NotPrivate, match="another user"):
        write_private_text(victim, "x = 1\n")
    assert (victim.read_text(), mode(victim)) == (VICTIM, 0o644)


def test_a_second_name_of_a_file_is_refused(tmp_path: Path, victim: Path) -> None:
    """A hard link made where the events go would write into the user's other file."""
    alias = tmp_path / "events.jsonl"
    os.link(victim, alias)
    with pytest.raises(NotPrivate, match="hard link"):
        private_fd(alias, os.O_WRONLY | os.O_APPEND)
    assert victim.read_text() == VICTIM


def test_a_new_session_file_is_created_exclusively(tmp_path: Path, victim: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A name planted where the next session's file will be (a link) is never opened:
    the session takes the next name."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    moment = datetime(2026, 12, 6, 21, 0, 0, 123000)

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: object = None) -> Frozen:  # type: ignore[override]
            return cls.fromtimestamp(moment.timestamp())

    monkeypatch.setattr(session_files, "datetime", Frozen)
    folder = session_files.sessions_dir()
    folder.mkdir(parents=True)
    planted = folder / "session-20261206-210000-123.jsonl"
    planted.symlink_to(victim)
    log = SessionLog()
    log(FinalEvent(t=1.0, turn=1, text="Why us?", audio_end=1.0))
    log.close()
    assert log.path.name == "session-20261206-210000-123-2.jsonl"
    assert "Why us?" in log.path.read_text()
    assert victim.read_text() == VICTIM and planted.is_symlink()


def test_settings_saved_beside_the_home_folder_leave_its_mode(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``--config ~/settings.toml``: the file is 0600, $HOME stays as the user set it."""
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    saved = save_settings(Settings(), home / "settings.toml")
    assert (mode(home), mode(saved)) == (0o755, 0o600)
    elsewhere = tmp_path / "shared"
    elsewhere.mkdir()
    elsewhere.chmod(0o775)
    save_settings(Settings(), elsewhere / "settings.toml")
    assert mode(elsewhere) == 0o775


def test_the_last_save_asked_for_wins_whatever_order_the_saves_land_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "settings.toml"
    older, newer = Settings(), Settings()
    older.ui.theme, newer.ui.theme = "light", "dark"
    first, second = save_ticket(), save_ticket()
    save_settings(newer, path, asked=second)
    save_settings(older, path, asked=first)  # the slow one lands last
    assert load_settings(path)[0].ui.theme == "dark"
    save_settings(older, path)  # asked now: the newest
    assert load_settings(path)[0].ui.theme == "light"


def test_concurrent_saves_never_interleave(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads saving at once: one lock, so the writes never overlap; the file is
    always one whole settings file."""
    path = tmp_path / "settings.toml"
    inside = threading.Semaphore(1)
    overlaps: list[str] = []
    real = config.write_private_text

    def guarded(target: Path, text: str) -> Path:
        if not inside.acquire(blocking=False):
            overlaps.append(text)
            return real(target, text)
        try:
            return real(target, text)
        finally:
            inside.release()

    monkeypatch.setattr(config, "write_private_text", guarded)
    themes = ["light", "dark"] * 20
    threads = [threading.Thread(target=save_settings,
                                args=(Settings.model_validate({"ui": {"theme": t}}), path)) for t in themes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == [] and load_settings(path)[1] == []


def test_on_windows_a_link_is_refused_before_opening(tmp_path: Path, victim: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows has no O_NOFOLLOW: the lstat check stands in for it (racy: see private.py)."""
    link = tmp_path / "events.jsonl"
    link.symlink_to(victim)
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(NotPrivate, match="symbolic link"):
        private_fd(link, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    assert victim.read_text() == VICTIM
