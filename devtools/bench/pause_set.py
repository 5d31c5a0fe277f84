"""Writing a corpus of questions said in parts, with silence between the parts.

A question is its parts: text, a pause (s), text, …  Each text is spoken by the clip's
voice and each pause is digital silence, between :data:`LEAD_S` of silence before the
speech and :data:`TAIL_S` after it.  The manifest (the dev corpora's format) says where
the speech starts and ends and where each pause lies, which ``bench turns --pauses``
reads.  The pause sets (``pauses_en``, ``pauses_zh``) and the held-out set write through
:func:`write_set`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from app.audio.frames import SAMPLE_RATE
from devtools.bench.synth import at_peak, write_wav

Audio = npt.NDArray[np.float64]
LEAD_S, TAIL_S = 0.6, 2.5
"""As the dev corpora: 0.6 s before the speech, 2.5 s after."""


@dataclass(frozen=True)
class Clip:
    """One question: its parts, the voice the manifest names, and what speaks a text part."""

    parts: Sequence[str | float]
    """Text and pauses alternating, text at both ends."""
    voice: str
    say: Callable[[str], Audio]
    """A text part's speech, 16 kHz, trimmed of silence (``synth.speak``)."""


def said_with_pauses(clip: Clip) -> tuple[Audio, list[list[float]], float]:
    """The clip's audio, its pauses ``[[start_s, length_s], …]`` and where its speech ends (s)."""
    pieces: list[Audio] = [np.zeros(round(LEAD_S * SAMPLE_RATE))]
    pauses: list[list[float]] = []
    t = LEAD_S
    for part in clip.parts:
        if isinstance(part, float):
            pauses.append([round(t, 3), part])
            pieces.append(np.zeros(round(part * SAMPLE_RATE)))
            t += part
            continue
        said = clip.say(part)
        pieces.append(at_peak(said))
        t += len(said) / SAMPLE_RATE
    pieces.append(np.zeros(round(TAIL_S * SAMPLE_RATE)))
    return np.concatenate(pieces), pauses, round(t, 3)


def write_set(out: Path, clips: Iterable[Clip], *, joiner: str = " ",
              room: Callable[[Audio, int], Audio] | None = None) -> None:
    """``q01.wav``, ``q02.wav``, … and ``manifest.json`` in ``out``.  A clip's text is its
    text parts joined by ``joiner``; ``room`` (audio, clip number) puts a clip in a room."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for number, clip in enumerate(clips, 1):
        audio, pauses, speech_end_s = said_with_pauses(clip)
        if room is not None:
            audio = room(audio, number)
        name = f"q{number:02d}.wav"
        write_wav(out / name, audio)
        text = joiner.join(p for p in clip.parts if isinstance(p, str))
        manifest.append({"file": name, "text": text, "voice": clip.voice, "speech_start_s": LEAD_S,
                         "speech_end_s": speech_end_s, "pauses": pauses})
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"{len(manifest)} clips written to {out}")
