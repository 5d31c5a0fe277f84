"""Is the final question the one the speculative answer was written for?

The product's rule is exact: the same words once case, punctuation, filler words and
trailing tags are set aside (:func:`app.core.text.question_key`).  The user's original rule,
``ratio(final, partial) >= 0.92``, kept wrong answers: "should I take the job" vs
"should I not take the job" scores 0.93; it lives on as the benchmark's ``user-fixes``
baseline (``devtools/bench/baselines.py``), which passes its own rule to the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rapidfuzz import fuzz

from app.core.text import Tags, question_key


@dataclass(frozen=True, slots=True)
class Verdict:
    same: bool
    similarity: float
    """rapidfuzz ratio of the normalised texts, 0..1 (reported whatever the rule)."""


class ReuseRule(Protocol):
    """Decides whether the answer written for ``sent`` answers ``final`` too."""

    def __call__(self, sent: str, final: str, *, fillers: frozenset[str], tags: Tags) -> Verdict: ...


def similarity(a: list[str] | tuple[str, ...], b: list[str] | tuple[str, ...]) -> float:
    """rapidfuzz ratio of two word sequences, 0..1: what the speculation event reports."""
    return fuzz.ratio(" ".join(a), " ".join(b)) / 100.0


def exact(sent: str, final: str, *, fillers: frozenset[str] = frozenset(), tags: Tags = ()) -> Verdict:
    """The product's rule: the same question key, nothing less."""
    a, b = question_key(sent, fillers, tags), question_key(final, fillers, tags)
    return Verdict(a == b, similarity(a, b))
