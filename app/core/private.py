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
import errno
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

_FLAGS = {"w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
          "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL}
_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})
"""What ``open`` with ``O_NOFOLLOW`` raises on a link: ELOOP (Linux, macOS), EMLINK (FreeBSD)."""


class NotPrivate(PermissionError):
    """A name that is not the user's own file to write; ``strerror`` says why and what to do."""

    def __init__(self, path: str | os.PathLike[str], why: str) -> None:
        super().__init__(errno.EPERM, why, os.fspath(path))


def private_dir(path: Path) -> Path:
    """``path`` as a folder of the app's own, 0700: created (with any missing parents,
    each 0700), or set to 0700 if the user's folder exists with other bits (made by an
    earlier version, or under another umask)."""
    make_dirs(path)
    if sys.platform != "win32" and not _holds_home(path):
        st = path.stat()
        mine = st.st_uid == os.geteuid()  # another user's folder: theirs to open anyway
        if mine and stat.S_IMODE(st.st_mode) != DIR_MODE:
            os.chmod(path, DIR_MODE)
    return path


def _holds_home(path: Path) -> bool:
    """The home folder or one above it: never the app's to tighten, whatever names it."""
    try:
        home = Path.home().resolve()
        return path.resolve() in (home, *home.parents)
    except (OSError, RuntimeError):  # no home to resolve: nothing to protect
        return False


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
    """``os.open`` with mode 0600 of the user's own file (see the module's docstring:
    :class:`NotPrivate` otherwise); a regular file that already existed with other bits is
    set to 0600 too (a device, a pipe or ``/dev/null`` is left as it is)."""
    fd = _open_unfollowed(path, flags | getattr(os, "O_BINARY", 0))
    if sys.platform != "win32":
        try:
            st = os.fstat(fd)
            _check_owned(path, st)
            if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != FILE_MODE:
                os.fchmod(fd, FILE_MODE)
        except BaseException:
            os.close(fd)
            raise
    return fd


def _open_unfollowed(path: str | os.PathLike[str], flags: int) -> int:
    """``path`` opened without following a link to a file; a link to a pipe or a terminal
    is opened as it is, without ``O_CREAT``/``O_TRUNC``, and kept only if it leads to one."""
    try:
        if sys.platform == "win32" and os.path.islink(path):  # no O_NOFOLLOW there
            raise OSError(errno.ELOOP, "a symbolic link", os.fspath(path))
        return os.open(path, flags | _NOFOLLOW, FILE_MODE)
    except OSError as exc:
        if exc.errno not in _LINK_ERRNOS or not os.path.islink(path):
            raise
    try:
        fd = os.open(path, flags & ~(os.O_CREAT | os.O_TRUNC | os.O_EXCL))
    except FileNotFoundError:  # a link to nowhere: nothing is created through it
        raise NotPrivate(path, _LINK) from None
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return fd
    os.close(fd)
    raise NotPrivate(path, _LINK)


_LINK = "is a symbolic link, which is never written through: name the file itself (or - for stdout)"


def _check_owned(path: str | os.PathLike[str], st: os.stat_result) -> None:
    """Refuse what another user owns (a device such as ``/dev/null`` aside: it keeps
    nothing) and a regular file with a second name (a hard link to it elsewhere)."""
    if sys.platform == "win32":  # no owner in a stat there: the profile's ACL decides
        return
    if st.st_uid != os.geteuid() and not stat.S_ISCHR(st.st_mode):
        raise NotPrivate(path, "belongs to another user: choose a file of your own")
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise NotPrivate(path, "has another name (a hard link): choose a file of its own")


def open_private(path: str | os.PathLike[str], mode: Literal["w", "a", "x"] = "w") -> IO[str]:
    """A UTF-8 text file opened for writing (``w``: emptied first), appending (``a``) or
    created new (``x``: FileExistsError if the name is taken), readable by the user alone."""
    fd = private_fd(path, _FLAGS[mode])
    try:
        return open(fd, "a" if mode == "a" else "w", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def write_private_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (UTF-8) readable by the user alone, replacing it whole:
    a reader (or a crash) sees the old file or the new one, never half of one.

    The text goes to a temporary file beside ``path`` (``mkstemp``: ``O_EXCL``, 0600, a
    name no other writer picks), is flushed to the disk, then renamed over ``path`` (the
    rename, too, on POSIX).  A link or another user's file at ``path`` is refused
    (:class:`NotPrivate`) rather than replaced: it is not the user's file to overwrite.
    """
    _check_replaceable(path)
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
    sync_folder(path.parent)
    return path


def _check_replaceable(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise NotPrivate(path, _LINK)
    _check_owned(path, st)


def sync_folder(folder: Path) -> None:
    """Make a rename or a new name in ``folder`` durable (POSIX; Windows cannot open a
    folder for it, and NTFS journals names itself)."""
    if sys.platform == "win32":
        return
    with contextlib.suppress(OSError):  # a file system that cannot sync folders: the rename still holds
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
