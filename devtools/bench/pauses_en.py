"""An English pause set on flite's voices: interview questions with pauses inside them.

``dev-pauses`` is spoken by espeak-ng alone, so what it says about a pause may be about
espeak-ng's prosody.  This writes a corpus in its format (WAVs + ``manifest.json`` with
``pauses``) from 28 English questions written for it, none of them a sentence of a dev
corpus, of the held-out set or of the end-of-turn head's training texts, spoken by flite:
another synthesizer, with its own voices (:data:`VOICES`).  The pauses are of the kinds
``pauses_zh`` has, in its proportions: after an unfinished clause, after a filler (um, uh,
you know), between the items of a list, after a preamble (a statement, then the question),
after a finished question that is then changed; four questions have none::

    python -m devtools.bench.pauses_en /tmp/en-pauses
    interview-copilot bench turns --pauses --corpus /tmp/en-pauses --modes product,rules

Measure on it; never tune on it.
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from devtools.bench.pause_set import Clip, write_set
from devtools.bench.synth import speak

VOICES = ("flite:slt", "flite:rms", "flite:awb", "flite:kal16", "flite:kal")
"""Every English voice flite has but ``awb_time``, which can only say the time: its three
Arctic voices, built from recordings of a woman (slt) and two men (rms; awb, a Scottish
accent), and its two diphone voices (kal16, and kal at 8 kHz: a telephone's band).  They
rotate over the questions, so each kind of pause is said by several of them."""

QUESTIONS: tuple[tuple[str | float, ...], ...] = (
    # an unfinished clause, then the rest
    ("If you had to rebuild one part of your last system,", 0.7, "which part would you pick first?"),
    ("What I would like to hear is", 0.9, "how you split a large feature into tickets."),
    ("When a pull request sits unreviewed for a week,", 1.2, "what is your next move?"),
    ("Could you sketch, at a high level, the way", 0.6, "your team ships an urgent fix?"),
    ("Which part of your job would you", 0.4, "hand to someone else if you could?"),
    ("After a big outage, who on your team", 1.0, "writes up what went wrong?"),
    # a filler, then the rest
    ("Um,", 0.8, "what got you interested in compilers?"),
    ("How did you, uh,", 0.5, "choose which tickets to take in your first week?"),
    ("What would you say is, you know,", 1.1, "the hardest bug you chased down this year?"),
    ("Is your, um,", 0.7, "current team remote or in an office?"),
    ("When you, uh,", 1.2, "get a vague bug report from a customer, what is your first step?"),
    # the items of a list
    ("Would you keep sessions in cookies,", 0.6, "in a database,", 0.4, "or in memory?"),
    ("Which matters most to you: the pay,", 0.9, "the people,", 0.5, "or the work itself?"),
    ("Do you plan your week on paper,", 1.1, "in a calendar,", 0.6, "or not at all?"),
    # a preamble (a statement), then the question
    ("Our mobile app gets a lot of crash reports.", 1.0, "How would you sort out which ones matter?"),
    ("Half of this group works from Berlin.", 1.1, "Would a nine hour time difference be hard for you?"),
    ("This job has a large hiring component.", 0.8, "How many interviews have you run yourself?"),
    ("We had two outages last month.", 1.2, "What would you put in place so it stops?"),
    ("I read your blog post on caching.", 0.5, "What made you write it?"),
    ("The first project here is a search feature.", 0.9, "Where would you begin?"),
    # a finished question, then a change or a rider
    ("Do you enjoy debugging?", 0.7, "Or is it a chore for you?"),
    ("What is your favourite language?", 1.0, "For back end work, that is."),
    ("How big was your last team?", 0.4, "Counting the designers."),
    ("Have you ever led a migration?", 0.8, "A database one, ideally."),
    # none
    ("Which book changed the way you write code?",),
    ("How do you keep a long project from drifting?",),
    ("What kind of work drains your energy the fastest?",),
    ("Why did you move from research into industry?",),
)
"""Each question: its parts, with the pause (s) between them; the whole text is the parts
joined by spaces.  Pauses of 0.4-1.2 s, three of each tenth (``dev-pauses`` has 0.4-1.1 s)."""


def build(out: Path) -> None:
    clips = []
    for number, parts in enumerate(QUESTIONS):
        voice = VOICES[number % len(VOICES)]
        clips.append(Clip(parts, voice, partial(speak, voice=voice)))
    write_set(out, clips)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    build(parser.parse_args().out)


if __name__ == "__main__":
    main()
