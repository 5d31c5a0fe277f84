"""Keep a growing text view pinned to its end, unless the user scrolled up to reread.

Comparing the scroll position right after inserting text is unreliable (the document
lays out lazily, so the range grows later); following ``rangeChanged`` is not.
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QScrollBar

SLACK_PX = 4


class FollowBottom(QObject):
    def __init__(self, bar: QScrollBar) -> None:
        super().__init__(bar)
        self._bar = bar
        self.following = True
        bar.valueChanged.connect(self._moved)
        bar.rangeChanged.connect(self._range)

    def _moved(self, value: int) -> None:
        self.following = value >= self._bar.maximum() - SLACK_PX

    def _range(self, _low: int, high: int) -> None:
        if self.following:
            self._bar.setValue(high)
