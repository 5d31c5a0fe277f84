"""A document reader run in a process of its own, where its limits are real.

A reader's own checks run between its steps, and a parser can spend seconds inside one
step (pypdf parses a page's whole content stream before it hands out any text: 150,000
text operators took 4 s, a stream under two Flate layers 24 s and 330 MB).  So the
reading runs in a child process, and the parent enforces the bounds from outside: a
wall clock, and a memory cap where the system enforces one.  Design notes: decision 0039.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from app.prompt.limits import Deadline, Unreadable, late

T = TypeVar("T")

MEMORY_CAP_BYTES = 1 << 30
"""Address space a reading may take: a Python with pypdf maps ~100 MB before reading, and
a résumé's reading adds a few tens; pypdf lets one stream decompress to 75 MB, which
parsed costs a few times that.  1 GiB is several times what any real document needs and
a small part of any machine the app runs on."""
START_LIMIT_S = 30.0
"""How long a child may take to be ready: an interpreter and pypdf start in a few tenths
of a second, a machine loading the speech models beside it may take seconds."""

_STOPPED = ("needed more memory than a document could, so it was skipped (it may be damaged, "
            "or made to stall programs that read it): save it again as .docx, .pdf, .txt or .md, "
            "or paste its text into a .txt file, and pick that in Settings")
_NOT_STARTED = "could not be read: its reader did not start in time; pick it again in Settings"


def read_bounded(reader: Callable[..., T], args: tuple[Any, ...], *, seconds: float,
                 memory: int = MEMORY_CAP_BYTES) -> T:
    """``reader(*args, deadline)`` in a child process, within ``seconds`` of the child
    being ready and ``memory`` bytes of address space; its :class:`Unreadable` comes back
    as one, and a child out of time or memory is killed and said to be."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(theirs, reader, args, seconds, memory),
                            name="document-reader", daemon=True)
    child.start()
    theirs.close()
    try:
        if not ours.poll(START_LIMIT_S):
            raise Unreadable(_NOT_STARTED)
        ours.recv()  # ready
        if not ours.poll(seconds):
            raise late(seconds)
        kind, value = ours.recv()
    except (EOFError, OSError):  # killed by the system, or by its own memory cap
        raise Unreadable(_STOPPED) from None
    finally:
        child.kill()
        child.join()
        ours.close()
    if kind == "unreadable":
        raise Unreadable(value)
    result: T = value
    return result


def _child(out: Connection, reader: Callable[..., Any], args: tuple[Any, ...], seconds: float,
           memory: int) -> None:
    _cap_memory(memory)
    out.send("ready")
    try:
        result = ("done", reader(*args, Deadline(seconds)))
    except Unreadable as exc:
        result = ("unreadable", exc.reason)
    except MemoryError:
        result = ("unreadable", _STOPPED)
    out.send(result)
    out.close()


def _cap_memory(limit: int) -> None:
    if sys.platform == "win32":
        return
    import resource

    with contextlib.suppress(ValueError, OSError):  # refused: the wall clock still holds
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
