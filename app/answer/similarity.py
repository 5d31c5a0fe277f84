"""Is the final question the one the speculative answer was written for?

The user's original rule, ``ratio(final, partial) >= 0.92``, keeps wrong answers:
"should I take the job" vs "should I not take the job" scores 0.93.  The default rule
here is exact: the same words once case, punctuation and filler words are ignored.
The fuzzy rule is an opt-in, and even then any change that touches negation, a number
or adds a clause forces a new request.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from rapidfuzz import fuzz

from app.text import Tags, question_key

ReuseRule = Literal["exact", "fuzzy", "fuzzy_unguarded"]

NEGATIONS = frozenset({
    "not", "no", "never", "none", "nor", "nobody", "nothing", "neither", "without", "cannot",
    "can't", "don't", "doesn't", "didn't", "won't", "wouldn't", "isn't", "aren't", "wasn't",
    "weren't", "shouldn't", "couldn't", "haven't", "hasn't", "hadn't", "mustn't",
    "不", "没", "没有", "别", "无", "非", "未",
})
CLAUSE_WORDS = frozenset({
    "and", "but", "or", "because", "if", "when", "why", "how", "what", "which", "where", "who",
    "while", "although", "unless", "so", "then", "also", "而且", "但是", "因为", "如果", "为什么", "怎么",
})
NUMBER_WORDS = frozenset({
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "million",
    "billion", "first", "second", "third", "half", "double", "twice",
})


@dataclass(frozen=True, slots=True)
class Verdict:
    same: bool
    similarity: float
    """rapidfuzz ratio of the normalised texts, 0..1 (reported whatever the rule)."""


def compare(sent: str, final: str, rule: ReuseRule = "exact", *, threshold: float = 0.92,
            fillers: frozenset[str] = frozenset(), tags: Tags = ()) -> Verdict:
    a, b = list(question_key(sent, fillers, tags)), list(question_key(final, fillers, tags))
    similarity = fuzz.ratio(" ".join(a), " ".join(b)) / 100.0
    if rule == "exact":
        return Verdict(a == b, similarity)
    if similarity < threshold:
        return Verdict(False, similarity)
    if rule == "fuzzy_unguarded":
        return Verdict(True, similarity)
    return Verdict(not _meaning_changed(a, b), similarity)


def _meaning_changed(a: list[str], b: list[str]) -> bool:
    """A negation, a number or a clause appeared, vanished or was replaced."""
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        touched = a[i1:i2] + b[j1:j2]
        if any(_is_sensitive(w) for w in touched):
            return True
        if op == "insert" and j2 - j1 >= 2:
            return True
    return False


def _is_sensitive(word: str) -> bool:
    return (word in NEGATIONS or word.endswith("n't") or word in CLAUSE_WORDS
            or word in NUMBER_WORDS or any(ch.isdigit() for ch in word))
