"""Real synthesized speech for tests: espeak-ng, converted to 16 kHz mono int16 WAV.

Tests must not depend on ../shared, so they make what they need; results are cached per
test session in a temp folder keyed by the text and voice.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import wave
from pathlib import Path

import numpy as np
import pytest

_CACHE = Path(tempfile.gettempdir()) / "interview-copilot-test-speech"


ESPEAK_MISSING = "espeak-ng is missing: tests/run.sh installs it (apt-get install espeak-ng)"


def have_espeak() -> bool:
    return shutil.which("espeak-ng") is not None


def on_linux_ci() -> bool:
    """Where tests/run.sh has set every Linux service up: a missing one is a broken setup."""
    return sys.platform.startswith("linux") and os.environ.get("CI", "").lower() == "true"


def require_espeak() -> None:
    """Fail loudly on Linux CI, naming the package; skip elsewhere (a developer's machine,
    Windows and macOS, whose CI deselects these tests by ``linux_services``)."""
    if have_espeak():
        return
    if on_linux_ci():
        pytest.fail(ESPEAK_MISSING, pytrace=False)
    pytest.skip(ESPEAK_MISSING)


def synth(text: str, voice: str = "en-us", *, rate: int = 160, lead_s: float = 0.5,
          tail_s: float = 1.5) -> Path:
    """Speak ``text`` into a 16 kHz mono WAV with silence before and after; returns its path."""
    key = hashlib.sha1(f"{text}|{voice}|{rate}|{lead_s}|{tail_s}".encode()).hexdigest()[:16]
    out = _CACHE / f"{key}.wav"
    if out.exists():
        return out
    require_espeak()
    _CACHE.mkdir(parents=True, exist_ok=True)
    raw = _CACHE / f"{key}.raw.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(rate), "-w", str(raw), text], check=True)
    speech = read_wav(raw, resample_to=16_000)
    silence = lambda s: np.zeros(int(16_000 * s), dtype=np.int16)  # noqa: E731
    write_wav(out, np.concatenate([silence(lead_s), speech, silence(tail_s)]))
    raw.unlink()
    return out


def trimmed(path: Path) -> Path:
    """The clip cut to its speech (no leading or trailing silence), for exact gaps."""
    start, end = speech_bounds(path)
    out = path.with_name(path.stem + ".trim.wav")
    if not out.exists():
        write_wav(out, read_wav(path)[int(start * 16_000): int(end * 16_000)])
    return out


def concat(parts: list[Path | float], name: str) -> Path:
    """Join clips and silences (floats, in seconds) into one 16 kHz WAV."""
    chunks = [np.zeros(int(16_000 * p), dtype=np.int16) if isinstance(p, float) else read_wav(p)
              for p in parts]
    out = _CACHE / f"{name}.wav"
    _CACHE.mkdir(parents=True, exist_ok=True)
    write_wav(out, np.concatenate(chunks))
    return out


def read_wav(path: Path, resample_to: int | None = 16_000) -> np.ndarray:
    with wave.open(str(path), "rb") as w:
        rate, channels = w.getframerate(), w.getnchannels()
        data = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
    if channels > 1:
        data = data.reshape(-1, channels).mean(axis=1).astype(np.int16)
    if resample_to and rate != resample_to:
        n = round(len(data) * resample_to / rate)
        data = np.interp(np.linspace(0, len(data) - 1, n), np.arange(len(data)), data).astype(np.int16)
    return data


def write_wav(path: Path, samples: np.ndarray, rate: int = 16_000) -> None:
    """Mono from one dimension; (n, channels) interleaves the channels."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1 if samples.ndim == 1 else samples.shape[1])
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype(np.int16).tobytes())


def speech_bounds(path: Path, threshold: int = 300) -> tuple[float, float]:
    """First and last sample louder than ``threshold``, in seconds: the exact speech span."""
    data = np.abs(read_wav(path).astype(np.int32))
    loud = np.flatnonzero(data > threshold)
    return loud[0] / 16_000, (loud[-1] + 1) / 16_000
