"""Settings → Hotkeys: one global shortcut per action, checked as the hotkey manager reads it."""

from __future__ import annotations

from typing import Any, ClassVar

from PySide6.QtWidgets import QFormLayout, QLineEdit

from app.core.config import Settings
from app.ui.hotkeys import ACTIONS, HotkeyError, parse_hotkey
from app.ui.settings.tab import SettingsTab, hint_label


class HotkeysTab(SettingsTab):
    """A text field per action; saved in canonical form (``ctrl+alt+l``)."""

    title: ClassVar[str] = "Hotkeys"

    def __init__(self, s: Settings) -> None:
        super().__init__()
        form = QFormLayout(self)
        self.hotkey_edits: dict[str, QLineEdit] = {}
        for action, label in ACTIONS.items():
            edit = QLineEdit(getattr(s.hotkeys, action))
            edit.setPlaceholderText("e.g. ctrl+alt+l")
            self.hotkey_edits[action] = edit
            form.addRow(label, edit)
        note = hint_label()
        note.setText("Modifiers: ctrl, alt (option), shift, cmd (win/super). "
                     "Keys: a–z, 0–9, f1–f24, space, arrows, punctuation.")
        form.addRow("", note)

    def collect(self, into: dict[str, Any], errors: list[str]) -> None:
        for action, edit in self.hotkey_edits.items():
            try:
                into["hotkeys"][action] = parse_hotkey(edit.text()).canonical()
            except HotkeyError as exc:
                errors.append(f"{ACTIONS[action]}: {exc}")
