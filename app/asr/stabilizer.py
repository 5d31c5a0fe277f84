"""LocalAgreement-2: a word is stable once two consecutive hypotheses agree on it.

Re-decoding a growing utterance changes its tail from pass to pass; showing those
changes raw makes captions flicker.  Words that the last two passes agree on (as a
common prefix) are committed and never change again within the utterance; the rest is
shown as the unstable tail.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Stabilized:
    text: str
    """Committed words followed by the newest hypothesis' words past them."""
    stable: str
    """The committed prefix of ``text``; only ever grows within an utterance."""


class LocalAgreement:
    def __init__(self) -> None:
        self._committed: list[str] = []
        self._previous: list[str] = []

    def reset(self) -> None:
        self._committed = []
        self._previous = []

    @property
    def stable(self) -> str:
        return " ".join(self._committed)

    def update(self, words: list[str]) -> Stabilized:
        agreed = _common_prefix(self._previous, words)
        if len(agreed) > len(self._committed) and agreed[: len(self._committed)] == self._committed:
            self._committed = agreed
        self._previous = words
        # Committed words stay on screen even if this hypothesis disagrees with them;
        # it contributes only what lies past them, so the display never rewrites.
        tail = words[len(self._committed):]
        return Stabilized(text=" ".join([*self._committed, *tail]), stable=self.stable)


def _common_prefix(a: list[str], b: list[str]) -> list[str]:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return b[:n]

