"""Chinese captions punctuated as Chinese: full-width "，？！：；。" where a Chinese clause ends.

Whisper's multilingual model often writes ASCII "," "?" "!" between Chinese characters
("你用过 Kubernetes, 也用过 Nomad?"), which a Chinese reader sees as a typo.  Done once,
where a pass's text is produced (:mod:`app.asr.decoder`), so the captions, the prompt,
the session log and the Markdown export all read the same text.

The rule is per clause: a mark that ends a clause (it is followed by a space, the end of
the text, a CJK character or another mark) becomes full-width when that clause holds
Chinese, or is a name or two of Latin words inside Chinese ("技术栈：Kubernetes; 数据库"
→ "…Kubernetes；数据库"); an English clause keeps its own ("What is Kubernetes? 请解释一下"
keeps its "?").  Marks inside a token
("Node.js", "3.5", "10:30", "http://") are no clause ends and stay.  A full stop is the
riskiest mark (abbreviations, versions), so it changes only right after a Chinese
character, or at the very end of a text whose last clause holds Chinese.
"""

from __future__ import annotations

from app.core.text import has_cjk, is_cjk

FULL_WIDTH = {",": "，", "?": "？", "!": "！", ":": "：", ";": "；", ".": "。"}
_CLAUSE_ENDS = frozenset(",.?!;:，。？！；：")
_NAME_WORDS = 2
"""A clause of at most this many Latin words inside Chinese is a name ("Kubernetes",
"Spring Boot"), punctuated as the Chinese around it; three words make an English clause."""


def chinese_punctuation(text: str) -> str:
    """``text`` with the ASCII marks that end its Chinese clauses made full-width.

    The spaces around a converted mark go too: a full-width mark carries its own space.
    """
    out: list[str] = []
    clause_start = 0
    chinese_before = False
    """The clause before this one was Chinese."""
    n = len(text)
    for i, ch in enumerate(text):
        if ch not in _CLAUSE_ENDS:
            out.append(ch)
            continue
        after = text[i + 1] if i + 1 < n else ""
        ends_clause = not after or after.isspace() or is_cjk(after) or after in _CLAUSE_ENDS
        if not ends_clause:
            out.append(ch)
            continue
        clause = text[clause_start:i]
        following = text[i + 1:].lstrip()[:1]
        if not clause.strip():
            chinese = chinese_before  # a run of marks ("?!") is its clause's
        else:
            chinese = has_cjk(clause) or (
                len(clause.split()) <= _NAME_WORDS and (chinese_before or is_cjk(following)))
        if chinese and ch in FULL_WIDTH and _converts(ch, text, i, out):
            while out and out[-1] == " ":
                out.pop()
            out.append(FULL_WIDTH[ch])
        else:
            out.append(ch)
        chinese_before = chinese
        clause_start = i + 1
    return _drop_spaces_after_full_width("".join(out))


def _converts(mark: str, text: str, i: int, done: list[str]) -> bool:
    if mark != ".":
        return True
    if text[i - 1: i] == "." or text[i + 1: i + 2] == ".":
        return False  # an ellipsis
    before = "".join(done).rstrip()
    return bool(before) and (is_cjk(before[-1]) or not text[i + 1:].strip())


def _drop_spaces_after_full_width(text: str) -> str:
    out: list[str] = []
    skip = False
    for ch in text:
        if skip and ch == " ":
            continue
        skip = ch in "，？！：；。"
        out.append(ch)
    return "".join(out)
