"""Busy processes that load the cores, for tests and benchmarks that must hold on a busy
machine (a shared CI runner, a laptop running the video call)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

BUSY_LOOP = "while True: pass"


@contextmanager
def busy_processes(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` processes spinning on the CPU for as long as the block runs, then killed."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(count)]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()
