"""A disk that fills up, for the tests of what is kept when writing fails: a small tmpfs
mounted for the test (root only, else the test is skipped), with ``free`` bytes left."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(folder: Path, free: int) -> Iterator[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(folder)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        stats = os.statvfs(folder)
        (folder / "filler").write_bytes(bytes(stats.f_bavail * stats.f_frsize - free))
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
