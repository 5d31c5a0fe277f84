"""The Settings dialog: the tabs, one Save that validates them all, then the keychain and the file.

Every value goes through the same pydantic models as the TOML file: nothing is accepted
that ``load_settings`` would later reject, so the file the dialog writes always loads
clean. The API key and any credentials in the base URL never touch the settings: they go
to the OS keychain (:mod:`app.ui.settings.endpoint_secrets`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QTabWidget, QVBoxLayout, QWidget

from app.core.config import Settings, save_settings
from app.platform import secrets
from app.ui.settings.audio_tab import AudioTab
from app.ui.settings.hotkeys_tab import HotkeysTab
from app.ui.settings.model_tab import ModelTab
from app.ui.settings.prices_tab import PricesTab
from app.ui.settings.prompt_tab import PromptTab
from app.ui.settings.tab import SettingsTab
from app.ui.settings.turns_tab import TurnsTab
from app.ui.settings.window_tab import WindowTab


class SettingsDialog(QDialog):
    """Edit settings; on Save, validate, store the secrets in the keychain and write the TOML."""

    def __init__(
        self,
        settings: Settings,
        settings_path: Path | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setMinimumWidth(520)
        self._original = settings
        self._path = settings_path
        self.result_settings: Settings | None = None
        self.saved_path: Path | None = None
        self.model_tab = ModelTab(settings)
        self.audio_tab = AudioTab(settings)
        self.prompt_tab = PromptTab(settings)
        self.turns_tab = TurnsTab(settings)
        self.hotkeys_tab = HotkeysTab(settings)
        self.prices_tab = PricesTab(settings)
        self.window_tab = WindowTab(settings)
        self._tabs: list[SettingsTab] = [self.model_tab, self.audio_tab, self.prompt_tab, self.turns_tab,
                                         self.hotkeys_tab, self.prices_tab, self.window_tab]
        tabs = QTabWidget()
        for tab in self._tabs:
            tabs.addTab(tab, tab.title)
        self.tabs = tabs
        self.error_label = QLabel("")
        self.error_label.setTextFormat(Qt.TextFormat.PlainText)  # it quotes what the user typed
        self.error_label.setObjectName("error")
        self.error_label.setWordWrap(True)
        self.error_label.setVisible(False)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.audio_tab.failed.connect(self._show_error)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.buttons = buttons
        layout = QVBoxLayout(self)
        layout.addWidget(tabs)
        layout.addWidget(self.error_label)
        layout.addWidget(buttons)
        self._name_the_fields()

    def _name_the_fields(self) -> None:
        """The fields by name on the dialog, as callers and tests reach them."""
        m, a, p, t, w = self.model_tab, self.audio_tab, self.prompt_tab, self.turns_tab, self.window_tab
        self.provider = m.provider
        self.provider_note = m.provider_note
        self.base_url = m.base_url
        self.model = m.model
        self.api_key = m.api_key
        self.key_note = m.key_note
        self.http2 = m.http2
        self.send_cache_key = m.send_cache_key
        self.send_usage = m.send_usage
        self.local_kind = m.local_kind
        self.local_note = m.local_note
        self.gguf_path = m.gguf_path
        self.gguf_row = m.gguf_row
        self.ollama_model = m.ollama_model
        self.ollama_probe = m.ollama_probe
        self.source = a.source
        self.device = a.device
        self.candidate_on = a.candidate_on
        self.candidate_device = a.candidate_device
        self.language = a.language
        self.chinese_script = a.chinese_script
        self.asr_model = a.asr_model
        self.glossary = a.glossary
        self.resume = p.resume
        self.job = p.job
        self.system_prompt = p.system_prompt
        self.turn_spins = t.turn_spins
        self.low_latency = t.low_latency
        self.max_spec = t.max_spec
        self.hotkey_edits = self.hotkeys_tab.hotkey_edits
        self.prices = self.prices_tab.prices
        self.stay_on_top = w.stay_on_top
        self.large_font = w.large_font
        self.theme = w.theme

    @property
    def ollama_state(self) -> str:
        """``looking`` until the Ollama probe answers, then ``found`` or ``absent``."""
        return self.model_tab.ollama_state

    def language_code(self) -> str:
        """The chosen language code: a listed language's, or what was typed."""
        return self.audio_tab.language_code()

    def fill_devices(self, names: list[str]) -> None:
        """The same inputs in both device pickers, keeping what each shows."""
        self.audio_tab.fill_devices(names)

    def collect(self) -> Settings:
        """The edited settings, validated; raises ValueError with a user-facing message."""
        errors: list[str] = []
        data: dict[str, Any] = self._original.model_dump(mode="python")
        for tab in self._tabs:
            tab.collect(data, errors)
        try:
            settings = Settings.model_validate(data)
        except ValidationError as exc:
            labels = {k: v for tab in self._tabs for k, v in tab.labels.items()}
            for err in exc.errors():
                key = ".".join(str(p) for p in err["loc"])
                errors.append(f"{labels.get(key, key)}: {err['msg']}")
            settings = None
        if errors or settings is None:
            raise ValueError("\n".join(errors))
        return settings

    def _show_error(self, text: str) -> None:
        self.error_label.setText(text)
        self.error_label.setVisible(bool(text))

    def accept(self) -> None:
        try:
            settings = self.collect()
        except ValueError as exc:
            self._show_error(str(exc))
            return
        try:
            self.model_tab.save_secrets()
        except secrets.SecretStoreError as exc:
            self._show_error(str(exc))
            return
        try:
            self.saved_path = save_settings(settings, self._path)
        except OSError as exc:
            self._show_error(f"Could not write the settings file: {exc}")
            return
        self.result_settings = settings
        super().accept()
