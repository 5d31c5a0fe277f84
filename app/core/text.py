"""Words of a transcript, for comparing and counting: one normaliser for every language.

Chinese and Japanese are written without spaces, so "split on whitespace" makes a whole
Chinese question one word: error rates, stabilisation and loop detection then see
nothing.  Here every CJK character is a word of its own (the usual character-error-rate
convention), Latin words stay whole, so a mixed question ("Redis 为什么这么快？") is
``["redis", "为", "什", "么", "这", "么", "快"]``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

# Han (with extensions and compatibility ideographs), kana, hangul syllables.
_CJK_CLASS = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
    "\U00020000-\U0003134f"
)
_CJK = re.compile(f"[{_CJK_CLASS}]")
_WORD = re.compile(rf"[{_CJK_CLASS}]|[^\W{_CJK_CLASS}](?:[^\W{_CJK_CLASS}]|'(?=\w))*")
_SEGMENT = re.compile(rf"\s*(?:[{_CJK_CLASS}]|[^\s{_CJK_CLASS}]+)[^\w\s]*")
SENTENCE_FINAL = "?？.。!！"
"""The marks that close a sentence, in both scripts (a comma or a colon only pauses it)."""


def is_cjk(char: str) -> bool:
    return bool(_CJK.fullmatch(char))


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def words(text: str, fillers: Iterable[str] = ()) -> list[str]:
    """Normalised words: NFKC, lower case, punctuation out, each CJK character a word.

    ``fillers`` ("um", "嗯", "那个") are dropped wherever they stand as whole words; a
    multi-character Chinese filler is dropped where its characters stand in a row.
    """
    found = _WORD.findall(unicodedata.normalize("NFKC", text).lower())
    drop = [seq for f in fillers if (seq := _WORD.findall(unicodedata.normalize("NFKC", f).lower()))]
    if not drop:
        return found
    drop.sort(key=len, reverse=True)
    out: list[str] = []
    i = 0
    while i < len(found):
        match = next((seq for seq in drop if found[i:i + len(seq)] == seq), None)
        if match:
            i += len(match)
        else:
            out.append(found[i])
            i += 1
    return out


def says(said: list[str], seq: list[str]) -> bool:
    """Do the words ``said`` hold the words ``seq`` in a row (both as :func:`words` gives)?"""
    return any(said[i:i + len(seq)] == seq for i in range(len(said) - len(seq) + 1))


Tags = tuple[tuple[str, ...], ...]
"""Trailing tags ("right?", "you know", 对吧) as word sequences: they ask for agreement
and change no question."""


def tags_of(phrases: Iterable[str]) -> Tags:
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


def question_key(text: str, fillers: Iterable[str] = (), tags: Tags = ()) -> tuple[str, ...]:
    """The one rule for "the same question": the same words, once case, punctuation,
    fillers and trailing tags are set aside.  The end-of-turn guesses deduplicate by it,
    the answer engine reuses a guess's answer by it, the benchmark counts stale answers
    by it."""
    return tuple(without_tags(words(text, fillers), tags))


def segments(text: str) -> list[str]:
    """The text cut into display units whose concatenation is the text (less edge spaces).

    Each unit is one CJK character or one space-delimited Latin word, with the spaces
    before it and the punctuation after it: joining units with "" rebuilds the caption
    as written, in both scripts.
    """
    return _SEGMENT.findall(text.strip())


def segment_key(segment: str) -> str:
    """What two units must share to be "the same word": no case, spaces or punctuation."""
    return "".join(words(segment))
