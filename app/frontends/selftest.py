"""``interview-copilot self-test``: does this installation (or bundle) actually work?

Each check prints one line, ``PASS``/``WARN``/``FAIL``/``SKIP`` with what it saw, and on a
failure or warning one line saying how to fix it.  The exit code is 0 only if no check
failed.  The checks exercise the real components of what ships, not their presence: the
bundled Whisper model transcribes the bundled demo clip (the ASR check ``doctor`` runs
too, :mod:`app.frontends.checks`), webrtcvad classifies frames of it, the embedded local LLM answers
(skipped in a build without it; a warning on a CPU it cannot run on), Qt starts a widget
offscreen, PortAudio loads (and on Windows soundcard finds the speaker to loop back), the
OS's global-hotkey backend constructs, OpenCC converts between Chinese scripts, the
multilingual model's parts assemble to their pinned hash, Smart Turn's ONNX runs once, the
screen reader reads a line OpenCV draws, and the keychain backend is named.  A part that is
optional and absent is a SKIP.

Works from the source tree and inside a PyInstaller bundle (files under ``sys._MEIPASS``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NoReturn

import numpy as np
import numpy.typing as npt

from app import __version__
from app.frontends.checks import (
    Check,
    CheckFailed,
    CheckResult,
    Skipped,
    demo_audio,
    find_asset,
    read_clip,
    resource_roots,
    run_check,
)

__all__ = ["CHECKS", "CheckFailed", "CheckResult", "Skipped", "find_asset", "resource_roots", "run_check",
           "run_self_test"]

SAMPLE_RATE = 16_000
FRAME_SAMPLES = 480  # 30 ms: a frame size webrtcvad accepts
_MARK = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", "skip": "SKIP"}


def format_line(result: CheckResult) -> str:
    text = f"{_MARK[result.status]} {result.name:<10} {result.detail} ({result.seconds:.1f} s)"
    if result.status in ("fail", "warn") and result.fix:
        text += f"\n     fix: {result.fix}"
    return text


@dataclass
class Report:
    version: str
    frozen: bool
    results: list[CheckResult] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)


def _clip() -> npt.NDArray[np.int16]:
    return read_clip(demo_audio())


# --- the checks -----------------------------------------------------------------------------------


def check_asr() -> CheckResult:
    """The bundled tiny.en transcribes the demo clip (the check doctor runs too)."""
    from app.frontends.checks import check_asr as shared

    return shared("bundled", "en")


def check_vad() -> str:
    try:
        import webrtcvad
    except ImportError as exc:
        raise CheckFailed(f"webrtcvad does not import: {exc}", "pip install webrtcvad-wheels") from exc
    samples = _clip()
    usable = len(samples) // FRAME_SAMPLES * FRAME_SAMPLES
    frames = samples[:usable].reshape(-1, FRAME_SAMPLES)
    loudest = frames[int(np.argmax(np.abs(frames.astype(np.int32)).mean(axis=1)))]
    # Fresh detectors: webrtcvad keeps saying "speech" for a few frames after speech (hangover).
    voiced = bool(webrtcvad.Vad(2).is_speech(loudest.tobytes(), SAMPLE_RATE))
    silent = bool(webrtcvad.Vad(2).is_speech(np.zeros(FRAME_SAMPLES, dtype=np.int16).tobytes(), SAMPLE_RATE))
    if not voiced or silent:
        raise CheckFailed(f"webrtcvad said speech={voiced} for a voiced frame, speech={silent} for silence",
                          "the webrtcvad extension is broken: pip install --force-reinstall webrtcvad-wheels")
    return "voiced frame -> speech, zero frame -> non-speech"


def check_llm() -> str | CheckResult:
    """The embedded llama.cpp server starts and streams an answer (one token is enough)."""
    from app.llm.errors import LlmError
    from app.llm.local_server import LocalServer, llama_cpp_available
    from app.platform.bundled import GGUF_NAME, cpu_problem, find_bundled_model

    cpu = cpu_problem()
    if cpu is not None:  # a working install on a CPU the build cannot run: say so, do not crash
        return CheckResult("llm", "warn", cpu, "use an API endpoint for answers (Settings or --base-url)")
    if not llama_cpp_available() or find_bundled_model() is None:
        missing = "llama-cpp-python" if not llama_cpp_available() else GGUF_NAME
        raise Skipped(f"local LLM not bundled ({missing} absent); answers need an API key")
    import httpx2
    import openai

    server = LocalServer(n_ctx=512)
    try:
        started = time.perf_counter()
        try:
            base_url = server.start(timeout=90.0, warm_model=False)
        except LlmError as exc:
            raise CheckFailed(f"the local LLM server did not start: {exc}",
                              "reinstall the app, or set an API key to use a cloud model") from exc
        startup = time.perf_counter() - started
        with httpx2.Client(trust_env=False, timeout=httpx2.Timeout(60.0)) as http:
            client = openai.OpenAI(base_url=base_url, api_key=server.api_key, http_client=http, max_retries=0)
            stream = client.chat.completions.create(
                model=server.model, stream=True, max_tokens=4, temperature=0.0,
                messages=[{"role": "user", "content": "Say hello."}],
            )
            pieces = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
        answer = "".join(pieces).strip()
        if not answer:  # the log is read before stop() removes it
            raise CheckFailed("the local LLM streamed an empty answer",
                              f"reinstall the app; the server's last log lines:\n{server.log_tail()}")
    finally:
        server.stop()
    return f"SmolLM2 started in {startup:.1f} s and answered: \"{answer[:40]}\""


@contextlib.contextmanager
def _offscreen_qt() -> Iterator[None]:
    """Qt on its offscreen platform for the duration (a self-test opens no window)."""
    previous = os.environ.get("QT_QPA_PLATFORM")
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("QT_QPA_PLATFORM", None)
        else:
            os.environ["QT_QPA_PLATFORM"] = previous


def check_qt() -> str:
    messages: list[str] = []
    try:
        with _offscreen_qt():
            shown, platform, pyside_version = _show_widget(messages)
    except ImportError as exc:
        raise CheckFailed(
            f"PySide6 does not import: {exc}",
            "reinstall the app; on Linux install libegl1 libgl1 libxkbcommon0 libfontconfig1",
        ) from exc
    if not shown:
        raise CheckFailed(f"a QWidget did not become visible; Qt said: {' | '.join(messages) or 'nothing'}",
                          "run with QT_DEBUG_PLUGINS=1 to see what Qt misses")
    return f"PySide6 {pyside_version}: QApplication ({platform}) and a QWidget up"


def _show_widget(messages: list[str]) -> tuple[bool, str, str]:
    from PySide6 import __version__ as pyside_version
    from PySide6.QtCore import QCoreApplication, QMessageLogContext, QtMsgType, qInstallMessageHandler
    from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

    def collect(_kind: QtMsgType, _context: QMessageLogContext, message: str) -> None:
        messages.append(message)  # locale and offscreen-plugin notes: only shown on failure

    previous_handler = qInstallMessageHandler(collect)
    try:
        app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "interview-copilot"])
        widget = QWidget()
        layout = QVBoxLayout(widget)
        layout.addWidget(QLabel("Interview Copilot self-test"))
        widget.resize(320, 120)
        widget.show()
        QCoreApplication.processEvents()
        shown = widget.isVisible()
        platform = QApplication.platformName() if isinstance(app, QApplication) else "?"
        widget.close()
        widget.deleteLater()
        QCoreApplication.processEvents()
    finally:
        qInstallMessageHandler(previous_handler)
    return shown, platform, pyside_version


def check_audio() -> str:
    """PortAudio loads (every OS); on Windows, soundcard (WASAPI loopback) finds the speaker."""
    try:
        import sounddevice
    except (ImportError, OSError) as exc:
        raise CheckFailed(f"PortAudio does not load: {exc}",
                          "Linux: apt-get install libportaudio2; otherwise reinstall the app") from exc
    version = str(sounddevice.get_portaudio_version()[1])
    try:
        inputs = sum(1 for d in sounddevice.query_devices() if d["max_input_channels"] > 0)
        detail = f"{version} loaded, {inputs} input device(s)"
    except Exception as exc:  # no audio system at all (CI, containers): still a working PortAudio
        detail = f"{version} loaded (no devices: {exc})"
    if sys.platform == "win32":
        detail += "; " + _soundcard_speaker()
    return detail


def _soundcard_speaker() -> str:
    try:
        import soundcard
    except Exception as exc:  # ImportError, or its COM/cffi bindings failing to load
        raise CheckFailed(f"soundcard (WASAPI loopback) does not load: {exc}", "reinstall the app") from exc
    try:
        speaker = soundcard.default_speaker()
        soundcard.get_microphone(speaker.id, include_loopback=True)
    except Exception as exc:  # a machine without speakers (CI): the library itself works
        return f"soundcard loaded (no default speaker: {exc})"
    return f"soundcard: default speaker {speaker.name!r} and its loopback found"


def check_hotkeys() -> str:
    """The global-hotkey backend of this OS constructs (Carbon, user32; X11 needs a display)."""
    from PySide6.QtWidgets import QApplication

    with _offscreen_qt():
        QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "interview-copilot"])
        from app.ui.hotkeys import default_backend

        backend = default_backend()
        why = backend.unavailable()
        backend.unregister_all()
    if why is not None and sys.platform in ("win32", "darwin"):
        raise CheckFailed(f"the {sys.platform} hotkey backend did not load: {why}", "reinstall the app")
    return f"backend {backend.name!r}" + (f" ({why}; in-window shortcuts only)" if why else " ready")


def check_opencc() -> str:
    """OpenCC converts between the Chinese scripts (captions in the script the user picked)."""
    from app.asr.script import ScriptConverter

    traditional, simplified = ScriptConverter("traditional"), ScriptConverter("simplified")
    if not traditional.available:
        _absent("OpenCC is not installed (the [zh] extra): Chinese captions keep Whisper's script")
    out = (traditional.convert("汉语识别"), simplified.convert("漢語識別"))
    if out != ("漢語識別", "汉语识别"):
        raise CheckFailed(f"OpenCC converted 汉语识别/漢語識別 to {out[0]}/{out[1]}",
                          "OpenCC's dictionaries are missing from the install: reinstall the app")
    return "simplified -> traditional -> simplified: 汉语识别 / 漢語識別"


def _absent(what: str) -> NoReturn:
    """An optional part missing: a skip from a source install without its extra, a failure in
    a bundle, whose spec always ships it (packaging/interview-copilot.spec)."""
    if getattr(sys, "frozen", False):
        raise CheckFailed(what.split(" (")[0] + " in this build",
                          "the bundle is incomplete: reinstall the app")
    raise Skipped(what)


def check_word_list() -> str:
    """The English word list that tells a misheard name ("Deadbism") from a real word."""
    from app.asr.near_miss import english_words

    known = english_words()
    if not known or "answerable" not in known:
        raise CheckFailed("the English word list (pyspellchecker's en.json.gz) cannot be read: "
                          "misheard names of the résumé are not mended", "reinstall the app")
    return f"{len(known):,} English words"


def check_zh_model() -> str:
    """The multilingual Whisper's parts are installed and assemble to the pinned SHA-256."""
    import importlib.util

    from app.asr.errors import ModelError
    from app.asr.multilingual import FILES, ensure_multilingual_model

    packages = {part.module for pinned in FILES.values() for part in pinned.sources}
    if all(importlib.util.find_spec(m) is None for m in packages):
        _absent("the multilingual model is not installed (the [zh] extra): English only")
    with tempfile.TemporaryDirectory(prefix="ic-selftest-") as tmp:
        try:
            folder = ensure_multilingual_model(Path(tmp))  # the first-use path, hashes checked
        except ModelError as exc:
            raise CheckFailed(str(exc), "reinstall the app") from exc
        size = sum(f.stat().st_size for f in folder.iterdir())
    return f"{len(FILES)} files, {size / 1e6:.0f} MB, SHA-256 as pinned"


def check_smart_turn() -> str:
    """Smart Turn's ONNX model runs once on the demo clip's last 8 s (onnxruntime works)."""
    from app.turns.sound import SmartTurn, SoundUnavailable, find_model

    if find_model() is None:
        raise Skipped("Smart Turn is not installed (the [smart-turn] extra, pipecat-ai): the words model "
                      "and the rules decide")
    try:
        p = SmartTurn(threads=1).p_end(_clip())
    except SoundUnavailable as exc:
        raise CheckFailed(str(exc), "onnxruntime or the model is damaged: reinstall the app") from exc
    if not 0.0 <= p <= 1.0:
        raise CheckFailed(f"Smart Turn returned {p}, not a probability", "reinstall the app")
    return f"onnxruntime ran Smart Turn v3.2: P(end of turn) = {p:.2f} at the end of the demo"


SCREEN_LINE = "Return the indices of the two numbers"
"""What the screen reader's check draws and reads back."""


def check_screen_reader() -> str:
    """The screen reader's models are found, pass their pins, load, and read a drawn line."""
    import cv2
    from rapidfuzz.distance import Levenshtein

    from app.screen.errors import ScreenError
    from app.screen.ocr import Reader

    image = np.full((60, 640, 3), 255, np.uint8)
    cv2.putText(image, SCREEN_LINE, (10, 40), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (0, 0, 0), 2, cv2.LINE_AA)
    try:
        reading = Reader().read(image)
    except ScreenError as exc:
        raise CheckFailed(str(exc), "reinstall the app") from exc
    if Levenshtein.normalized_similarity(reading.text.casefold(), SCREEN_LINE.casefold()) < 0.9:
        raise CheckFailed(f"the screen reader read {reading.text!r} for {SCREEN_LINE!r}", "reinstall the app")
    return f"read {reading.text!r} in {reading.seconds:.2f} s (the models' load apart)"


def check_keychain() -> str:
    """Which keychain backend stores API keys (none found: only the environment works)."""
    import keyring

    backend = keyring.get_keyring()
    chained = getattr(backend, "backends", None)
    names = [type(b).__module__ + "." + type(b).__name__ for b in (chained or [backend])]
    usable = [n for n in names if not n.startswith(("keyring.backends.fail", "keyring.backends.null"))]
    if usable:
        return "keyring backend: " + ", ".join(usable)
    message = f"no keychain backend ({', '.join(names)}): API keys cannot be saved"
    if sys.platform in ("win32", "darwin") and not os.environ.get("PYTHON_KEYRING_BACKEND"):
        raise CheckFailed(message, "reinstall the app (its keyring backends are missing)")
    return message + " — set OPENAI_API_KEY instead, or install a Secret Service (GNOME Keyring, KWallet)"


CHECKS: list[tuple[str, Check]] = [
    ("asr", check_asr),
    ("vad", check_vad),
    ("llm", check_llm),
    ("qt", check_qt),
    ("audio", check_audio),
    ("hotkeys", check_hotkeys),
    ("opencc", check_opencc),
    ("word-list", check_word_list),
    ("zh-model", check_zh_model),
    ("smart-turn", check_smart_turn),
    ("screen-reader", check_screen_reader),
    ("keychain", check_keychain),
]


def run_checks(checks: list[tuple[str, Check]] | None = None,
               on_result: Callable[[CheckResult], None] | None = None) -> Report:
    from app.session.about import component_versions

    report = Report(version=__version__, frozen=bool(getattr(sys, "frozen", False)))
    for name, check in CHECKS if checks is None else checks:
        result = run_check(name, check)
        report.results.append(result)
        if on_result is not None:
            on_result(result)
    report.versions = component_versions()
    return report


@contextlib.contextmanager
def _quiet_native_logs() -> Iterator[None]:
    """CTranslate2 and llama.cpp may log to stderr; keep the report readable."""
    previous = os.environ.get("CT2_VERBOSE")
    os.environ["CT2_VERBOSE"] = "-1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("CT2_VERBOSE", None)
        else:
            os.environ["CT2_VERBOSE"] = previous


def run_self_test(argv: list[str] | None = None) -> int:
    """Run every check, print the report; 0 only if no required check failed.

    ``argv``: the arguments after ``self-test`` (``app.frontends.cli`` passes them): ``--json``
    (a JSON report on stdout instead of lines) and ``--only NAME[,NAME]``; any other flag is
    refused with the usage (exit 2).  Without ``argv`` they are read from ``sys.argv`` after
    ``self-test``.
    """
    args = _parse(argv if argv is not None else _argv_after_command())
    for stream in (sys.stdout, sys.stderr):  # a cp1252 Windows console must not crash the report
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    checks = CHECKS
    if args.only:
        wanted = {n.strip() for n in args.only.split(",")}
        checks = [(n, c) for n, c in CHECKS if n in wanted]
    where = "bundle " + str(Path(sys.executable).parent) if getattr(sys, "frozen", False) else "source tree"
    if not args.json:
        print(f"Interview Copilot {__version__} self-test ({where}, {sys.platform})", flush=True)
    with _quiet_native_logs():
        report = run_checks(checks, None if args.json else lambda r: print(format_line(r), flush=True))
    if args.json:
        payload = {"ok": report.ok, "version": report.version, "frozen": report.frozen,
                   "checks": [asdict(r) for r in report.results], "versions": report.versions}
        print(json.dumps(payload, indent=2))
    else:
        print("versions: " + ", ".join(f"{k} {v}" for k, v in report.versions.items()))
        failed = [r.name for r in report.results if not r.ok]
        print("self-test: " + ("all checks passed" if not failed else "FAILED: " + ", ".join(failed)))
    return 0 if report.ok else 1


def _argv_after_command() -> list[str]:
    argv = sys.argv[1:]
    return argv[argv.index("self-test") + 1:] if "self-test" in argv else []


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="interview-copilot self-test")
    parser.add_argument("--json", action="store_true", help="print a JSON report")
    parser.add_argument("--only", metavar="NAMES", help="comma-separated: " + ",".join(n for n, _ in CHECKS))
    return parser.parse_args(argv)  # an unknown flag: the usage and exit 2, never ignored


if __name__ == "__main__":
    raise SystemExit(run_self_test(sys.argv[1:]))
