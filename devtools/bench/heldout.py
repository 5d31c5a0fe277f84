"""A held-out corpus: questions, voices and a synthesizer the dev corpora never used.

The product is judged on voices and questions nobody tuned it on; the dev corpora are
espeak-ng only.  This writes a corpus in their format (WAVs + ``manifest.json``) from 28
new interview questions spoken by flite's four English voices and eleven espeak-ng variants,
four of them going on after a 0.5 s pause ("Have you ever worked with Kubernetes? … I mean
in production, not just tutorials."), optionally over pink room tone::

    python -m devtools.bench.heldout /tmp/heldout/en
    python -m devtools.bench.heldout /tmp/heldout/en-noisy --noise-dbfs -42
    interview-copilot bench turns --corpus /tmp/heldout/en --modes rules,product

``--no-pauses`` speaks those four in one breath too, so every one of the 28 is a question
with no deliberate pause (what a set without thinking pauses measures: hits, requests per
turn, withdrawn answers that no pause explains)::

    python -m devtools.bench.heldout /tmp/heldout/en-noisy-28 --noise-dbfs -42 --no-pauses

``--over CORPUS`` puts a corpus you already have (``dev-zh``, whose one voice no other
synthesizer here speaks) in a room it never had: the same clips and manifest over pink
room tone::

    python -m devtools.bench.heldout /tmp/heldout/zh-noisy --noise-dbfs -42 --over ../shared/corpus/dev-zh

Measure on it; never tune on it (then it is no longer held out).
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path

import numpy as np

from app.audio.frames import SAMPLE_RATE
from devtools.bench.corpus import read_audio
from devtools.bench.pause_set import Audio, Clip, write_set
from devtools.bench.synth import pink_noise, speak, write_wav

QUESTIONS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("What made you choose software engineering as a career?",), "flite:slt"),
    (("How do you handle feedback that you disagree with?",), "flite:rms"),
    (("Walk me through how you would design a rate limiter.",), "flite:awb"),
    (("What is the difference between a stack and a queue?",), "flite:kal16"),
    (("Tell me about a project that failed,", "and what you learned from it."), "flite:slt"),
    (("Why are you leaving your current job?",), "espeak:en-gb+Andy"),
    (("How would you explain recursion to a new hire?",), "espeak:en-us+michael"),
    (("Describe how garbage collection works in Java.",), "flite:rms"),
    (("Have you ever worked with Kubernetes?", "I mean in production, not just tutorials."), "flite:awb"),
    (("What does your ideal team look like?",), "espeak:en+annie"),
    (("How do you estimate how long a task will take?",), "flite:kal16"),
    (("Can you tell me about a conflict on your team,", "and how it was resolved?"), "espeak:en-us+Lee"),
    (("What is a race condition and how do you prevent one?",), "flite:slt"),
    (("Do you prefer working alone or in a team?", "And why?"), "flite:rms"),
    (("Where would you start if a web page loads slowly?",), "espeak:en-gb-x-rp+Mr serious"),
    (("What are you most proud of in your last role?",), "flite:awb"),
    # 17-28 (added for issue 45): one breath each; flite's voices and six new espeak-ng variants
    (("How do you decide when a piece of code needs a refactor?",), "flite:kal16"),
    (("What is the difference between TCP and UDP?",), "espeak:en-us+f2"),
    (("Tell me about a time you missed a deadline.",), "flite:slt"),
    (("How would you find a memory leak in a running service?",), "espeak:en-gb-scotland+m3"),
    (("What does a good code review look like to you?",), "flite:rms"),
    (("Why did you pick Python for your last project?",), "espeak:en-029+m1"),
    (("How do you test code that talks to a database?",), "flite:awb"),
    (("What would you change about your current team's process?",), "espeak:en-us-nyc+f4"),
    (("How do indexes make a database query faster?",), "flite:kal16"),
    (("Which of your skills would you most like to improve?",), "espeak:en-gb-x-gbclan+m2"),
    (("How do you handle a production incident at night?",), "flite:slt"),
    (("What questions do you ask before starting a new feature?",), "espeak:en-gb-x-gbcwmd+f1"),
)
PAUSE_S = 0.5
"""Inside a question that goes on (within the dev-traps range of 0.4-0.7 s)."""


def build(out: Path, noise_dbfs: float | None = None, *, pauses_within: bool = True) -> None:
    """``pauses_within`` False: a question in several parts is said in one breath."""
    clips = []
    for said_in, voice in QUESTIONS:
        texts = said_in if pauses_within else (" ".join(said_in),)
        parts = [piece for text in texts for piece in (PAUSE_S, text)][1:]
        clips.append(Clip(parts, voice, partial(speak, voice=voice)))
    room = None if noise_dbfs is None else partial(_with_room_tone, noise_dbfs=noise_dbfs)
    write_set(out, clips, room=room)


def over_room_tone(source: Path, out: Path, noise_dbfs: float) -> None:
    """``source``'s clips over pink room tone, with its manifest (seeds of their own, so
    no clip shares its tone with a held-out question)."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((source / "manifest.json").read_text(encoding="utf-8"))
    for number, clip in enumerate(manifest, 1):
        audio = read_audio(source / clip["file"]).astype(np.float64)
        write_wav(out / clip["file"], _with_room_tone(audio, 100 + number, noise_dbfs))
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"{len(manifest)} clips of {source} over room tone written to {out}")


def _with_room_tone(audio: Audio, seed: int, noise_dbfs: float) -> Audio:
    return audio + pink_noise(len(audio) / SAMPLE_RATE + 1, noise_dbfs, seed=seed)[: len(audio)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--noise-dbfs", type=float, default=None, help="pink room tone at this RMS level")
    parser.add_argument("--no-pauses", action="store_true",
                        help="say every question in one breath (no deliberate pause inside any)")
    parser.add_argument("--over", type=Path, default=None, metavar="CORPUS",
                        help="this corpus over room tone instead of the held-out questions "
                             "(needs --noise-dbfs)")
    args = parser.parse_args()
    if args.over is None:
        build(args.out, args.noise_dbfs, pauses_within=not args.no_pauses)
    elif args.noise_dbfs is None:
        parser.error("--over needs --noise-dbfs")
    else:
        over_room_tone(args.over, args.out, args.noise_dbfs)


if __name__ == "__main__":
    main()
