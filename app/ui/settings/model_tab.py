"""Settings → Model: where answers come from.

A model on this computer (the bundled one, a GGUF file, or an Ollama found running) or an
endpoint: a provider preset, a relay, any OpenAI-compatible server, with its key
(:mod:`app.ui.settings.endpoint_secrets`). Whether Ollama runs is asked off the GUI
thread (``ui-ollama-probe``), so the dialog opens at once; what it finds is offered, never
switched to.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, ClassVar

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QWidget,
)

from app.core.config import PROVIDER_PRESETS, LlmConfig, Settings
from app.llm.endpoint import BUNDLED, bundled_local_model
from app.llm.gguf import LocalModelError, check_gguf
from app.llm.ollama import OllamaFound, find_ollama
from app.platform.secrets import split_url_credentials
from app.ui.settings.endpoint_secrets import EndpointSecrets
from app.ui.settings.tab import SettingsTab, hint_label, section

CUSTOM_PROVIDER = "custom"
OLLAMA = "ollama"
"""The key of the Ollama preset in PROVIDER_PRESETS, and of the Ollama local choice."""


class _ProbeAnswer(QObject):
    """Carries the Ollama probe's answer to the tab. It has no parent and the probe thread
    holds it, so a dialog closed meanwhile is disconnected by Qt, never emitted on from
    another thread while its C++ object is being deleted (that crashed the process)."""

    found = Signal(object)


def _probe_ollama(answer: _ProbeAnswer) -> None:
    answer.found.emit(find_ollama())


class ModelTab(SettingsTab):
    """The local model rows, then the endpoint rows; the two follow each other for Ollama."""

    title: ClassVar[str] = "Model"
    labels: ClassVar[dict[str, str]] = {"llm.base_url": "Endpoint base URL", "llm.model": "Model"}

    def __init__(self, s: Settings) -> None:
        super().__init__()
        self._original = s
        form = QFormLayout(self)
        self._local_rows(form, s)
        form.addRow(section("Or an endpoint (a provider, a relay, any OpenAI-compatible server)"))
        self.provider = QComboBox()
        self.provider.addItem("Custom", CUSTOM_PROVIDER)
        for key, preset in PROVIDER_PRESETS.items():
            self.provider.addItem(preset.label, key)
        self.provider.setCurrentIndex(max(0, self.provider.findData(s.llm.provider)))
        self.provider.activated.connect(lambda _index: self._preset_chosen(self.provider.currentData()))
        self.provider_note = hint_label()
        self.provider_note.setText(PROVIDER_PRESETS[s.llm.provider].note
                                   if s.llm.provider in PROVIDER_PRESETS else "")
        self.send_cache_key = QCheckBox("Send prompt_cache_key (OpenAI's cache routing)")
        self.send_cache_key.setChecked(s.llm.send_prompt_cache_key)
        self.send_usage = QCheckBox("Ask for usage in the stream (stream_options.include_usage)")
        self.send_usage.setChecked(s.llm.send_include_usage)
        self.secrets = EndpointSecrets(s.llm.base_url)
        self.base_url = QLineEdit(self.secrets.url_text)
        self.base_url.setPlaceholderText("empty = built-in local model (or OPENAI_BASE_URL)")
        self.model = QLineEdit(s.llm.model or "")
        self.model.setPlaceholderText("e.g. gpt-4o-mini; empty = the server's default")
        self.api_key = self.secrets.api_key
        self.key_note = self.secrets.note
        self.http2 = QCheckBox("Use HTTP/2")
        self.http2.setChecked(s.llm.http2)
        form.addRow("Provider", self.provider)
        form.addRow("", self.provider_note)
        form.addRow("Endpoint base URL", self.base_url)
        form.addRow("Model", self.model)
        form.addRow("API key", self.secrets.row())
        form.addRow("", self.key_note)
        form.addRow("", self.http2)
        form.addRow("", self.send_cache_key)
        form.addRow("", self.send_usage)
        self.base_url.textChanged.connect(self.secrets.follow)
        self.base_url.textChanged.connect(lambda _text: self._update_local_note())
        self._update_local_note()
        self._probe_answer = _ProbeAnswer()
        self._probe_answer.found.connect(self._offer_ollama)
        self.ollama_probe = threading.Thread(target=_probe_ollama, args=(self._probe_answer,),
                                             name="ui-ollama-probe", daemon=True)
        """Asks whether Ollama runs, off the GUI thread: the dialog opens at once."""
        self.ollama_probe.start()

    def collect(self, into: dict[str, Any], errors: list[str]) -> None:
        llm = into["llm"]
        base_url = self.base_url.text().strip()
        if base_url and not base_url.lower().startswith(("http://", "https://")):
            errors.append("Endpoint base URL must start with http:// or https://")
        llm["base_url"] = split_url_credentials(base_url)[0] or None  # credentials: the keychain's
        llm["model"] = self.model.text().strip() or None
        llm["http2"] = self.http2.isChecked()
        llm["provider"] = self.provider.currentData()
        llm["send_prompt_cache_key"] = self.send_cache_key.isChecked()
        llm["send_include_usage"] = self.send_usage.isChecked()
        kind = self.local_kind.currentData()
        if kind == BUNDLED:
            llm["local_model"] = BUNDLED
        elif kind == "gguf":
            path = self.gguf_path.text().strip()
            try:
                check_gguf(path) if path else None
            except LocalModelError as exc:
                errors.append(str(exc))
            if not path:
                errors.append("GGUF file: choose a .gguf file, or pick the bundled model")
            llm["local_model"] = path or BUNDLED

    def save_secrets(self) -> None:
        """Store the key and the URL's credentials for the base URL's host (on Save)."""
        self.secrets.save(self.base_url.text())

    # --- on this computer ---------------------------------------------------------------

    def _local_rows(self, form: QFormLayout, s: Settings) -> None:
        """The model on this computer: bundled, a GGUF file, or an Ollama found running."""
        self.ollama_found: OllamaFound | None = None
        self.ollama_state = "looking"
        """``looking`` until the probe answers, then ``found`` or ``absent``."""
        self.local_kind = QComboBox()
        self.local_kind.addItem("Bundled SmolLM2-135M (built in, small and fast)", BUNDLED)
        self.local_kind.addItem("A GGUF file (any llama.cpp model you downloaded)", "gguf")
        self.local_kind.addItem("Local Ollama (looking for it…)", OLLAMA)
        kind = OLLAMA if s.llm.provider == OLLAMA else BUNDLED if bundled_local_model(s.llm) else "gguf"
        self.local_kind.setCurrentIndex(self.local_kind.findData(kind))
        self._set_ollama_enabled(kind == OLLAMA)
        self.local_kind.activated.connect(lambda _index: self._local_chosen(self.local_kind.currentData()))
        self.gguf_path = QLineEdit("" if bundled_local_model(s.llm) else s.llm.local_model)
        self.gguf_path.setPlaceholderText("a .gguf file")
        browse = QPushButton("Browse…")

        def pick() -> None:
            path, _ = QFileDialog.getOpenFileName(
                self, "Local model", self.gguf_path.text() or str(Path.home()),
                "GGUF models (*.gguf);;All files (*)")
            if path:
                self.gguf_path.setText(path)

        browse.clicked.connect(pick)
        self.gguf_row = QWidget()
        row = QHBoxLayout(self.gguf_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.gguf_path, 1)
        row.addWidget(browse)
        self.ollama_model = QComboBox()
        if s.llm.provider == OLLAMA and s.llm.model:
            self.ollama_model.addItem(s.llm.model)
        self.ollama_model.activated.connect(lambda _index: self._ollama_model_chosen())
        self.local_note = hint_label()
        self._local_form = form
        form.addRow(section("On this computer"))
        form.addRow("Local model", self.local_kind)
        form.addRow("GGUF file", self.gguf_row)
        form.addRow("Ollama model", self.ollama_model)
        form.addRow("", self.local_note)
        self._show_local_rows()

    def _set_ollama_enabled(self, on: bool) -> None:
        item = self.local_kind.model().item(self.local_kind.findData(OLLAMA))  # type: ignore[attr-defined]
        item.setEnabled(on)

    def _show_local_rows(self) -> None:
        kind = self.local_kind.currentData()
        self._local_form.setRowVisible(self.gguf_row, kind == "gguf")
        self._local_form.setRowVisible(self.ollama_model, kind == OLLAMA)

    def _offer_ollama(self, found: OllamaFound | None) -> None:
        """Offer Ollama (with its models) when it runs; nothing else changes until the user
        picks it: detection is never a switch."""
        self.ollama_found = found
        self.ollama_state = "found" if found is not None else "absent"
        index = self.local_kind.findData(OLLAMA)
        chosen = self.local_kind.currentData() == OLLAMA
        if found is None:
            self.local_kind.setItemText(index, "Local Ollama (not running)")
            self._set_ollama_enabled(chosen)
        else:
            count = len(found.models)
            self.local_kind.setItemText(
                index, f"Local Ollama (running, {count} model{'s' if count != 1 else ''})")
            self._set_ollama_enabled(True)
            current = self.ollama_model.currentText()
            self.ollama_model.clear()
            self.ollama_model.addItems(list(found.models))
            if current:
                if self.ollama_model.findText(current) < 0:
                    self.ollama_model.addItem(current)
                self.ollama_model.setCurrentText(current)
        self._update_local_note()

    def _local_chosen(self, kind: str) -> None:
        """The user picked a local model: Ollama fills the endpoint as its preset does;
        going back to the embedded server empties an Ollama endpoint (other endpoints stay,
        with a note that they come first)."""
        if kind == OLLAMA:
            self.provider.setCurrentIndex(self.provider.findData(OLLAMA))
            self._apply_preset(OLLAMA)
            if self.ollama_found is not None:
                self.base_url.setText(self.ollama_found.base_url)
            self._ollama_model_chosen()
        elif self.provider.currentData() == OLLAMA:
            self.provider.setCurrentIndex(self.provider.findData(CUSTOM_PROVIDER))
            self.provider_note.setText("")
            self.base_url.setText("")
            self.model.setText("")
            before = self._original.llm if self._original.llm.provider != OLLAMA else LlmConfig()
            self.send_cache_key.setChecked(before.send_prompt_cache_key)  # as they were before Ollama's
            self.send_usage.setChecked(before.send_include_usage)
        self._show_local_rows()
        self._update_local_note()

    def _ollama_model_chosen(self) -> None:
        name = self.ollama_model.currentText().strip()
        if self.local_kind.currentData() == OLLAMA and name:
            self.model.setText(name)

    def _update_local_note(self) -> None:
        kind = self.local_kind.currentData()
        if kind == OLLAMA:
            if self.ollama_state == "absent":
                text = "Ollama is not running: start it (ollama serve) and pull a model."
            elif self.ollama_found is not None and not self.ollama_found.models:
                text = "Ollama runs but has no model yet: ollama pull qwen2.5:3b"
            else:
                text = "Answers from Ollama, on this computer; no API key needed."
        elif self.base_url.text().strip():
            text = "The endpoint below answers while its base URL is set: empty it to use this model."
        elif kind == "gguf":
            text = "Runs in the built-in llama.cpp server; a larger model answers better and starts slower."
        else:
            text = ""
        if kind != OLLAMA and self.ollama_found is not None and self.ollama_found.models:
            count = len(self.ollama_found.models)
            offer = (f"Ollama is running here with {count} model{'s' if count != 1 else ''}: "
                     "choose Local Ollama above to answer with one.")
            text = f"{text}\n{offer}" if text else offer
        self.local_note.setText(text)
        self.local_note.setVisible(bool(text))
        dialog = self.window()
        if dialog is not self:  # a longer note never clips a row
            dialog.resize(dialog.size().expandedTo(dialog.sizeHint()))

    # --- the endpoint -------------------------------------------------------------------

    def _preset_chosen(self, key: str) -> None:
        """A provider picked in the list: the local choice follows when it is or was Ollama."""
        self._apply_preset(key)
        if key == OLLAMA:
            self._set_ollama_enabled(True)
            self.local_kind.setCurrentIndex(self.local_kind.findData(OLLAMA))
        elif self.local_kind.currentData() == OLLAMA:
            self.local_kind.setCurrentIndex(self.local_kind.findData("gguf" if self.gguf_path.text().strip()
                                                                     else BUNDLED))
        self._show_local_rows()
        self._update_local_note()

    def _apply_preset(self, key: str) -> None:
        """Fill in a provider's address, model and options; the user can still edit them."""
        preset = PROVIDER_PRESETS.get(key)
        if preset is None:
            self.provider_note.setText("")
            return
        self.base_url.setText(preset.base_url)
        self.model.setText(preset.model)
        self.send_cache_key.setChecked(preset.send_prompt_cache_key)
        self.send_usage.setChecked(preset.send_include_usage)
        self.provider_note.setText(preset.note)
