"""Near-miss re-scoring of a final against the glossary: measured by ``bench glossary``,
not shipped (docs/decisions/0018: at the 128-token budget it corrected no name the
steering had not, and it adds 240-280 ms to a final).

**Near-misses.**  Greedy decoding picks each token on its own, and a name the prompt did
not save comes out as a run of ordinary words ("Post-Germescue L").  :func:`rescue_terms`
finds spans of a final that look like a glossary term (letters alike: this only
*nominates*), writes the final with the term instead, and scores both sentences with the
same decoder on the same audio, *without* the glossary in the prompt, so the audio, not
the list, decides.  The term replaces the span only when

* its sentence scores at least as well as the one the decoder wrote (margin 0: the decoder
  preferred its own words token by token, so a whole sentence with the term that is no
  less likely is what a wider search would have written), and
* the sentence with the term is one Whisper would keep: its mean log-probability a token
  is at least Whisper's ``log_prob_threshold`` (-1), the line between a transcript and a
  guess.  Over silence or room tone every sentence scores far below it (-4 to -8 a
  token), so nothing is written over them whatever the comparison says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np
import numpy.typing as npt

from app.asr.prior import Scorer
from app.core.text import has_cjk

HEARD_LOG_PROB = -1.0
"""Mean log-probability a token the sentence with the term needs: Whisper's own
``log_prob_threshold`` for a transcript worth keeping."""
MIN_LIKENESS = 0.5
"""How alike (difflib ratio of the letters) a span must be to a term to be re-scored: a
nomination only, generous so "cube it" reaches "Kubernetes"; the audio then decides."""
MAX_CANDIDATES = 8
"""Spans re-scored per final at most (one batch): the best-matching ones."""
_EXTRA_WORDS = 2
"""A mishearing may take up to two words more than the term ("Kilburn Eats" for one)."""
_ROUNDS = 2
_WORD = re.compile(r"\S+")
_LETTERS = re.compile(r"[^a-z0-9]")



@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    """Word indexes ``[start, end)`` of the final's words."""
    term: str
    likeness: float


def near_misses(text: str, terms: tuple[str, ...] | list[str]) -> list[_Span]:
    """Spans of ``text`` whose letters resemble a term the text does not already contain,
    the best span per term, best first (at most :data:`MAX_CANDIDATES`)."""
    tokens = _WORD.findall(text)
    letters = [_letters(t) for t in tokens]
    written = "".join(letters)
    found: list[_Span] = []
    matcher = SequenceMatcher(autojunk=False)
    for term in terms:
        target = _letters(term)
        if has_cjk(term) or len(target) < 3 or target in written:
            continue
        matcher.set_seq2(target)  # difflib caches what it learns of the second sequence
        width = len(term.split()) + _EXTRA_WORDS
        best: _Span | None = None
        for start in range(len(tokens)):
            for end in range(start + 1, min(len(tokens), start + width) + 1):
                said = "".join(letters[start:end])
                if not said:
                    continue
                matcher.set_seq1(said)
                # the cheap upper bounds first: most spans are nothing like the term
                if matcher.real_quick_ratio() < MIN_LIKENESS or matcher.quick_ratio() < MIN_LIKENESS:
                    continue
                likeness = matcher.ratio()
                if likeness >= MIN_LIKENESS and (best is None or likeness > best.likeness):
                    best = _Span(start, end, term, likeness)
        if best is not None:
            found.append(best)
    return sorted(found, key=lambda s: -s.likeness)[:MAX_CANDIDATES]


def rescue_terms(scorer: Scorer, audio: npt.NDArray[np.int16] | npt.NDArray[np.float32], text: str,
                 language: str = "en") -> str:
    """``text`` with each near-miss of a glossary term replaced by the term, where the
    audio supports the term (see the module docstring); else ``text`` unchanged.

    Two rounds at most: a second misheard name in the sentence lowers the score of every
    sentence that keeps it, so a term that lost beside it is weighed again once the first
    is written ("post-gorescuel to cube it" -> "PostgreSQL to cube it" -> "… Kubernetes")."""
    if not text or language != "en" or not scorer.terms:
        return text
    for _ in range(_ROUNDS):
        spans = near_misses(text, scorer.terms)
        if not spans:
            break
        tokens = _WORD.findall(text)
        options = [_replace(tokens, [s]) for s in spans]
        scores = scorer.token_log_probs(audio, [text, *options], language=language, steered=False)
        original = sum(scores[0])
        accepted: list[_Span] = []
        for span, score in sorted(zip(spans, scores[1:], strict=True), key=lambda p: -sum(p[1])):
            if sum(score) < original or sum(score) / max(1, len(score)) < HEARD_LOG_PROB:
                continue
            if all(span.end <= a.start or span.start >= a.end for a in accepted):
                accepted.append(span)
        if not accepted:
            break
        text = _replace(tokens, accepted)
    return text


def _replace(tokens: list[str], spans: list[_Span]) -> str:
    """The words with each span's words replaced by its term, keeping the span's trailing
    punctuation ("cube it?" -> "Kubernetes?")."""
    out: list[str] = []
    at = 0
    for span in sorted(spans, key=lambda s: s.start):
        out.extend(tokens[at: span.start])
        tail = re.search(r"[.,;:!?]+$", tokens[span.end - 1])
        out.append(span.term + (tail.group() if tail else ""))
        at = span.end
    out.extend(tokens[at:])
    return " ".join(out)


def _letters(text: str) -> str:
    return _LETTERS.sub("", text.lower())
