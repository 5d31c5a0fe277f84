"""``--events FILE``: one run per file, on Windows (a fake ``msvcrt``) as on POSIX (real flock).

The fake follows the UCRT ``_locking`` contract: the region starts at the descriptor's
*current position* (``_lseeki64(fd, 0, SEEK_CUR)``) and spans ``nbytes``; ``LK_NBLCK``
tries once and fails with EACCES when any handle (this one included: Windows locks do
not stack) holds an overlapping region; closing the handle releases its locks.
"""

from __future__ import annotations

import errno
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.frontends.cli import FatalError, _open_exclusively


class FakeMsvcrt(types.ModuleType):
    LK_UNLCK, LK_LOCK, LK_NBLCK, LK_RLCK, LK_NBRLCK = 0, 1, 2, 3, 4

    def __init__(self) -> None:
        super().__init__("msvcrt")
        self.locks: list[tuple[tuple[int, int], int, int, int]] = []
        """(file identity, descriptor, offset, length) of every region held."""

    def _live(self) -> list[tuple[tuple[int, int], int, int, int]]:
        """Drop the locks of closed handles (their descriptor is gone or now another file)."""
        def alive(lock: tuple[tuple[int, int], int, int, int]) -> bool:
            try:
                st = os.fstat(lock[1])
            except OSError:
                return False
            return (st.st_dev, st.st_ino) == lock[0]
        self.locks = [lock for lock in self.locks if alive(lock)]
        return self.locks

    def locking(self, fd: int, mode: int, nbytes: int) -> None:
        st = os.fstat(fd)
        identity = (st.st_dev, st.st_ino)
        offset = os.lseek(fd, 0, os.SEEK_CUR)
        if mode == self.LK_UNLCK:
            held = (identity, fd, offset, nbytes)
            if held not in self._live():
                raise PermissionError(errno.EACCES, "not locked")
            self.locks.remove(held)
            return
        assert mode in (self.LK_NBLCK, self.LK_NBRLCK), "the app must never wait for the lock"
        for other, _, start, length in self._live():
            if other == identity and offset < start + length and start < offset + nbytes:
                raise PermissionError(errno.EACCES, "Permission denied")
        self.locks.append((identity, fd, offset, nbytes))


@pytest.fixture(params=["win32", "posix"])
def platform(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "win32":
        monkeypatch.setattr(sys, "platform", "win32")
        monkeypatch.setitem(sys.modules, "msvcrt", FakeMsvcrt())
    yield request.param


def test_a_second_run_is_refused_and_leaves_the_first_runs_lines(platform: str,
                                                                  tmp_path: Path) -> None:
    target = tmp_path / "events.jsonl"
    target.write_text("an older run's line\n")  # the file grows and shrinks: the lock must not move
    first = _open_exclusively(str(target))
    try:
        assert target.read_text() == ""
        first.write('{"name": "status"}\n' * 50)
        first.flush()
        with pytest.raises(FatalError, match="another interview-copilot is writing its events"):
            _open_exclusively(str(target))
        first.write('{"name": "final"}\n')
        first.flush()
        assert target.read_text() == '{"name": "status"}\n' * 50 + '{"name": "final"}\n'
    finally:
        first.close()


def test_the_file_is_free_again_once_the_run_ends(platform: str, tmp_path: Path) -> None:
    target = tmp_path / "events.jsonl"
    first = _open_exclusively(str(target))
    first.write("line\n")
    first.close()
    # POSIX reuses the lowest free descriptor: keep the closed one's number taken, so the
    # fake msvcrt sees that handle gone (it knows handles only by descriptor and file).
    placeholder = os.open(os.devnull, os.O_RDONLY)
    try:
        second = _open_exclusively(str(target))
        assert target.read_text() == ""  # a new run starts a new file
        second.close()
    finally:
        os.close(placeholder)


def test_the_windows_lock_is_one_fixed_byte_far_beyond_the_log(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Readers of the log never meet the lock (Windows locks are mandatory), and it does not
    depend on the file's length."""
    from app.observing import eventlog

    fake = FakeMsvcrt()
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setitem(sys.modules, "msvcrt", fake)
    stream = _open_exclusively(str(tmp_path / "a.jsonl"))
    other = _open_exclusively(str(tmp_path / "b.jsonl"))
    try:
        stream.write("x" * 10_000 + "\n")
        stream.flush()
        assert [(offset, length) for _, _, offset, length in fake.locks] == [
            (eventlog.LOCK_OFFSET, 1), (eventlog.LOCK_OFFSET, 1)]
        assert eventlog.LOCK_OFFSET > 2**32  # beyond any log a session writes
    finally:
        stream.close()
        other.close()


def test_an_unwritable_events_file_is_one_clear_sentence(tmp_path: Path) -> None:
    with pytest.raises(FatalError, match="cannot write the events to"):
        _open_exclusively(str(tmp_path / "no such folder" / "events.jsonl"))


def unlocked(path: str) -> bool:
    """Could another run lock ``path`` now?  The fake msvcrt's regions; POSIX: ``flock`` on
    a descriptor of our own (a lock held through another descriptor refuses it)."""
    fake = sys.modules.get("msvcrt")
    if isinstance(fake, FakeMsvcrt):
        return not fake._live()
    import fcntl

    fd = os.open(path, os.O_WRONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def test_a_device_or_pipe_is_neither_locked_nor_truncated(platform: str) -> None:
    if platform == "posix" and sys.platform == "win32":
        pytest.skip("the posix case needs flock; the win32 case covers Windows")
    first = _open_exclusively(os.devnull)
    second = _open_exclusively(os.devnull)  # two runs may both throw their events away
    try:
        assert unlocked(os.devnull)
        first.write('{"name": "status"}\n')
        first.flush()
    finally:
        first.close()
        second.close()


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="no /dev/fd to name a pipe by")
def test_a_pipe_keeps_what_it_holds_and_two_runs_may_share_it(platform: str) -> None:
    """``--events /dev/stdout`` piped into a reader: what is in the pipe already stays
    there (a truncate would fail on a pipe, or on a FIFO's file drop it), and the run's
    lines follow it."""
    if platform == "posix" and sys.platform == "win32":
        pytest.skip("the posix case needs flock; the win32 case covers Windows")
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"an earlier writer's line\n")
        path = f"/dev/fd/{write_end}"
        first = _open_exclusively(path)
        second = _open_exclusively(path)
        try:
            assert unlocked(path)
            first.write('{"name": "final"}\n')
            first.flush()
            second.write('{"name": "token"}\n')
            second.flush()
        finally:
            first.close()
            second.close()
        os.close(write_end)
        write_end = -1
        with os.fdopen(read_end, "rb") as reader:
            read_end = -1
            assert reader.read() == b'an earlier writer\'s line\n{"name": "final"}\n{"name": "token"}\n'
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
