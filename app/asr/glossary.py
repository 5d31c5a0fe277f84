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
:data:`MAX_TERMS` terms within :data:`MAX_PIECES` tokens, chosen by need (a name's
shape, how unlikely the recogniser finds it; the user's glossary first).  Design notes:
decision 0039.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.core.text import has_cjk, words

MAX_TERMS = 64
"""A candidate's stack is a few dozen names; the token budget below is what binds."""
MAX_PIECES = 128
"""Token budget of the whole list, the cost every pass pays (decoder prefill: about 0.2 ms
of CPU a token on tiny.en, so 128 tokens cost a pass 15-19 % more CPU, within the 1.2x
a partial pass may grow).  It holds all of a résumé's everyday stack (40 names here)
but the few the model writes unaided (Kafka, MySQL, Go); 64 left out names it mishears
(Vault, Helm, Airflow, Terraform).  With the 16 the decoder keeps for separators
and the Chinese script prompt (about 20) after it, the prompt stays under Whisper's 223
(figures: decision 0018, ``bench glossary --budgets``)."""
MAX_SCORED = 120
"""Candidates the model's prior is asked about at most (the rarest by pieces first):
bounds the time at load (one batch, a few seconds for 200 on a shared 2-core machine)."""
MAX_TERM_CHARS = 40
"""A glossary entry longer than this is a sentence, not a term: cut."""
_MIN_RARITY = 1.0
"""A term is kept when it needs more pieces than it has words (rarity above 1)."""

_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[.+#'\-][A-Za-z0-9]+)*[+#]*")
_JOINED = re.compile(r"(?<![\w.])[A-Z][A-Za-z0-9]* [A-Z][A-Za-z0-9]*(?!\w|\.\w)")
"""Two capitalised words in a row: one name if :func:`_joined_name` says so."""
_LIST_SEPARATORS = re.compile(r"[,;|]")
_LIST_ITEMS = 4
"""A line of at least four comma-separated items is a list ("Kafka, Helm, Vault, Go")."""
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
Prior = Callable[[list[str]], list[float]]
"""The recogniser's log-probability of each term with nothing to hear (see
:func:`app.asr.prior.term_prior`): the lower, the more the term needs steering."""


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
    listed: bool = False
    """An item of a list of names (a skills line: "Kafka, Helm, Vault"): a name whatever
    its pieces, where a capitalised word in prose ("Health") may be a plain word."""


def pick_terms(documents: Iterable[str | None], glossary: Iterable[str] = (), *,
               pieces: Pieces = rough_pieces, prior: Prior | None = None, limit: int = MAX_TERMS,
               budget: int = MAX_PIECES) -> list[str]:
    """The terms to steer the recogniser with: the user's ``glossary`` first, then the
    names of ``documents`` (résumé, job description) the recogniser most needs, within
    ``limit`` terms and ``budget`` tokens (as ``pieces`` counts them).

    With ``prior`` (the model's own), need is how unlikely the model finds the term, and
    every name-shaped term is a candidate: a one-piece "Kafka" or "Helm" is misheard as
    often as a three-piece name ("hell" for Helm).  Without, the pieces proxy: a term
    needing no more pieces than words is dropped, the rest ranked by pieces."""
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
    ranked = [c for c in ranked
              if not c.opening_only or _rarity(c.term.lower(), pieces) > _MIN_RARITY]
    if prior is None:
        ranked = [c for c in ranked if _rarity(c.term, pieces) > _MIN_RARITY]
    else:
        ranked = [c for c in ranked if c.listed or _rarity(c.term, pieces) > _MIN_RARITY]
        ranked = ranked[:MAX_SCORED]
        need = dict(zip((c.term for c in ranked), prior([c.term for c in ranked]), strict=True))
        ranked.sort(key=lambda c: (need[c.term], -c.count, c.first))
    for candidate in ranked:
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
        joined = [m for m in _JOINED.finditer(line) if m.start() > opening
                  and not _SENTENCE_END.search(line[: m.start()]) and _joined_name(m.group(), lower)]
        items = {i.strip() for i in _LIST_SEPARATORS.split(line)}
        listed = len(items) >= _LIST_ITEMS
        for m in joined:
            _count(found, " ".join(m.group().split()), position + m.start(), listed=listed)
        for m in _LATIN.finditer(line):
            if any(j.start() <= m.start() < j.end() for j in joined):
                continue
            word = m.group()
            initial = m.start() <= opening or bool(_SENTENCE_END.search(line[: m.start()]))
            if _name_shaped(word, False, lower):
                opening_only = initial and not _name_shaped(word, True, lower)
                _count(found, word, position + m.start(), opening_only=opening_only,
                       listed=listed and word in items)
        for m in _CJK_RUN.finditer(line):
            if _set_apart(line, m.start(), m.end()):
                _count(found, m.group(), position + m.start())
        position += len(line) + 1
    return found


def _joined_name(run: str, lower: set[str]) -> bool:
    """Two words that name one thing: a name and a short acronym ("Argo CD", "Azure AD"),
    or two name-shaped words ("GitHub Actions", "Google Cloud"), not one a name and one a
    plain word."""
    first, second = run.split()
    if second.isupper() and 2 <= len(second) <= 3 and first[0].isupper():
        return True
    return _name_shaped(first, False, lower) and _name_shaped(second, False, lower) \
        and any(c.isupper() for c in first[1:] + second[1:])


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


def _count(found: dict[str, _Candidate], term: str, at: int, *, opening_only: bool = False,
           listed: bool = False) -> None:
    key = term.casefold()
    if key in found:
        found[key].count += 1
        found[key].opening_only &= opening_only
        found[key].listed |= listed
    else:
        found[key] = _Candidate(term, at, opening_only=opening_only, listed=listed)


def prompt_text(terms: list[str], *, chinese: bool = False) -> str:
    """The terms as the text Whisper is prompted with: a plain list, the way a transcript
    would name them ("CockroachDB, ArgoCD, Kubernetes.").  In Chinese "、" between them and
    "，" after, so the script prompt that follows closes the one sentence: a list closed
    with its own "。" made Whisper end more questions with "。" instead of "？", and hear
    them a little worse (figures: decision 0018)."""
    if not terms:
        return ""
    return ("、".join(terms) + "，") if chinese else (", ".join(terms) + ".")
