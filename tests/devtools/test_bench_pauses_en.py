"""The English pause set: the kinds of pauses, flite's voices, and sentences of its own."""

from __future__ import annotations

import difflib
import itertools
import json
import re
from pathlib import Path

from devtools.bench import heldout, pauses_en
from devtools.bench.corpus import load_corpus
from devtools.turns_train import texts_en
from devtools.turns_train.dataset import examples
from tests.devtools.test_turns_train import NEAR, _norm
from tests.speech import speech_bounds

FILLER = re.compile(r"\b(?:um|uh|you know)$")
LOUD = round(32768 * 10 ** (-50 / 20))
"""-50 dBFS: clearly speech (the trim keeps everything above -60 dBFS before the level is
set, so a fading last sound, kal's "matter?", may stay below this for 40 ms)."""


def _kind(question: tuple[str | float, ...]) -> str:
    """What the speaker paused after, read from the text before the first pause."""
    pauses = sum(isinstance(p, float) for p in question)
    before = str(question[0]).lower().rstrip(",")
    if pauses == 0:
        return "none"
    if pauses == 2:
        return "list"
    if before.endswith("?"):
        return "finished, then a rider"
    if before.endswith("."):
        return "preamble"
    if FILLER.search(before):
        return "filler"
    return "unfinished clause"


def _sentences() -> list[str]:
    """Every whole text, every part said between pauses, every sentence inside a text."""
    out = []
    for question in pauses_en.QUESTIONS:
        parts = [p for p in question if isinstance(p, str)]
        whole = " ".join(parts)
        out += [whole, *parts, *re.findall(r"[^.?!]+[.?!]", whole)]
    return [s.strip() for s in out]


def test_each_kind_of_pause_is_said_three_to_seven_times_and_four_questions_have_none() -> None:
    kinds = [_kind(q) for q in pauses_en.QUESTIONS]
    assert kinds.count("none") == 4
    for kind in ("unfinished clause", "filler", "list", "preamble", "finished, then a rider"):
        assert 3 <= kinds.count(kind) <= 7, (kind, kinds.count(kind))
    assert 24 <= len(pauses_en.QUESTIONS) <= 32
    for question in pauses_en.QUESTIONS:  # text and pauses alternate, text at both ends
        assert isinstance(question[0], str) and isinstance(question[-1], str)
        assert all(isinstance(a, str) != isinstance(b, str) for a, b in itertools.pairwise(question))


def test_the_pauses_spread_over_0_4_to_1_2_seconds() -> None:
    lengths = [p for q in pauses_en.QUESTIONS for p in q if isinstance(p, float)]
    assert min(lengths) >= 0.4 and max(lengths) <= 1.2
    assert min(lengths) <= 0.5 and max(lengths) >= 1.1 and len(set(lengths)) >= 5


def test_no_sentence_is_a_training_text_a_held_out_question_or_a_near_copy() -> None:
    ours = sorted({_norm(s) for s in _sentences()})
    theirs = {_norm(e.text) for e in examples("en")}
    theirs |= {_norm(text) for parts, _ in heldout.QUESTIONS for text in (" ".join(parts), *parts)}
    assert not [mine for mine in ours if mine in theirs]
    near = []
    for mine in (m for m in ours if len(m) > 2):
        for other in theirs:
            matcher = difflib.SequenceMatcher(None, mine, other, autojunk=False)
            if min(matcher.real_quick_ratio(), matcher.quick_ratio()) >= NEAR and matcher.ratio() >= NEAR:
                near.append((mine, other))
    assert not near, near[:10]


def _words(text: str) -> str:
    return " ".join(_norm(text))


def _any_of(values: tuple[str, ...]) -> str:
    return "(?:" + "|".join(re.escape(_words(v)) for v in values if _words(v)) + ")"


LEAD = re.compile(_any_of((*texts_en.LEADS, *texts_en.FILLERS)) + " ")
"""A word the training texts put before a frame ("so", "okay so", "um")."""


def _frames() -> list[tuple[str, re.Pattern[str], str]]:
    """The head's question, statement and list frames: (frame, a pattern over normalised
    words with any value in each slot and leads before, the words up to its first slot)."""
    slots = {**texts_en.SLOTS, **texts_en.STATEMENT_SLOTS}
    item = _any_of(texts_en.SLOTS["TECH"])
    frames = [f for family in (*texts_en.QUESTIONS.values(), *texts_en.STATEMENTS.values()) for f in family]
    frames += [f for f in (*texts_en.LIST_FRAMES, *texts_en.LIST_QUESTIONS) if f != "{L}"]
    out = []
    for frame in frames:
        pieces = re.split(r"\{([A-Z0-9]+)\}", frame.replace("|", ""))
        words = [re.escape(_words(piece)) if i % 2 == 0
                 else f"{item}(?: (?:or )?{item})*" if piece == "L"
                 else _any_of(slots[piece])
                 for i, piece in enumerate(pieces)]
        pattern = re.compile(f"(?:{LEAD.pattern})*" + " ".join(w for w in words if w))
        out.append((frame, pattern, _words(pieces[0]) if len(pieces) > 1 else ""))
    return out


def test_no_sentence_is_said_in_a_frame_of_the_heads_training_texts() -> None:
    """Not only the texts the training drew: no filling of a frame, and no sentence opening
    with a frame's words up to its first slot (two words or more: "how would you design")."""
    frames = _frames()
    assert [f for f, p, _ in frames if p.fullmatch("so how would you design a rate limiter")]  # it can fail
    assert [f for f, p, _ in frames if p.fullmatch("have you worked with redis kafka or go")]
    found = []
    for sentence in {_words(s) for s in _sentences()}:
        opening = re.sub(f"^(?:{LEAD.pattern})*", "", sentence) + " "
        found += [(sentence, frame) for frame, pattern, head in frames if pattern.fullmatch(sentence)
                  or (len(head.split()) >= 2 and opening.startswith(head + " "))]
    assert not found, found


def test_the_whole_set_is_said_by_flites_voices_where_the_manifest_says(tmp_path: Path) -> None:
    pauses_en.build(tmp_path)
    clips = load_corpus(tmp_path)
    texts = [" ".join(p for p in q if isinstance(p, str)) for q in pauses_en.QUESTIONS]
    assert [c.text for c in clips] == texts
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    voices = [entry["voice"] for entry in manifest]
    assert voices[: len(pauses_en.VOICES)] == list(pauses_en.VOICES) and set(voices) == set(pauses_en.VOICES)
    assert all(v.startswith("flite:") for v in voices)
    for clip in clips:
        start, end = speech_bounds(clip.path, 0)  # the first and last sample that is not silence
        assert abs(start - clip.speech_start_s) < 0.001, clip.path.name
        assert abs(end - clip.speech_end_s) < 0.001, clip.path.name
        _, loud_end = speech_bounds(clip.path, LOUD)
        assert clip.speech_end_s - loud_end < 0.05, clip.path.name  # a soft last sound, not silence
