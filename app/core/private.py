"""Files that hold what was said in an interview: readable by their user alone.

Session logs, ``--events`` files, Markdown exports and ``settings.toml`` hold the
interviewer's questions, the candidate's answers, documents' lines and where the user's
LLM lives.  On Linux and macOS they are created 0600 in folders 0700 *whatever the umask*
(a shared machine's other accounts must not read them; a umask of 0 must not make them
world-writable): the mode is given to ``open``/``mkdir`` and then set again with
``chmod``, because the umask only ever clears bits.  A folder that is the app's own and
already exists wider (made by an earlier version) is tightened.

Design notes: decision 0038.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import IO, Literal

FILE_MODE = 0o600
"""Read and write for the user; nothing for the group or others."""
DIR_MODE = 0o700
"""Enter, list and create for the user; nothing for the group or others."""

_FLAGS = {"w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND}


def private_dir(path: Path) -> Path:
    """``path`` as a folder of the app's own, 0700: created (with any missing parents,
    each 0700), or set to 0700 if the user's folder exists with other bits (made by an
    earlier version, or under another umask)."""
    make_dirs(path)
    if sys.platform != "win32":
        st = path.stat()
        mine = st.st_uid == os.geteuid()  # another user's folder: theirs to open anyway
        if mine and stat.S_IMODE(st.st_mode) != DIR_MODE:
            os.chmod(path, DIR_MODE)
    return path


def make_dirs(path: Path) -> Path:
    """Create ``path`` and its missing parents, each one created 0700; a folder that
    already exists (one the user chose) keeps its mode."""
    missing: list[Path] = []
    for folder in (path, *path.parents):
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue  # made by another thread or process meanwhile: theirs to set
        if sys.platform != "win32":
            os.chmod(folder, DIR_MODE)  # the umask may have cleared the user's own bits
    return path


def private_fd(path: str | os.PathLike[str], flags: int) -> int:
    """``os.open`` with mode 0600; a regular file of the user's that already existed with
    other bits is set to 0600 too (a device, a pipe or ``/dev/null`` is left as it is)."""
    fd = os.open(path, flags | getattr(os, "O_BINARY", 0), FILE_MODE)
    if sys.platform != "win32":
        try:
            st = os.fstat(fd)
            mine = st.st_uid == os.geteuid()  # another user's file: theirs to read anyway
            if stat.S_ISREG(st.st_mode) and mine and stat.S_IMODE(st.st_mode) != FILE_MODE:
                os.fchmod(fd, FILE_MODE)
        except BaseException:
            os.close(fd)
            raise
    return fd


def open_private(path: str | os.PathLike[str], mode: Literal["w", "a"] = "w") -> IO[str]:
    """A UTF-8 text file opened for writing (``w``: emptied first) or appending (``a``),
    readable by the user alone."""
    fd = private_fd(path, _FLAGS[mode])
    try:
        return open(fd, mode, encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def write_private_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (UTF-8) readable by the user alone, replacing it whole:
    a reader (or a crash) sees the old file or the new one, never half of one.

    The text goes to a temporary file beside ``path`` (``mkstemp``: 0600, a name no other
    writer picks), is flushed to the disk, then renamed over ``path``.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with open(fd, "w", encoding="utf-8") as out:
            if sys.platform != "win32":
                os.fchmod(out.fileno(), FILE_MODE)  # mkstemp asks for 0600; the umask may clear bits
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path
