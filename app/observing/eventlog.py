"""Events to JSON lines on one writer thread, so no stage ever waits on a disk.

Emitting threads (audio capture, the ASR worker, the answer engine's loop, the GUI) only
put the event on a bounded queue; one thread serialises and writes.  Lines are flushed
to the operating system at most :data:`FLUSH_INTERVAL_S` after they were written and at
close, so after a crash — even ``kill -9`` — the file is valid JSON lines up to its last
complete line and holds everything emitted more than that long before.

Every line passes :func:`app.platform.redact.redact` (on the writer thread): no key or
credential in a URL reaches a file, whatever message carried it.

With ``sync`` (a session log), the file is fsynced when the log is closed: what the
session said survives a power cut after it ended. Design notes: decision 0039.
"""

from __future__ import annotations

import contextlib
import os
import queue
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import IO

from app.core.events import Event, to_json
from app.core.private import private_fd
from app.platform.redact import redact as redact_secrets

FLUSH_INTERVAL_S = 0.2
"""A crash loses at most this much of the log: well under the half second a person needs
to read an answer, and five flushes a second cost nothing."""
MAX_QUEUE = 20_000
"""About a minute of the busiest stream (tokens at ~300/s): only a stalled disk fills it."""

LOCK_OFFSET = 1 << 40
"""Where the Windows lock on an events file sits: one byte at 1 TiB, an offset no events
file reaches.  ``msvcrt.locking`` locks from the descriptor's *current position*, and
Windows byte-range locks are mandatory, so the byte must be (a) the same for every run,
whatever the file's length (a lock at the end moves as the file grows: two runs both
got it), and (b) one nobody reads or writes (locking byte 0 would make a viewer that
follows the log fail on its first read)."""

_CLOSE = object()


class FileBusy(OSError):
    """Another process holds the lock on this file."""


def open_exclusive(path: str | os.PathLike[str]) -> IO[str]:
    """Open ``path`` for appending text, locked for as long as it stays open, then empty it.

    The lock comes first: a second run is refused (:class:`FileBusy`) before it can
    truncate the first run's lines.  Never waits for the lock.  Anything but a regular
    file (a pipe, a terminal, ``/dev/null``) is neither locked nor truncated: it keeps
    no lines to protect, and some systems refuse to lock or truncate it.  A regular file
    is the user's alone (0600 on Linux and macOS: it holds the interview word for word).
    """
    fd = private_fd(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # not a pipe, a terminal or /dev/null
            if not lock_exclusively(fd):
                raise FileBusy(f"{os.fspath(path)} is locked by another process")
            os.ftruncate(fd, 0)
        return open(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def lock_exclusively(fd: int) -> bool:
    """Lock the open file ``fd`` until it is closed; False if another process has it.

    POSIX: ``flock`` on the whole file.  Windows: ``msvcrt.locking`` of the byte at
    :data:`LOCK_OFFSET` (UCRT ``_locking`` takes a 64-bit position and LockFileEx accepts a
    region beyond the end of the file); the descriptor is put back at the end afterwards
    (appends go to the end anyway).  ``LK_NBLCK`` tries once: no waiting.
    """
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        finally:
            os.lseek(fd, 0, os.SEEK_END)
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


class _Flush:
    """A marker: the writer flushes and sets ``done`` when it reaches it."""

    def __init__(self) -> None:
        self.done = threading.Event()


class EventLog:
    """A bus listener that writes each event (minus ``skip``) as one JSON line."""

    def __init__(self, stream: IO[str], *, skip: Iterable[str] = ("level",), name: str = "event log",
                 on_error: Callable[[str], None] | None = None,
                 redact: Callable[[str], str] | None = redact_secrets, max_queue: int = MAX_QUEUE,
                 close_stream: bool = True, sync: bool = False) -> None:
        self._stream = stream
        self._sync = sync
        self._close_stream = close_stream
        self._skip = frozenset(skip)
        self._name = name
        self._on_error = on_error
        self._redact = redact
        self._queue: queue.Queue[object] = queue.Queue(max_queue)
        self._closed = False
        self._failed = False
        self.dropped = 0
        """Events lost because the writer fell behind (reported at close)."""
        self.failure: str | None = None
        """Why writing stopped (a full disk, a folder removed), once it has."""
        self._thread = threading.Thread(target=self._run, name=f"writer:{name}", daemon=True)
        self._thread.start()

    def __call__(self, event: Event) -> None:
        if event.name in self._skip or self._closed:
            return
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything emitted so far is written (before reading the file back)."""
        if self._closed:
            return True
        marker = _Flush()
        try:
            self._queue.put(marker, timeout=timeout)
        except queue.Full:
            return False
        return marker.done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, flush, close the stream; later events are ignored."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(queue.Full):
            self._queue.put(_CLOSE, timeout=timeout)
        self._thread.join(timeout)
        if self.dropped and self._on_error is not None:
            self._on_error(f"the {self._name} fell behind: {self.dropped} event(s) were not written")

    # --- the writer thread ----------------------------------------------------------

    def _run(self) -> None:
        last_flush = time.monotonic()
        dirty = False
        while True:
            try:
                item = self._queue.get(timeout=FLUSH_INTERVAL_S)
            except queue.Empty:
                item = None
            if item is _CLOSE:
                break
            if isinstance(item, Event):
                dirty = self._write(item) or dirty
            elif isinstance(item, _Flush):
                self._flush()
                dirty = False
                item.done.set()
            if dirty and time.monotonic() - last_flush >= FLUSH_INTERVAL_S:
                self._flush()
                dirty, last_flush = False, time.monotonic()
        self._flush()
        if self._sync:
            self._fsync()
        if self._close_stream:
            with contextlib.suppress(OSError):
                self._stream.close()

    def _write(self, event: Event) -> bool:
        if self._failed:
            return False
        line = to_json(event)
        if self._redact is not None:
            line = self._redact(line)
        try:
            self._stream.write(line + "\n")
        except (OSError, ValueError) as exc:
            self._fail(exc)
            return False
        return True

    def _flush(self) -> None:
        if self._failed:
            return
        try:
            self._stream.flush()
        except (OSError, ValueError) as exc:
            self._fail(exc)

    def _fsync(self) -> None:
        """The file on the disk itself, not only in the system's cache: a power cut after
        the session ended loses nothing of it."""
        if self._failed:
            return
        try:
            os.fsync(self._stream.fileno())
        except (OSError, ValueError) as exc:
            self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        """Say it once and stop writing: the session (and the screen) go on."""
        self._failed = True
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.failure = reason
        if self._on_error is not None:
            self._on_error(f"cannot write the {self._name} any more ({reason}); "
                           "the session goes on, but what follows is not saved")

    @property
    def lost(self) -> bool:
        """Something emitted was not written: writing failed, or the writer fell behind."""
        return self.failure is not None or self.dropped > 0
