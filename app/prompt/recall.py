"""Résumé recall: the lines of the candidate's documents that a question touches.

The moment a question is guessed or final, the window shows the one to three résumé or
job-description lines it is about, so the candidate sees their own facts before any
model has said a word.  No LLM is in the path: the index is BM25 over the documents'
lines, built once per session, and a question costs a few hundred microseconds.  How a
question's terms are cut (:func:`terms`), and design notes: decision 0039.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from app.core.events import Event, RecallEvent, RecallLine, RecallSource

MIN_SCORE = 0.7
"""A name found in a single line scores about 1 and a plain word common in the documents
well under half; 0.7 lies between the weakest right first line and the strongest line a
question the documents do not answer would show, so a lone common word never shows a
line (figures: decision 0019, ``bench recall``)."""
RELATIVE_FLOOR = 0.6
"""Lines after the first must reach 60 % of its score: a weak tail is noise beside it."""
MAX_LINES = 3
K1 = 1.2
B = 0.5
"""BM25's term saturation (the usual 1.2) and a gentler length damping than the usual
0.75: every unit is one line, so a long bullet is not a long document diluting a term."""
STEM_CHARS = 6
FUZZY_MIN = 86
"""rapidfuzz ratio for a misspelt term: one wrong letter in a 7-letter word (86) passes,
two (71) do not, so "postgress" finds "postgres" but "python" never finds "pytest"."""
FUZZY_MIN_LEN = 5
PLAIN_WEIGHT = 0.75
"""A lower-case English word counts three quarters of a name: "year" or "study" in one
line of the résumé is rare there but common in speech, "Kafka" or "GDPR" is rare in both."""
NAME_IDF_SHARE = 0.9
"""A name weighs at least 90 % of one found in a single line: a résumé names its tools in
a bullet, the skills list and the job description, and that makes "Kafka" no less
specific a thing to ask about."""
JOB_WEIGHT = 0.85
"""A job-description line's score is scaled by this: a question that touches one of the
candidate's own lines about as much is asked about them, and their line comes first."""
MAX_LINE_CHARS = 220
"""A longer line (a paragraph in a PDF) is split at sentences: a shown line must be
readable at a glance."""

_LATIN = re.compile(r"[a-z0-9][a-z0-9+#]*(?:[./][a-z0-9+#]+)*", re.IGNORECASE)
"""A word; "node.js" and "ci/cd" stay whole, "on-call" is two ("on call" is how it is said)."""
_CJK = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f]+"
)
_CJK_STOP = set("你我他她它们的了吗呢吧啊呀是在有和与及就都也这那么什怎哪个一下过给把被对从为着得地请说讲下")
"""Function characters (and the verbs of asking) that split a CJK run before bigramming."""
_STOP = frozenset("""
a about above after again all also am an and any are as at be been before being below
between both but by can could did do does doing done down during each else ever few for
from further get got had has have having he her here hers him his how i if in into is it
its just let like me more most my no nor not now of off on once only or other our out over
own really same she should so some such than that the their them then there these they
this those through to too under until up very was we were what when where which while who
whom why will with would you your yours yourself
tell talk walk describe explain give example time times think thing things kind sort
experience experiences worked work working job role roles used use using done make made
know want wanted would like could please say said going went get got lot something
anything one ever way ways well good great much many
""".split())
"""English function words and the words of asking about anything: they say nothing about
which line a question is about."""
_SECTIONS: dict[str, tuple[str, ...]] = {
    "education": ("study", "studied", "degree", "univer", "college", "school", "graduat", "educat"),
    "languages": ("speak", "spoken", "fluent", "languag"),
    "certifications": ("certif", "certified"),
    "awards": ("award", "prize"),
}
"""Résumé sections a question names without using a word of their lines ("where did you
study" → Education): the question word stems that point at each."""
_NAME = re.compile(
    r"(?<=[^\s(\[\"'“‘—–.!?:;-])\s+([A-Z][A-Za-z0-9+#./]*)"  # Capitalised after a word
    r"|\b([A-Za-z]+[A-Z0-9][A-Za-z0-9+#]*)\b"  # CamelCase, ACRONYM, p99
)
"""A capitalised word inside a sentence (not its first), or one with a capital or digit
inside it (CockroachDB, GDPR, p99): the names of things."""
_SECTION_TERM = "§"
_BULLET = re.compile(r"^\s*(?:[-*+•·▪◦‣]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_SENTENCES = re.compile(r"(?<=[.!?;。！？；])\s+")


@dataclass(frozen=True, slots=True)
class _Unit:
    text: str
    source: RecallSource
    terms: Counter[str]
    length: int


def terms(text: str) -> list[str]:
    """The index terms of ``text`` (see the module docstring)."""
    out: list[str] = []
    for word in _LATIN.findall(text):
        word = word.lower().strip(".-/")
        if (len(word) < 2 and not word.isdigit()) or word in _STOP:
            continue
        out.append(_stem(word))
    for run in _CJK.findall(text):
        piece = ""
        for ch in run + " ":
            if ch in _CJK_STOP or ch == " ":
                if len(piece) == 1:
                    out.append(piece)
                out += [piece[i:i + 2] for i in range(len(piece) - 1)]
                piece = ""
            else:
                piece += ch
    return out


def _stem(word: str) -> str:
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > STEM_CHARS:
        return word[:STEM_CHARS]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def split_lines(text: str) -> list[tuple[str, str | None]]:
    """The document's lines as a reader sees them, each with the résumé section it is in
    (a key of :data:`_SECTIONS`, or None): bullets without their marker, wrapped lines (a
    PDF's) joined back, headings kept as lines of their own, paragraphs cut at sentences."""
    lines: list[tuple[str, str | None]] = []
    section: str | None = None
    joinable = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            joinable = False
            continue
        is_item = bool(_BULLET.match(line))
        line = _HEADING.sub("", _BULLET.sub("", line)).strip()
        heading = _section(line)
        if _HEADING.match(raw) or heading is not None:
            section = heading
            lines.append((line, section))
            joinable = False
            continue
        if joinable and not is_item and line[:1].islower() and lines:
            previous, where = lines[-1]
            lines[-1] = (f"{previous} {line}", where)  # a wrapped line goes on the one before
        else:
            lines.append((line, section))
        joinable = not line.endswith((".", ":", ";", "!", "?", "。", "！", "？"))
    out: list[tuple[str, str | None]] = []
    for line, where in lines:
        if len(line) > MAX_LINE_CHARS:
            out += [(s.strip(), where) for s in _SENTENCES.split(line) if s.strip()]
        else:
            out.append((line, where))
    return out


def _section(line: str) -> str | None:
    """The section a heading line opens ("EDUCATION", "Languages:"), if it is one we know."""
    word = line.strip(" :#").lower()
    if len(word.split()) > 3:
        return None
    return next((key for key in _SECTIONS if key in word or word.startswith(key[:6])), None)


def names_in(text: str) -> set[str]:
    """The terms of the names of things in ``text`` (see :data:`_NAME`)."""
    found: set[str] = set()
    for match in _NAME.finditer(text):
        found.update(terms(match.group(1) or match.group(2)))
    return found


class RecallIndex:
    """BM25 over the lines of a résumé and a job description; build once per session."""

    def __init__(self, resume: str | None, job_description: str | None) -> None:
        units: list[_Unit] = []
        names: set[str] = set()
        for source, text in (("resume", resume), ("job", job_description)):
            seen: set[str] = set()
            names |= names_in(text or "")
            for line, section in split_lines(text or ""):
                counted = Counter(terms(line))
                if sum(counted.values()) < 2 or line in seen:  # a name, a one-word heading, a repeat
                    continue
                seen.add(line)
                if section is not None:
                    counted[_SECTION_TERM + section] += 1
                units.append(_Unit(line, source, counted, sum(counted.values())))  # type: ignore[arg-type]
        self._units = units
        self._names = frozenset(names)
        df: Counter[str] = Counter()
        for unit in units:
            df.update(unit.terms.keys())
        n = len(units)
        self._idf_max = math.log(1 + (n - 0.5) / 1.5) if n else 1.0
        self._idf = {term: math.log(1 + (n - k + 0.5) / (k + 0.5)) for term, k in df.items()}
        for term in self._names & self._idf.keys():  # see NAME_IDF_SHARE
            self._idf[term] = max(self._idf[term], NAME_IDF_SHARE * self._idf_max)
        self._avg_len = sum(u.length for u in units) / n if n else 1.0
        self._vocabulary = [t for t in df
                            if len(t) >= FUZZY_MIN_LEN and t.isascii() and t[0] != _SECTION_TERM]

    def __len__(self) -> int:
        return len(self._units)

    def lines_for(self, question: str, limit: int = MAX_LINES) -> list[RecallLine]:
        """The lines ``question`` touches, best first: at most ``limit``, none below
        :data:`MIN_SCORE`."""
        if not self._units or limit <= 0:
            return []
        weights = self._query(question)
        if not weights:
            return []
        scored: list[tuple[float, int]] = []
        for i, unit in enumerate(self._units):
            score = self._score(unit, weights) * (JOB_WEIGHT if unit.source == "job" else 1.0)
            if score > 0:
                scored.append((score / self._idf_max, i))
        scored.sort(key=lambda s: (-s[0], s[1]))
        if not scored or scored[0][0] < MIN_SCORE:
            return []
        floor = max(MIN_SCORE, scored[0][0] * RELATIVE_FLOOR)
        return [RecallLine(self._units[i].text, self._units[i].source, round(score, 3))
                for score, i in scored[:limit] if score >= floor]

    def _query(self, question: str) -> dict[str, float]:
        """Each distinct question term with its weight: a name's counts in full, another
        word's :data:`PLAIN_WEIGHT`, a near spelling's scaled by its similarity, a word
        that points at a section counts as that section's name."""
        weights: dict[str, float] = {}

        def add(term: str, weight: float) -> None:
            if term in self._idf:
                weights[term] = max(weights.get(term, 0.0), weight)

        for term in dict.fromkeys(terms(question)):
            for key, hints in _SECTIONS.items():
                if any(term.startswith(h[:STEM_CHARS]) for h in hints):
                    add(_SECTION_TERM + key, 1.0)
            if term in self._idf:
                add(term, self._weight(term))
            elif len(term) >= FUZZY_MIN_LEN and term.isascii() and self._vocabulary:
                match = process.extractOne(term, self._vocabulary, scorer=fuzz.ratio,
                                           score_cutoff=FUZZY_MIN)
                if match is not None:
                    add(match[0], self._weight(match[0]) * match[1] / 100)
        return weights

    def _weight(self, term: str) -> float:
        plain = term.isascii() and term not in self._names
        return PLAIN_WEIGHT if plain else 1.0

    def _score(self, unit: _Unit, weights: dict[str, float]) -> float:
        score = 0.0
        norm = K1 * (1 - B + B * unit.length / self._avg_len)
        for term, weight in weights.items():
            tf = unit.terms.get(term, 0)
            if tf:
                score += weight * self._idf[term] * tf * (K1 + 1) / (tf + norm)
        return score


class RecallAnnouncer:
    """Says which lines a turn's question touches, as ``recall`` events, once per change.

    Called by the answer engine for every guess and final: a guess announces its lines
    when there are any and they differ from the turn's last; a final always settles the
    turn (an empty event clears lines a guess showed), unless it repeats what is shown.
    """

    def __init__(self, emit: Callable[[Event], None], now: Callable[[], float]) -> None:
        self._emit = emit
        self._now = now
        self._shown: dict[int, tuple[RecallLine, ...]] = {}

    def question(self, index: RecallIndex, turn: int, text: str, *, guessed: bool) -> None:
        if not len(index):
            return
        lines = tuple(index.lines_for(text))
        before = self._shown.get(turn)
        if [ln.text for ln in lines] == [ln.text for ln in before or ()] and (before is not None or guessed):
            return
        if guessed and not lines:
            return
        self._shown[turn] = lines
        self._emit(RecallEvent(t=self._now(), turn=turn, lines=lines, guessed=guessed))


def first_hit_rate(index: RecallIndex, cases: Iterable[tuple[str, str | None]]) -> tuple[int, int]:
    """(right, total) over (question, expected piece of the first line or None for "show
    nothing"): the recall rule's one figure, shared by `bench recall` and its test."""
    right = total = 0
    for question, expect in cases:
        total += 1
        lines = index.lines_for(question)
        if expect is None:
            right += not lines
        else:
            right += bool(lines) and expect in lines[0].text
    return right, total
