"""The terminal a windowed ``interview-copilot.exe`` was typed into, when there is one.

The installed Windows executable is a GUI program, so that opening the window from the
Start menu flashes no console.  Windows then gives it no standard streams and Python sets
``sys.stdout`` and ``sys.stderr`` to None: ``self-test`` and ``--list-devices`` printed
nothing.  A user who types ``interview-copilot self-test`` in a terminal expects the report
in that terminal, so :func:`attach_parent_console` joins the console of the process that
started us (``AttachConsole(ATTACH_PARENT_PROCESS)``) and opens it as ``CONOUT$``.  Started
from the Start menu or Explorer there is no such console, and it answers None: the caller
then writes nowhere and only the exit code tells.

A shell does not wait for a GUI program, so its prompt comes back before this output and
the exit code never reaches ``%ERRORLEVEL%`` or ``$LASTEXITCODE``.  That is why the bundle
also ships ``interview-copilot-cli.exe``, a console executable of the same program, which
the README names for every command; this module is for the user who typed the other name.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any, TextIO

ATTACH_PARENT_PROCESS = 0xFFFFFFFF
"""``(DWORD)-1``: the console of the process that started this one."""

CONSOLE_OUTPUT = "CONOUT$"
"""The attached console's screen buffer, whatever the process's standard handles are."""

DWORD = ctypes.c_uint32
BOOL = ctypes.c_int32
"""Windows' sizes on every OS (``ctypes.wintypes.DWORD`` is 8 bytes on Linux), so a fake
kernel32 checks the same declaration Windows gets."""


def attach_parent_console(kernel32: Any = None, device: str | None = None) -> TextIO | None:
    """A text stream onto the console of the process that started us, or None when it has
    none (or we are not on Windows).

    ``kernel32`` and ``device`` default to Windows' own (:func:`_kernel32`,
    :data:`CONSOLE_OUTPUT`); tests hand in a fake library and a file.  The stream is UTF-8
    (a console opened by name is written as UTF-16 by Python, so every character shows) and
    starts on a fresh line: the shell has printed its prompt already.
    """
    library = _kernel32() if kernel32 is None else kernel32
    if library is None:
        return None
    attach = library.AttachConsole
    attach.argtypes = [DWORD]
    attach.restype = BOOL
    if not attach(ATTACH_PARENT_PROCESS):
        return None  # no parent console (Start menu, Explorer), or already attached
    try:  # the caller closes it
        stream = open(device or CONSOLE_OUTPUT, "w", encoding="utf-8", errors="replace", buffering=1)  # noqa: SIM115
    except OSError:
        return None
    stream.write("\n")
    return stream


def _kernel32() -> Any:
    """kernel32 on Windows, else None (nothing to attach to: a missing stream stays silent)."""
    if sys.platform == "win32":
        return ctypes.WinDLL("kernel32", use_last_error=True)
    return None
