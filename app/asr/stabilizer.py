"""LocalAgreement-2: a word is stable once two consecutive hypotheses agree on it.

Re-decoding a growing utterance changes its tail from pass to pass; showing those
changes raw makes captions flicker.  Words that the last two passes agree on (as a
common prefix, ignoring case and punctuation) are committed: the caption shows them as
settled and they never change again.  Agreement ignores punctuation and takes the newest
spelling, so "yourself." then "yourself and…" reads "yourself and…", not "yourself. and…".
A "word" is a unit of :func:`app.core.text.segments`: a Latin word or one Chinese character,
so Chinese captions settle character by character instead of never.
"""

from __future__ import annotations

from dataclasses import dataclass
from os.path import commonprefix  # works on any sequences, not only paths

from app.core.text import segment_key, segments


@dataclass(frozen=True, slots=True)
class Stabilized:
    text: str
    """The committed words, then the newest hypothesis past them."""
    stable: str
    """The words two passes in a row agreed on; only grows within an utterance."""


class LocalAgreement:
    def __init__(self) -> None:
        self._committed: list[str] = []
        """Surface forms of the committed words."""
        self._previous: list[str] = []

    def reset(self) -> None:
        self._committed = []
        self._previous = []

    def update(self, text: str) -> Stabilized:
        words = segments(text)
        current = [segment_key(w) for w in words]
        committed = [segment_key(w) for w in self._committed]
        agrees = current[: len(committed)] == committed
        # The last word sits at the edge of the audio and may be cut ("week" for "weakness"
        # twice in a row): it is never committed.
        agreed = min(len(commonprefix([self._previous, current])), len(current) - 1)  # noqa: RUF071
        if agrees:
            # Same words (punctuation aside): take the newest spelling, and grow if two
            # passes in a row agree on more.
            self._committed = words[: max(len(committed), agreed)]
        self._previous = current
        # A pass that disagrees with committed words does not change them: the caption
        # keeps what was settled and takes only the words past it from this pass.
        shown = [*self._committed, *words[len(self._committed):]]
        return Stabilized(text="".join(shown).strip(), stable="".join(self._committed).strip())
