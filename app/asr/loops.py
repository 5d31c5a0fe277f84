"""A decoder loop cut off: Whisper, unsure, says its last phrase again and again.

Kept apart from the hallucination guards (:mod:`app.asr.guards`, which judge a whole
hypothesis) because it is pure text: the decoder cuts a loop before it checks a pass's
words for near-misses of the glossary, and streaming cuts every pass it shows.
"""

from __future__ import annotations

from app.core.text import has_cjk, segment_key, segments


def cut_repetition(text: str, *, max_repeats: int = 3) -> str:
    """Truncate a decoder loop: a word said ``max_repeats`` times in a row, or a phrase of
    three or more words said twice in a row.

    Genuine doubles ("very very", "为什么为什么") survive; a repeated phrase or sentence
    is what Whisper does when it loops, and what the interviewer almost never does.  A
    Chinese character counts as half a word, so a phrase needs six characters to be cut
    on its second saying.
    """
    units = segments(text)
    norm = [segment_key(u) for u in units]
    weight = [0.5 if has_cjk(k) else 1.0 for k in norm]
    for size in range(1, len(units) // 2 + 1):
        for i in range(len(units) - size * 2 + 1):
            limit = 2 if sum(weight[i:i + size]) >= 3 else max_repeats
            if i + size * limit > len(units):
                continue
            unit = norm[i:i + size]
            count = 1
            while norm[i + size * count: i + size * (count + 1)] == unit:
                count += 1
            if count >= limit:
                return "".join(units[: i + size * (limit - 1)])
    return text
