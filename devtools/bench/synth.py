"""Synthesized speech and room tone for benchmark corpora (never shipped).

Voices are named ``engine:voice``: ``espeak:en-us+f3`` (espeak-ng, with its variants) or
``flite:slt`` (Debian's ``flite``: a different synthesizer from the one the dev corpora
and the tests use, which is the point of a held-out set).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import wave
from pathlib import Path

import numpy as np
import numpy.typing as npt

from app.audio.frames import SAMPLE_RATE
from devtools.bench.corpus import read_audio

ENGINES = {"espeak": "espeak-ng", "flite": "flite"}


def speak(text: str, voice: str, rate_wpm: int | None = None) -> npt.NDArray[np.float64]:
    """``text`` in ``voice``, 16 kHz, trimmed of leading and trailing silence.

    Raises SystemExit with the package to install when the synthesizer is missing.
    """
    engine, name = voice.split(":", 1)
    program = ENGINES[engine]
    if shutil.which(program) is None:
        raise SystemExit(f"{program} is not installed (Debian: apt install {program})")
    with tempfile.TemporaryDirectory() as tmp:
        raw, out = Path(tmp) / "raw.wav", Path(tmp) / "out.wav"
        if engine == "flite":
            command = [program, "-voice", name, "-t", text, "-o", str(raw)]
        else:
            rate = ["-s", str(rate_wpm)] if rate_wpm else []
            command = [program, "-v", name, *rate, "-w", str(raw), text]
        subprocess.run(command, check=True)
        # 3 dB of headroom for the resampler; silence below -60 dBFS trimmed, so a soft
        # last consonant stays part of the speech (its end is what latency counts from)
        trim = ["silence", "1", "0.01", "0.1%", "reverse"]
        subprocess.run(["sox", "-D", str(raw), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(out),
                        "gain", "-3", *trim, *trim], check=True)
        return read_audio(out).astype(np.float64)


def at_peak(speech: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``speech`` scaled so its peak is 70 % of 16-bit full scale (-3 dBFS): every
    corpus's level, whatever the synthesizer's."""
    return speech * (0.7 * 32767 / max(1.0, float(np.abs(speech).max())))


def pink_noise(seconds: float, dbfs: float, seed: int = 0,
               rate: int = SAMPLE_RATE) -> npt.NDArray[np.float64]:
    """Pink (1/f) noise whose RMS is ``dbfs`` (a quiet office or a laptop fan is about -42)."""
    n = int(seconds * rate)
    spectrum = np.fft.rfft(np.random.default_rng(seed).standard_normal(n))
    freqs = np.fft.rfftfreq(n, 1 / rate)
    freqs[0] = freqs[1]
    shaped = np.fft.irfft(spectrum / np.sqrt(freqs), n)
    shaped *= 10 ** (dbfs / 20) * 32768 / np.sqrt(np.mean(shaped**2))
    return shaped


def write_wav(path: Path, samples: npt.NDArray[np.float64]) -> None:
    """16 kHz mono 16-bit, clipped: the corpora's format."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(np.clip(samples, -32768, 32767).astype(np.int16).tobytes())
