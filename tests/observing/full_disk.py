"""A disk that fills up, for the tests of what is kept when writing fails: a small tmpfs
mounted for the test (:func:`devtools.bench.disk_full.small_disk`; root only, else the
test is skipped), with ``free`` bytes left."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.bench.disk_full import CannotMount
from devtools.bench.disk_full import small_disk as mounted


@contextlib.contextmanager
def small_disk(folder: Path, free: int) -> Iterator[Path]:
    try:
        with mounted(folder, free) as disk:
            yield disk
    except CannotMount as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
