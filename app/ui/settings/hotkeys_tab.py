"""Settings → Hotkeys: one global shortcut per action, checked as the hotkey manager reads it.

Under each field, as the user types, a note says what the manager would say when it
applies the combination: that it does not parse, that this OS cannot register its key,
or that it types characters (Ctrl+Alt+A is AltGr+A on Windows).  The last is a warning,
not a refusal: the user may want it, and an old settings file that has it still loads.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

from PySide6.QtWidgets import QFormLayout, QLabel, QLineEdit

from app.core.config import Settings
from app.ui.hotkeys import ACTIONS, HotkeyError, parse_hotkey, platform_warning
from app.ui.settings.tab import SettingsTab, hint_label


class HotkeysTab(SettingsTab):
    """A text field per action with its warning note; saved in canonical form (``ctrl+shift+l``)."""

    title: ClassVar[str] = "Hotkeys"

    def __init__(self, s: Settings, platform: str = sys.platform) -> None:
        """``platform``: whose keyboard rules the warnings follow (another OS's in tests)."""
        super().__init__()
        self._platform = platform
        form = QFormLayout(self)
        self.hotkey_edits: dict[str, QLineEdit] = {}
        self.warnings: dict[str, QLabel] = {}
        for action, label in ACTIONS.items():
            edit = QLineEdit(getattr(s.hotkeys, action))
            edit.setPlaceholderText("e.g. ctrl+shift+l")
            warning = hint_label()
            warning.setObjectName("error")
            self.hotkey_edits[action] = edit
            self.warnings[action] = warning
            edit.textChanged.connect(lambda _text, a=action: self._check(a))
            form.addRow(label, edit)
            form.addRow("", warning)
            self._check(action)
        note = hint_label()
        note.setText("Modifiers: ctrl, alt (option), shift, cmd (win/super). "
                     "Keys: a–z, 0–9, f1–f24, space, arrows, punctuation. "
                     "Avoid ctrl+alt+<key> on Windows: that is AltGr, which types characters.")
        form.addRow("", note)

    def _check(self, action: str) -> None:
        """Show what is wrong with the field's combination on this OS, or nothing."""
        try:
            problem = platform_warning(parse_hotkey(self.hotkey_edits[action].text()),
                                       self._platform)
        except HotkeyError as exc:
            problem = str(exc)
        warning = self.warnings[action]
        warning.setText(problem or "")
        warning.setVisible(bool(problem))

    def collect(self, into: dict[str, Any], errors: list[str]) -> None:
        for action, edit in self.hotkey_edits.items():
            try:
                into["hotkeys"][action] = parse_hotkey(edit.text()).canonical()
            except HotkeyError as exc:
                errors.append(f"{ACTIONS[action]}: {exc}")
