"""A candidate's name the decoder nearly wrote, mended where the audio agrees.

Steering (:mod:`app.asr.glossary`) and the beam (decision 0035) make a résumé's names
likely, yet the model still prefers its own spelling of some on some voices: "posters,
QL" for PostgreSQL, "Deadbism" for Debezium.  The sentence with the term then scores a
little lower on the same audio, by less than a name the interview is known to use
should lose by.  So the words of record are checked once more: a span the text nominates
is mended only where the audio agrees.  Design notes: decision 0039.
"""

from __future__ import annotations

import functools
import gzip
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from importlib.resources import files

from app.core.text import has_cjk, says, words

log = logging.getLogger(__name__)

BONUS_PER_PIECE = 2.0
"""Log-probability (nats) a term's sentence may lose by, per token of the term: the
reward contextual biasing gives each token of a biasing phrase in beam search (icefall's
default ``--context-score`` 2; sherpa-onnx's hotwords 1.5).  The résumé is evidence the
interview names its terms; the audio has to come within that of saying so."""
HEARD_LOG_PROB = -1.0
"""Mean log-probability a token the sentence with the term needs: Whisper's own
``log_prob_threshold`` for a transcript worth keeping (over silence or room tone every
sentence scores -4 to -8 a token)."""
MIN_LIKENESS = 0.5
"""How alike (difflib ratio of the letters) a span must be to a term to be scored: a
nomination only, generous so "Datasium" reaches "Debezium"; the audio decides."""
MAX_CANDIDATES = 4
"""Spans scored per pass at most (beside the pass's own words): the likest."""
_EXTRA_WORDS = 2
"""A mishearing may take up to two words more than the term ("posters, QL" for one)."""
_WORD = re.compile(r"\S+")
_PART = re.compile(r"[^\W_]+")
_NOT_LETTERS = re.compile(r"[\W_]+")
_TAIL = re.compile(r"[.,;:!?]+$")


@dataclass(frozen=True, slots=True)
class NearMiss:
    start: int
    end: int
    """Word indexes ``[start, end)`` of the text's words."""
    term: str
    likeness: float


Pieces = Callable[[str], int]
"""How many tokens the decoder writes a word or term in (after a space)."""
Scores = Callable[[list[str], list[str]], list[list[float]]]
"""Each sentence's token log-probabilities on the pass's audio, the decoder prompted with
these terms (the ones nominated)."""


def near_misses(text: str, terms: Sequence[str], pieces: Pieces) -> list[NearMiss]:
    """The spans of ``text`` worth scoring against a term it does not already say: per
    term, its likest span that holds a word nobody writes (see the module)."""
    english = english_words()
    if english is None:
        return []
    tokens = _WORD.findall(text)
    said = words(text)
    term_words = {w for t in terms for w in words(t)}
    unknown = [_nobody_writes(t, english, term_words, pieces) for t in tokens]
    if not any(unknown):
        return []
    letters = [_letters(t) for t in tokens]
    matcher = SequenceMatcher(autojunk=False)
    found: list[NearMiss] = []
    for term in terms:
        target, seq = _letters(term), words(term)
        if has_cjk(term) or len(target) < 3 or says(said, seq):
            continue
        matcher.set_seq2(target)  # difflib caches what it learns of the second sequence
        best: NearMiss | None = None
        for start in range(len(tokens)):
            for end in range(start + 1, min(len(tokens), start + len(seq) + _EXTRA_WORDS) + 1):
                if not any(unknown[start:end]):
                    continue
                span = "".join(letters[start:end])
                if target in span:  # "terraforming": the term was heard, and more
                    continue
                matcher.set_seq1(span)
                # the cheap upper bounds first: most spans are nothing like the term
                if matcher.real_quick_ratio() < MIN_LIKENESS or matcher.quick_ratio() < MIN_LIKENESS:
                    continue
                likeness = matcher.ratio()
                # on a tie the fewer words: "Postbezium", not "use Postbezium"
                if likeness >= MIN_LIKENESS and (best is None or (likeness, start - end)
                                                 > (best.likeness, best.start - best.end)):
                    best = NearMiss(start, end, term, likeness)
        if best is not None:
            found.append(best)
    return sorted(found, key=lambda m: -m.likeness)[:MAX_CANDIDATES]


def mend(text: str, terms: Sequence[str], pieces: Pieces, scores: Scores) -> str:
    """``text`` with each near-miss the audio supports replaced by its term (see the
    module); ``text`` itself when nothing is nominated or nothing wins."""
    misses = near_misses(text, terms, pieces)
    if not misses:
        return text
    tokens = _WORD.findall(text)
    nominated = list(dict.fromkeys(m.term for m in misses))
    scored = scores([text, *(replaced(tokens, [m]) for m in misses)], nominated)
    own = sum(scored[0])
    margins = [(sum(s) - own + BONUS_PER_PIECE * pieces(m.term), m)
               for m, s in zip(misses, scored[1:], strict=True)
               if sum(s) / max(1, len(s)) >= HEARD_LOG_PROB]
    accepted: list[NearMiss] = []
    for margin, miss in sorted(margins, key=lambda p: -p[0]):
        if margin >= 0 and all(miss.end <= a.start or miss.start >= a.end for a in accepted):
            accepted.append(miss)
    return replaced(tokens, accepted) if accepted else text


def replaced(tokens: list[str], misses: list[NearMiss]) -> str:
    """The words with each span replaced by its term, keeping the span's closing
    punctuation ("Deadbism?" -> "Debezium?")."""
    out: list[str] = []
    at = 0
    for miss in sorted(misses, key=lambda m: m.start):
        out.extend(tokens[at: miss.start])
        tail = _TAIL.search(tokens[miss.end - 1])
        out.append(miss.term + (tail.group() if tail else ""))
        at = miss.end
    out.extend(tokens[at:])
    return " ".join(out)


@functools.cache
def english_words() -> frozenset[str] | None:
    """The English words people write: pyspellchecker's list (160,000 words and names
    counted in OpenSubtitles, lower case), read once a process (a tenth of a second).
    None when it cannot be read (a damaged install, which the self-test names): then
    nothing is nominated, and the words stay as the search wrote them."""
    try:
        with gzip.open(str(files("spellchecker") / "resources" / "en.json.gz"), "rt", encoding="utf-8") as f:
            return frozenset(json.load(f))
    except (ImportError, OSError, EOFError, ValueError) as exc:
        log.warning("the English word list cannot be read (%s): names are not mended", exc)
        return None


def _nobody_writes(token: str, english: frozenset[str], term_words: set[str], pieces: Pieces) -> bool:
    """Does this written word hold a part nobody writes ("Deadbism", "QL"): not an
    English word, not a word of a term ("Grafana" said right), spelt from pieces?"""
    return any(part.lower() not in english and part.lower() not in term_words and pieces(part) > 1
               for part in _PART.findall(token))


def _letters(text: str) -> str:
    return _NOT_LETTERS.sub("", text.lower())
