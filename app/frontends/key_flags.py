"""This run's API key, given so that other users of the computer do not see it.

A key passed as ``--api-key KEY`` is in the process's command line, which every local user
can list (``ps``, Task Manager, ``/proc/PID/cmdline``) for as long as the app runs.  So
the key can also be read from a file (``--api-key-file PATH``: its first line) or from
standard input (``--api-key -``; typed without echo on a terminal), and the flag with the
key itself still works but warns, once per run.
"""

from __future__ import annotations

import argparse
import getpass
import os
import stat
import sys
from collections.abc import Callable
from typing import IO

KEY_CAP = 4096
"""Bytes read at most for a key: real keys are under 200 characters, and a file or a pipe
that never ends must not be read into memory."""
VISIBLE_WARNING = ("warning: --api-key puts the key on the command line, where other users of this computer "
                   "can see it; pass --api-key-file PATH or --api-key - (read from standard input) instead")

_warned = False


class KeyFlagError(Exception):
    """The key could not be read as asked; ``str()`` says why, without the key."""


def add_key_flags(parser: argparse.ArgumentParser,
                  where: str = "env OPENAI_API_KEY; else the keychain") -> None:
    parser.add_argument("--api-key", metavar="KEY",
                        help=f"API key for this run ({where}); '-' reads it from standard input. On the "
                             "command line other local users can see it: prefer --api-key-file or '-'")
    parser.add_argument("--api-key-file", metavar="PATH",
                        help="read this run's API key from the first line of PATH")


def key_from_flags(args: argparse.Namespace, *, stdin: IO[str] | None = None,
                   warn: Callable[[str], object] | None = None) -> str | None:
    """The key the flags give (None: none given).  Raises :class:`KeyFlagError`."""
    value: str | None = getattr(args, "api_key", None)
    path: str | None = getattr(args, "api_key_file", None)
    if value is not None and path is not None:
        raise KeyFlagError("give the API key once: --api-key or --api-key-file, not both")
    if path is not None:
        return _from_file(path, warn or _stderr)
    if value == "-":
        return _from_stdin(stdin if stdin is not None else sys.stdin)
    if value is not None:
        _warn_once(warn or _stderr)
    return value


def _from_file(path: str, warn: Callable[[str], object]) -> str:
    try:
        with open(path, "rb") as file:
            mode = os.fstat(file.fileno()).st_mode
            data = file.read(KEY_CAP + 1)
    except OSError as exc:
        raise KeyFlagError(f"cannot read the API key file {path}: {exc.strerror or exc}") from None
    if sys.platform != "win32" and stat.S_ISREG(mode) and mode & 0o077:
        warn(f"warning: the API key file {path} can be read by other users of this computer "
             f"(chmod 600 {path})")
    return _first_line(data.decode("utf-8", errors="replace"), f"the API key file {path}")


def _from_stdin(stdin: IO[str]) -> str:
    if stdin.isatty():
        try:
            return _first_line(getpass.getpass("API key: ", stream=sys.stderr), "the API key typed")
        except (EOFError, KeyboardInterrupt):
            raise KeyFlagError("no API key was typed") from None
    return _first_line(stdin.read(KEY_CAP + 1), "standard input (--api-key -)")


def _first_line(text: str, source: str) -> str:
    if len(text) > KEY_CAP:
        raise KeyFlagError(f"{source} holds more than {KEY_CAP} characters: not an API key")
    lines = text.strip().splitlines()
    key = lines[0].strip() if lines else ""
    if not key:
        raise KeyFlagError(f"{source} holds no API key")
    return key


def _warn_once(warn: Callable[[str], object]) -> None:
    global _warned
    if not _warned:
        _warned = True
        warn(VISIBLE_WARNING)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)
