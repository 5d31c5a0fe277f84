"""A benchmark corpus: WAV clips plus ``manifest.json`` (file, text, speech_end_s, …)."""

from __future__ import annotations

import json
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from rapidfuzz.distance import Levenshtein

from app.audio.frames import SAMPLE_RATE
from app.core.text import has_cjk, words


@dataclass(frozen=True)
class Clip:
    path: Path
    text: str
    speech_end_s: float
    speech_start_s: float = 0.0
    pauses: tuple[tuple[float, float], ...] = ()
    """(start, length) of the pauses inside the question, seconds from the clip's start."""


def load_corpus(folder: str | Path, limit: int | None = None) -> list[Clip]:
    root = Path(folder)
    manifest = root / "manifest.json"
    if not manifest.exists():
        raise FileNotFoundError(f"{manifest} not found: a corpus folder needs a manifest.json "
                                "listing file, text and speech_end_s for each clip")
    entries = json.loads(manifest.read_text(encoding="utf-8"))
    clips = [Clip(root / e["file"], e["text"], float(e["speech_end_s"]), float(e.get("speech_start_s", 0.0)),
                  tuple((float(a), float(b)) for a, b in e.get("pauses", ())))
             for e in entries]
    return clips[:limit] if limit else clips


def read_audio(path: Path) -> npt.NDArray[np.int16]:
    """A clip's samples: the corpora are 16 kHz mono 16-bit WAV."""
    with wave.open(str(path), "rb") as wav:
        if (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) != (SAMPLE_RATE, 1, 2):
            raise ValueError(f"{path}: the corpus is 16 kHz mono 16-bit WAV")
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2").astype(np.int16)


def wer(references: list[str], hypotheses: list[str]) -> float:
    """Corpus word error rate: total edits / total reference words.

    Every CJK character is a word (:func:`app.core.text.words`), so on Chinese this is the
    character error rate (CER), and mixed questions count each English word once.
    """
    edits = sum(Levenshtein.distance(words(r), words(h)) for r, h in zip(references, hypotheses, strict=True))
    total = sum(len(words(r)) for r in references)
    return edits / total if total else 0.0


def error_unit(references: list[str]) -> str:
    """"cer" when the references are mostly Chinese/Japanese, else "wer": what to call it."""
    cjk = sum(has_cjk(r) for r in references)
    return "cer" if references and cjk * 2 > len(references) else "wer"


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f} ms"
