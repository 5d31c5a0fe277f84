"""What every Settings tab shares: one shape, so the dialog builds and collects them in a loop.

A tab is built from the :class:`~app.core.config.Settings` it shows and, on Save, writes
its sections into the settings' dumped dict (``collect``), adding a sentence to ``errors``
for each value it cannot take; the dialog then validates the whole dict at once, with the
same pydantic models ``load_settings`` uses.
"""

from __future__ import annotations

from typing import Any, ClassVar

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget


class SettingsTab(QWidget):
    """One page of the Settings dialog."""

    title: ClassVar[str] = ""
    """The tab's label (``&&`` shows one ``&``)."""
    labels: ClassVar[dict[str, str]] = {}
    """``section.field`` → the row's label, so a validation error names what the user sees."""

    def collect(self, into: dict[str, Any], errors: list[str]) -> None:
        """Write this tab's values into ``into`` (the settings as ``model_dump`` gives them)."""
        raise NotImplementedError


def section(title: str) -> QLabel:
    """A bold heading row inside a form: which side of the call the rows below are for."""
    label = QLabel(f"<b>{title}</b>")
    label.setContentsMargins(0, 6, 0, 0)
    return label


def hint_label() -> QLabel:
    """An empty, wrapping note under a row, in the panes' hint style: plain text, as a note
    can quote a keychain's or a server's words."""
    label = QLabel("")
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    label.setObjectName("paneHint")
    return label
