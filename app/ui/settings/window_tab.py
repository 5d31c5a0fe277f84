"""Settings → Window: how the window looks and sits (applied live on Save)."""

from __future__ import annotations

from typing import Any, ClassVar

from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout

from app.core.config import Settings
from app.ui.settings.tab import SettingsTab

THEMES = (("system", "Follow the system"), ("light", "Light"), ("dark", "Dark"))


class WindowTab(SettingsTab):
    """Stay on top, large text and the theme."""

    title: ClassVar[str] = "Window"

    def __init__(self, s: Settings) -> None:
        super().__init__()
        form = QFormLayout(self)
        self.stay_on_top = QCheckBox("Keep the window above others")
        self.stay_on_top.setChecked(s.ui.stay_on_top)
        self.large_font = QCheckBox("Large text in the transcript and answer")
        self.large_font.setChecked(s.ui.large_font)
        self.theme = QComboBox()
        for mode, label in THEMES:
            self.theme.addItem(label, mode)
        self.theme.setCurrentIndex(max(0, self.theme.findData(s.ui.theme)))
        form.addRow("", self.stay_on_top)
        form.addRow("", self.large_font)
        form.addRow("Theme", self.theme)

    def collect(self, into: dict[str, Any], errors: list[str]) -> None:
        into["ui"] = {
            "stay_on_top": self.stay_on_top.isChecked(),
            "large_font": self.large_font.isChecked(),
            "theme": self.theme.currentData(),
        }
