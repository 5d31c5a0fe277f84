"""Does the pause itself say whether the question is over? Pitch and the last syllable.

For each pause inside a question and each true end of a corpus whose manifest has
``pauses``, three cues of the voice just before the silence: the F0 slope over the last
250 ms of voice, the last F0 against the utterance's median (semitones), and the last
voiced run's length against the median run so far (a lengthened final syllable).  Each
cue's AUC says how well it alone separates ends from pauses (0.5: not at all).  Measured,
not shipped (decision 0052):

    python -m devtools.bench.prosody ../shared/corpus/dev-pauses
"""

from __future__ import annotations

import argparse
import json
import wave
from pathlib import Path

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16000
FRAME, HOP = 640, 160
"""40 ms windows every 10 ms: two periods of a 50 Hz voice, a hop of one frame of F0 track."""
F0_RANGE = (70.0, 400.0)
VOICED_PEAK = 0.5
"""Normalised autocorrelation above which a frame is voiced."""
CUES = ("F0 slope, last 250 ms (st/s)", "last F0 against the median (st)", "last voiced run / median run")
Floats = npt.NDArray[np.float64]


def read(path: Path) -> Floats:
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float64) / 32768


def f0_track(samples: Floats) -> Floats:
    """F0 per 10 ms (NaN where unvoiced), by normalised autocorrelation."""
    lags = np.arange(int(SAMPLE_RATE / F0_RANGE[1]), int(SAMPLE_RATE / F0_RANGE[0]) + 1)
    track = []
    for start in range(0, len(samples) - FRAME, HOP):
        frame = samples[start:start + FRAME] - samples[start:start + FRAME].mean()
        energy = float(frame @ frame)
        if energy < 1e-4:
            track.append(np.nan)
            continue
        peaks = np.array([frame[:-lag] @ frame[lag:] for lag in lags]) / energy
        best = int(np.argmax(peaks))
        track.append(SAMPLE_RATE / lags[best] if peaks[best] > VOICED_PEAK else np.nan)
    return np.array(track)


def cues(f0: Floats, before_s: float) -> tuple[float, float, float] | None:
    """The three cues of the voice before ``before_s``; None with too little voice."""
    end = int(before_s * 100)
    voiced_at = np.where(~np.isnan(f0[:end]))[0]
    if len(voiced_at) < 5:
        return None
    semitones = 12 * np.log2(f0[:end] / np.nanmedian(f0[:end]))
    last = voiced_at[-25:]
    slope = float(np.polyfit(last / 100.0, semitones[last], 1)[0])
    runs = np.split(voiced_at, np.where(np.diff(voiced_at) > 1)[0] + 1)
    lengths = [len(run) for run in runs]
    return slope, float(semitones[voiced_at[-1]]), lengths[-1] / float(np.median(lengths))


def auc(positive: list[float], negative: list[float]) -> float:
    """The chance that an end scores above a pause (ties count half)."""
    pos, neg = np.asarray(positive)[:, None], np.asarray(negative)[None, :]
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size))


def measure(corpus: Path) -> dict[str, float]:
    ends: list[tuple[float, float, float]] = []
    inside: list[tuple[float, float, float]] = []
    for entry in json.loads((corpus / "manifest.json").read_text(encoding="utf-8")):
        f0 = f0_track(read(corpus / entry["file"]))
        inside += [c for start, _ in entry.get("pauses", []) if (c := cues(f0, start)) is not None]
        if (c := cues(f0, entry["speech_end_s"])) is not None:
            ends.append(c)
    print(f"{corpus.name}: {len(ends)} ends, {len(inside)} pauses inside")
    result = {}
    for i, name in enumerate(CUES):
        result[name] = auc([c[i] for c in ends], [c[i] for c in inside])
        print(f"  {name:34s} AUC {result[name]:.2f}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description="prosodic cues at pauses against true ends")
    parser.add_argument("corpus", nargs="+", type=Path)
    for corpus in parser.parse_args().corpus:
        measure(corpus)


if __name__ == "__main__":
    main()
