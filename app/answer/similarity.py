"""Is the final question the one the speculative answer was written for?

The user's original rule, ``ratio(final, partial) >= 0.92``, keeps wrong answers:
"should I take the job" vs "should I not take the job" scores 0.93.  The default rule
here is exact: the same words once case, punctuation and filler words are ignored.
The fuzzy rule is an opt-in, and even then any change that touches negation, a number
or adds a clause forces a new request.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from rapidfuzz import fuzz

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


def words(text: str, fillers: frozenset[str] = frozenset()) -> list[str]:
    """Lower-case words without punctuation or filler; CJK characters count as words."""
    text = unicodedata.normalize("NFKC", text).lower()
    spaced = re.sub(r"([\u3400-\u9fff\uf900-\ufaff])", r" \1 ", text)
    tokens = [re.sub(r"[^\w']+", "", w).strip("'") for w in spaced.split()]
    return [t for t in tokens if t and t not in fillers]


Tags = tuple[tuple[str, ...], ...]
"""Trailing tags ("right?", "you know", 对吧) as word sequences: they ask for agreement
and change no question."""


def tags_of(phrases: list[str]) -> Tags:
    """The word sequences of tag phrases, longest first (so "is that right" wins over "right")."""
    seqs = {tuple(words(p)) for p in phrases}
    return tuple(sorted((s for s in seqs if s), key=len, reverse=True))


def without_tags(ws: list[str], tags: Tags) -> list[str]:
    """``ws`` without the tags it ends with (a question is never only a tag)."""
    stripped = True
    while stripped:
        stripped = False
        for tag in tags:
            if len(ws) > len(tag) and tuple(ws[-len(tag):]) == tag:
                ws, stripped = ws[: -len(tag)], True
                break
    return ws


def compare(sent: str, final: str, rule: ReuseRule = "exact", *, threshold: float = 0.92,
            fillers: frozenset[str] = frozenset(), tags: Tags = ()) -> Verdict:
    a, b = without_tags(words(sent, fillers), tags), without_tags(words(final, fillers), tags)
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
