"""The candidate's side of a benchmark call, built from a corpus clip.

Variants (``bench turns --candidate-track``):

- ``off``: the interviewer alone (one source);
- ``reply``: the candidate answers 0.6 s after the question ends (a short statement in
  another voice): nothing about it may be answered;
- ``echo``: ``reply`` plus the interviewer heard through speakers: the question again on
  the microphone, 10 dB quieter and 40 ms late (laptop speakers at arm's length): no
  "You" line may repeat the question;
- ``overlap``: the candidate talks over the question from 0.5 s after it starts (double
  talk, "mm-hmm, yes, I see"): the interviewer's captions must keep their cadence.

The replies are statements, never questions, so any request written for them is a bug.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.audio.frames import SAMPLE_RATE
from devtools.bench.corpus import Clip, read_audio
from devtools.bench.synth import speak, write_wav

VARIANTS = ("off", "reply", "echo", "overlap")
REPLIES = (
    "Yes, for about three years at my last job.",
    "Mostly Python, and some Go for the services.",
    "We cut the latency by half.",
    "I see, that makes sense.",
    "I led a team of five engineers.",
    "Right, I remember that project well.",
)
VOICE = "espeak:en-us+f3"
REPLY_AFTER_S = 0.6
OVERLAP_AFTER_S = 0.5
ECHO_DB = -10.0
ECHO_DELAY_S = 0.040


@dataclass(frozen=True)
class Track:
    path: Path
    reply: str
    start_s: float
    end_s: float
    """Where the candidate's own speech lies on the clip's clock."""


def build(clip: Clip, variant: str, index: int, folder: Path) -> Track | None:
    """The candidate's track for ``clip`` (same length and clock), None for ``off``."""
    if variant == "off":
        return None
    reply = REPLIES[index % len(REPLIES)]
    theirs = read_audio(clip.path).astype(np.float64)
    said = speak(reply, VOICE, rate_wpm=175)
    overlap = variant == "overlap"
    start = clip.speech_start_s + OVERLAP_AFTER_S if overlap else clip.speech_end_s + REPLY_AFTER_S
    at = round(start * SAMPLE_RATE)
    track = np.zeros(max(len(theirs), at + len(said)), dtype=np.float64)
    track[at:at + len(said)] += said
    if variant == "echo":
        delay = round(ECHO_DELAY_S * SAMPLE_RATE)
        track[delay:delay + len(theirs)] += theirs[: len(track) - delay] * 10 ** (ECHO_DB / 20)
    path = folder / f"{clip.path.stem}-{variant}.wav"
    write_wav(path, track)
    return Track(path, reply, start, start + len(said) / SAMPLE_RATE)
