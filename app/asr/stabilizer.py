"""LocalAgreement-2: a word is stable once two consecutive hypotheses agree on it.

Re-decoding a growing utterance changes its tail from pass to pass; showing those
changes raw makes captions flicker.  Words that the last two passes agree on (as a
common prefix, ignoring case and punctuation) are committed: the caption shows them as
settled and they stay put.  The text itself is always the newest hypothesis verbatim —
never a splice of two passes — so what is speculated on, shown and finally reused is
one real decoding of the audio ("yourself." then "yourself and…" must not become
"yourself. and…").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from os.path import commonprefix  # works on any sequences, not only paths


@dataclass(frozen=True, slots=True)
class Stabilized:
    text: str
    """The newest hypothesis."""
    stable: str
    """Its first words that earlier passes agreed on; grows within an utterance."""


class LocalAgreement:
    def __init__(self) -> None:
        self._committed: list[str] = []
        self._previous: list[str] = []

    def reset(self) -> None:
        self._committed = []
        self._previous = []

    def update(self, words: list[str]) -> Stabilized:
        current = [_norm(w) for w in words]
        agreed = commonprefix([self._previous, current])  # noqa: RUF071 - word lists
        kept = commonprefix([self._committed, current])  # noqa: RUF071 - word lists
        # A revision of a committed word (rare: the model changed its mind after two
        # agreeing passes) is accepted rather than hidden; otherwise commitment only grows.
        self._committed = current[: max(len(agreed), len(kept))]
        self._previous = current
        return Stabilized(text=" ".join(words), stable=" ".join(words[: len(self._committed)]))


def _norm(word: str) -> str:
    return re.sub(r"[^\w']", "", word.lower())
