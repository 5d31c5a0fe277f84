"""Is this file a model llama.cpp can load?  Checked before the embedded server starts, so
a wrong pick in Settings is one clear sentence instead of a server log."""

from __future__ import annotations

import os
from pathlib import Path

GGUF_MAGIC = b"GGUF"
"""The first four bytes of every GGUF file (llama.cpp's format, any version)."""


class LocalModelError(ValueError):
    """The chosen local model file cannot be loaded; the message names it and says why."""


def check_gguf(path: str | os.PathLike[str]) -> Path:
    """``path`` if it is a readable GGUF file; :class:`LocalModelError` saying why not.

    Only the magic is read: llama.cpp itself reports a damaged file past it, and four bytes
    tell a GGUF from what users pick by mistake (a ``.safetensors``, a ``.bin``, a folder).
    """
    file = Path(path).expanduser()
    fix = 'choose another file in Settings → Model, or set [llm] local_model = "bundled"'
    if not file.exists():
        raise LocalModelError(f"The local model {file} does not exist: {fix}.")
    if not file.is_file():
        raise LocalModelError(f"The local model {file} is a folder, not a GGUF file: {fix}.")
    try:
        with open(file, "rb") as handle:
            head = handle.read(len(GGUF_MAGIC))
    except OSError as exc:
        reason = exc.strerror or exc
        raise LocalModelError(f"The local model {file} cannot be read ({reason}): {fix}.") from exc
    if head != GGUF_MAGIC:
        raise LocalModelError(f"The local model {file} is not a GGUF file (llama.cpp's format; it does "
                              f"not start with GGUF): {fix}.")
    return file
