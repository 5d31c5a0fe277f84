"""The names an interview will use, picked from the candidate's own papers, to steer Whisper.

A question about "CockroachDB" or "Nomad to Kubernetes" is the one the recogniser gets
wrong (three unrelated words, a different tool) and the one whose answer matters.
Whisper continues the text it is prompted with, so a prompt naming those terms makes
their spelling the likely one (faster-whisper's ``hotwords`` is the same mechanism: text
before the transcript).  The terms come from the résumé, the job description and the
user's glossary (``[asr] glossary``); this module only reads plain text, so the
recogniser never depends on how the documents were loaded.

Bounded on purpose: every prompt token is decoder work on every pass, and a long list of
words is what a model says back over audio it cannot make out.  So at most
:data:`MAX_TERMS` terms within :data:`MAX_PIECES` tokens, chosen by rarity:

* **shape** says a word is a name: mixed case or an inner capital (CockroachDB, ArgoCD,
  gRPC), letters with digits (k8s, EC2), an acronym (SRE), inner punctuation (Node.js,
  C++), or a capitalised word that is not the first of its line or sentence and never
  appears in lower case in the documents (Nomad, Kubernetes, not "Senior" as a title
  word the text also uses in lower case); one that only opens lines or sentences must be
  rare to the model in lower case too ("Lumenpay — Platform Engineer", not "Led the…").
  In Chinese, a run the text sets apart as a name: a list item ("技能：分布式事务、灰度发布"),
  quoted or bracketed ("“星澜支付”"), or short between spaces ("2019 鲸跃科技 工程师").
* **rarity to the model**: how many pieces the recogniser's own tokenizer cuts the term
  into, per word (each Chinese character a word).  A word Whisper writes in one piece
  ("Python", "Google") it already spells; one it must assemble from three ("Cock" "roach"
  "DB") it rarely will unaided.  A term needing no more pieces than words is dropped.
  (Whisper's byte-level pieces cannot tell a rare Chinese word from a common one, a
  common character taking two already: for Chinese, being set apart is the evidence.)
  Ranked by pieces (capped at 4: past that, length is not rarity), then by how often the
  documents use it, then by where it first appears.

The user's glossary comes first, whole and in its order: the user chose those terms.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.core.text import has_cjk, words

MAX_TERMS = 24
"""A few dozen names cover a résumé and a job description; the token budget below is
usually what binds (decision 0018)."""
MAX_PIECES = 64
"""Token budget of the whole list, the cost every pass pays (decoder prefill): a longer
prompt slowed Chinese passes on the base model (a Chinese character takes about two
tokens) without hearing more names, and English terms fit well within it (figures:
decision 0018, ``bench glossary``)."""
MAX_TERM_CHARS = 40
"""A glossary entry longer than this is a sentence, not a term: cut."""
_MIN_RARITY = 1.0
"""A term is kept when it needs more pieces than it has words (rarity above 1)."""

_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[.+#'\-][A-Za-z0-9]+)*[+#]*")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]{2,8}")
_OPENERS = frozenset("、；;：:|/（(《「『“")
_CLOSERS = frozenset("、；;|/）)》」』”。")
_BULLETS = re.compile(r"^[\s#>*\-•·–—]*")
_SPACED_CHARS = 4
"""A name set apart by spaces is short (鲸跃科技, 天枢); a longer spaced run is a phrase."""
_LINE_START = re.compile(r"^[\s#>*\-•·–—\d.)(\[\]]*")
_ADDRESSES = re.compile(r"\S+@\S+|(?:https?://|www\.)\S+")
"""E-mail and web addresses: nobody says them in a question."""
_SENTENCE_END = re.compile(r"[.!?。！？]\s+$")

Pieces = Callable[[str], int]
"""How many tokens the recogniser needs to write a term (after a space)."""


def rough_pieces(term: str) -> int:
    """A tokenizer-free estimate, for callers without a model: ~4 characters a piece for
    Latin (GPT-2's byte-pair average on English), one piece a Chinese character."""
    return sum(1 if has_cjk(w) else max(1, round(len(w) / 4)) for w in words(term)) or 1


@dataclass
class _Candidate:
    term: str
    first: int
    count: int = 1
    opening_only: bool = False
    """Capitalised only where any word is (a line's or sentence's first): a name only if
    Whisper finds it rare in lower case too ("Lumenpay", not "Led")."""


def pick_terms(documents: Iterable[str | None], glossary: Iterable[str] = (), *,
               pieces: Pieces = rough_pieces, limit: int = MAX_TERMS,
               budget: int = MAX_PIECES) -> list[str]:
    """The terms to steer the recogniser with: the user's ``glossary`` first, then the
    rarest names of ``documents`` (résumé, job description), within ``limit`` terms and
    ``budget`` tokens (as ``pieces`` counts them)."""
    chosen: list[str] = []
    seen: set[str] = set()
    spent = 0

    def take(term: str) -> None:
        nonlocal spent
        key = term.casefold()
        cost = pieces(term) + 1  # the separator
        if key in seen or len(chosen) >= limit or spent + cost > budget:
            return
        seen.add(key)
        chosen.append(term)
        spent += cost

    for entry in glossary:
        term = " ".join(entry.split())[:MAX_TERM_CHARS].strip(" ,;、，；")
        if term:
            take(term)
    ranked = sorted(_candidates([d for d in documents if d]).values(),
                    key=lambda c: (-min(_rarity(c.term, pieces), 4.0), -c.count, c.first))
    for candidate in ranked:
        rare = _rarity(candidate.term, pieces) > _MIN_RARITY
        if rare and (not candidate.opening_only or _rarity(candidate.term.lower(), pieces) > _MIN_RARITY):
            take(candidate.term)
    return chosen


def _rarity(term: str, pieces: Pieces) -> float:
    return pieces(term) / max(1, len(words(term)))


def _candidates(documents: list[str]) -> dict[str, _Candidate]:
    """Name-shaped words and Chinese list items, keyed case-insensitively (the first
    spelling wins), with how often they occur."""
    text = _ADDRESSES.sub(" ", "\n".join(documents))
    lower = {m.group() for m in _LATIN.finditer(text) if m.group().islower()}
    found: dict[str, _Candidate] = {}
    position = 0
    for line in text.splitlines():
        start = _LINE_START.match(line)
        opening = start.end() if start else 0
        for m in _LATIN.finditer(line):
            word = m.group()
            initial = m.start() <= opening or bool(_SENTENCE_END.search(line[: m.start()]))
            if _name_shaped(word, False, lower):
                opening_only = initial and not _name_shaped(word, True, lower)
                _count(found, word, position + m.start(), opening_only=opening_only)
        for m in _CJK_RUN.finditer(line):
            if _set_apart(line, m.start(), m.end()):
                _count(found, m.group(), position + m.start())
        position += len(line) + 1
    return found


def _name_shaped(word: str, initial: bool, lower: set[str]) -> bool:
    letters = [c for c in word if c.isalpha()]
    if len(letters) < 2 and not any(c in "+#" for c in word):
        return False  # "C", "R", "p99": too short to steer anything but noise
    if any(c.isdigit() for c in word) or any(c in ".+#" for c in word):
        return True
    if any(c.isupper() for c in word[1:]) and any(c.islower() for c in word):
        return True  # CockroachDB, gRPC, iOS
    if word.isupper():
        return True  # an acronym
    return word[0].isupper() and not initial and word.lower() not in lower


def _set_apart(line: str, start: int, end: int) -> bool:
    """Is the Chinese run ``line[start:end]`` a whole item, set apart as a name is?

    A list item ("技能：分布式事务、灰度发布"), a quoted or bracketed one ("“天枢”"), or a
    short run (2-4 characters) between spaces in Chinese ("2019-2024 鲸跃科技 后端工程师",
    "负责 天枢 的…").  Not a clause between commas, not a heading or a bullet's first words
    ("技能：", "- 负责…"), not a run beside a Latin word ("MySQL 迁移到": that space is the
    Latin word's).
    """
    bullets = _BULLETS.match(line)
    opening = bullets.end() if bullets else 0
    before = line[start - 1] if start > opening else ""
    after = line[end] if end < len(line) else ""
    if before in _OPENERS and (not after or after in _CLOSERS):
        return True
    if start == opening:
        return after == "、"  # a list that opens its line
    if end - start > _SPACED_CHARS or before != " " or (after and after != " "):
        return False
    left = line[:start].rstrip(" ")[-1:]
    right = line[end:].lstrip(" ")[:1]
    return not (left.isascii() and left.isalpha()) and not (right.isascii() and right.isalpha())


def _count(found: dict[str, _Candidate], term: str, at: int, *, opening_only: bool = False) -> None:
    key = term.casefold()
    if key in found:
        found[key].count += 1
        found[key].opening_only &= opening_only
    else:
        found[key] = _Candidate(term, at, opening_only=opening_only)


def prompt_text(terms: list[str], *, chinese: bool = False) -> str:
    """The terms as the text Whisper is prompted with: a plain list, the way a transcript
    would name them ("CockroachDB, ArgoCD, Kubernetes.").  In Chinese "、" between them and
    "，" after, so the script prompt that follows closes the one sentence: a list closed
    with its own "。" made Whisper end more questions with "。" instead of "？", and hear
    them a little worse (figures: decision 0018)."""
    if not terms:
        return ""
    return ("、".join(terms) + "，") if chinese else (", ".join(terms) + ".")
