"""The training texts: whole questions and requests (label 1) and the words a speaker may
pause after before going on (label 0), in English and Mandarin.

Per base question (a template with its slots filled): the whole question, two cuts at word
boundaries, and half the time a cut followed by a filler ("tell me about um").  Besides:
statements that precede a question (a preamble, an acknowledgement), lists cut after an
item ("postgres, mysql,"), and a preamble followed by a whole or a cut question.  All of it
is generated from :mod:`texts_en` and :mod:`texts_zh` with a fixed seed.

The held-out split is by family (every fourth in name order, of the questions' and of the
statements' families): a test text's frame never appears in training.
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass
from types import ModuleType

from devtools.turns_train import texts_en, texts_zh

PER_TEMPLATE = 10
"""Slot fillings drawn per template (all of them where there are fewer)."""
STATEMENTS_PER_TEMPLATE = 5
PREAMBLE_PAIRS = 250
"""Preamble + question texts per split and language (half whole, half cut)."""
LISTS = 60
"""List texts per list frame."""
_SLOT = re.compile(r"\{([A-Z0-9]+)\}")


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    label: int
    """1: the turn is whole; 0: it goes on."""
    language: str
    family: str
    kind: str
    """whole, cut, filler, statement, list, preamble+whole, preamble+cut."""
    held_out: bool


def _module(language: str) -> ModuleType:
    return texts_zh if language == "zh" else texts_en


def join(words: list[str], language: str) -> str:
    """Words back into text: spaces between English words; in Chinese only between two
    Latin words ("Spring Boot", "Go语言")."""
    if language != "zh":
        return " ".join(words)
    out = ""
    for word in words:
        if out and out[-1].isascii() and out[-1].isalnum() and word[0].isascii() and word[0].isalnum():
            out += " "
        out += word
    return out


def _words(text: str) -> tuple[list[str], set[int]]:
    """The words and the cut points (number of words kept) where the text is already whole."""
    words, whole = [], set()
    for raw in text.split():
        word = raw.rstrip("|")
        if word:
            words.append(word)
        if raw.endswith("|"):
            whole.add(len(words))
    return words, whole


def _fill(template: str, slots: dict[str, tuple[str, ...]], rng: random.Random, n: int) -> list[str]:
    names = _SLOT.findall(template)
    if not names:
        return [template]
    combos = list(itertools.product(*(slots[name] for name in names)))
    chosen = combos if len(combos) <= n else rng.sample(combos, n)
    out = []
    for combo in chosen:
        text = template
        for name, value in zip(names, combo, strict=True):
            text = text.replace("{" + name + "}", value, 1)
        out.append(text)
    return out


def _cut_points(words: list[str], whole: set[int], language: str) -> list[int]:
    particles = set(getattr(_module(language), "PARTICLES", ()))
    return [k for k in range(1, len(words)) if k not in whole and not set(words[k:]) <= particles]


def held_out_families(families: list[str]) -> set[str]:
    return {name for i, name in enumerate(sorted(families)) if i % 4 == 1}


Base = tuple[list[str], list[int]]
"""A filled question's words and the points it may be cut at."""


def _questions(language: str, rng: random.Random) -> tuple[list[Example], dict[bool, list[Base]]]:
    mod = _module(language)
    test = held_out_families(list(mod.QUESTIONS))
    out: list[Example] = []
    bases: dict[bool, list[Base]] = {False: [], True: []}
    for family, templates in mod.QUESTIONS.items():
        held = family in test
        for template in templates:
            for filled in _fill(template, mod.SLOTS, rng, PER_TEMPLATE):
                words, whole = _words(filled)
                cuts = _cut_points(words, whole, language)
                bases[held].append((words, cuts))
                lead = rng.choice(mod.LEADS).split()
                out.append(Example(join(lead + words, language) + ("？" if language == "zh" else "?"),
                                   1, language, family, "whole", held))
                for k in rng.sample(cuts, min(2, len(cuts))):
                    out.append(Example(join(lead + words[:k], language), 0, language, family, "cut", held))
                if cuts and rng.random() < 0.5:
                    k = rng.choice(cuts)
                    filler = rng.choice(mod.FILLERS).split()
                    out.append(Example(join(lead + words[:k] + filler, language), 0, language, family,
                                       "filler", held))
    return out, bases


def _statements(language: str, rng: random.Random) -> tuple[list[Example], dict[bool, list[list[str]]]]:
    mod = _module(language)
    test = held_out_families(list(mod.STATEMENTS))
    slots = {**mod.SLOTS, **mod.STATEMENT_SLOTS}
    out: list[Example] = []
    said: dict[bool, list[list[str]]] = {False: [], True: []}
    for family, templates in mod.STATEMENTS.items():
        held = family in test
        for template in templates:
            for filled in _fill(template, slots, rng, STATEMENTS_PER_TEMPLATE):
                words, _ = _words(filled)
                said[held].append(words)
                mark = "。" if language == "zh" else "."
                out.append(Example(join(words, language) + mark, 0, language, family, "statement", held))
    return out, said


def _lists(language: str, rng: random.Random) -> list[Example]:
    """Lists cut after an item (0) and questions over a whole list (1); the families
    ``list`` and ``list_question`` are split like the others (the second is held out)."""
    mod = _module(language)
    comma, sep_or = ("、", " 还是 ") if language == "zh" else (", ", " or ")
    items = [t for t in mod.SLOTS["TECH"] if " " not in t]
    out: list[Example] = []
    for frame in mod.LIST_FRAMES:
        for _ in range(LISTS // len(mod.LIST_FRAMES) * 2):
            chosen = rng.sample(items, rng.choice((1, 2, 3)))
            listed = comma.join(chosen) + comma.strip()
            text = join(frame.replace("{L}", "\x00").split(), language).replace("\x00", listed)
            out.append(Example(text.strip(), 0, language, "list", "list", False))
    for frame in mod.LIST_QUESTIONS:
        for _ in range(LISTS // len(mod.LIST_QUESTIONS)):
            chosen = rng.sample(items, 3)
            listed = comma.join(chosen[:2]) + sep_or + chosen[2]
            words = frame.replace("{L}", "\x00").split()
            whole = join(words, language).replace("\x00", listed)
            out.append(Example(whole + ("？" if language == "zh" else "?"), 1, language, "list_question",
                               "whole", True))
            if words[-1] == "\x00":  # the list comes last: cut after an item
                part = join(words, language).replace("\x00", comma.join(chosen[:2]) + comma.strip())
                out.append(Example(part, 0, language, "list_question", "list", True))
    return out


def _preambles(language: str, rng: random.Random, said: dict[bool, list[list[str]]],
               bases: dict[bool, list[Base]]) -> list[Example]:
    """A statement, then a question, whole (1) or cut (0): both of one split."""
    out: list[Example] = []
    for held in (False, True):
        for i in range(PREAMBLE_PAIRS):
            statement, (question, cuts) = rng.choice(said[held]), rng.choice(bases[held])
            mark = ["。"] if language == "zh" else []
            if i % 2 and cuts:
                words, label, kind = question[:rng.choice(cuts)], 0, "preamble+cut"
            else:
                words, label, kind = question, 1, "preamble+whole"
            text = join(statement, language) + ("".join(mark) if mark else ".") + (
                "" if language == "zh" else " ") + join(words, language)
            out.append(Example(text, label, language, "preamble", kind, held))
    return out


def examples(language: str) -> list[Example]:
    """Every training and held-out text of ``language`` ("en" or "zh"), in a fixed order."""
    rng = random.Random(f"end-of-turn-{language}")
    questions, bases = _questions(language, rng)
    statements, said = _statements(language, rng)
    seen: set[str] = set()
    out = []
    for ex in questions + statements + _lists(language, rng) + _preambles(language, rng, said, bases):
        key = ex.text
        if key not in seen:  # one label a text: the first (a whole question over its cut twin)
            seen.add(key)
            out.append(ex)
    return out
