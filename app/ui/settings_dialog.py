"""Settings editor: every value goes through the same pydantic models as the TOML file.

Nothing is accepted that ``load_settings`` would later reject, so the file the dialog
writes always loads clean.  The API key never touches the settings: it goes to the OS
keychain through :mod:`app.platform.secrets` (and is shown only as a password field).
"""

from __future__ import annotations

import contextlib
import re
import threading
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.core.config import PROVIDER_PRESETS, LlmConfig, Settings, save_settings
from app.llm.endpoint import BUNDLED, bundled_local_model
from app.llm.gguf import LocalModelError, check_gguf
from app.llm.ollama import OllamaFound, find_ollama
from app.platform import secrets
from app.ui.hotkeys import ACTIONS, HotkeyError, parse_hotkey

TURN_FIELDS: dict[str, str] = {
    "speculate_silence_ms": "Speculate after silence (ms)",
    "endpoint_silence_ms": "End of turn after silence (ms)",
    "endpoint_question_silence_ms": "…after a question mark (ms)",
    "endpoint_thinking_silence_ms": "…after a thinking word (ms)",
}
LANGUAGES = {
    "en": "English",
    "zh": "Chinese (Mandarin)",
    "auto": "Detect (English or Chinese, on the first question)",
}
"""The languages the app has end words and answer prompts for; another Whisper code can
be typed in."""
CHINESE_SCRIPTS = {
    "simplified": "Simplified (简体)",
    "traditional": "Traditional (繁體)",
    "taiwan": "Traditional, Taiwan (臺灣)",
    "hongkong": "Traditional, Hong Kong (香港)",
}
CUSTOM_PROVIDER = "custom"
OLLAMA = "ollama"
"""The key of the Ollama preset in PROVIDER_PRESETS, and of the Ollama local choice."""
_GLOSSARY_SEPARATORS = re.compile(r"[,;\n，、；]")
"""Between glossary terms: commas and semicolons in either script (a term may hold spaces)."""
ASR_MODELS = ["bundled", "tiny.en", "base.en", "small.en", "tiny", "base", "small", "medium"]
_LABELS: dict[str, str] = {
    **{f"turns.{k}": v for k, v in TURN_FIELDS.items()},
    "llm.base_url": "Endpoint base URL",
    "llm.model": "Model",
    "asr.language": "Language",
    "asr.chinese_script": "Chinese captions",
    "asr.model": "ASR model",
    "asr.glossary": "Glossary",
    "audio.source": "Audio source",
    "answer.max_speculations": "Max speculations",
}


def _section(title: str) -> QLabel:
    """A bold heading row inside a form: which side of the call the rows below are for."""
    label = QLabel(f"<b>{title}</b>")
    label.setContentsMargins(0, 6, 0, 0)
    return label


class SettingsDialog(QDialog):
    """Edit settings; on OK, validate, store the key in the keychain and write the TOML."""

    ollama_probed = Signal(object)
    """The Ollama probe's result (:class:`OllamaFound` or None), from the probe's thread."""

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
        self._loaded_key = ""
        tabs = QTabWidget()
        tabs.addTab(self._model_tab(settings), "Model")
        tabs.addTab(self._audio_tab(settings), "Audio && speech")
        tabs.addTab(self._prompt_tab(settings), "Prompt")
        tabs.addTab(self._turns_tab(settings), "Turns")
        tabs.addTab(self._hotkeys_tab(settings), "Hotkeys")
        tabs.addTab(self._prices_tab(settings), "Prices")
        tabs.addTab(self._window_tab(settings), "Window")
        self.tabs = tabs
        self.error_label = QLabel("")
        self.error_label.setObjectName("error")
        self.error_label.setWordWrap(True)
        self.error_label.setVisible(False)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
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
        self.ollama_probed.connect(self._offer_ollama)
        self.ollama_probe = threading.Thread(target=self._probe_ollama, name="ui-ollama-probe", daemon=True)
        """Asks whether Ollama runs, off the GUI thread: the dialog opens at once."""
        self.ollama_probe.start()

    # --- tabs -------------------------------------------------------------------------

    def _model_tab(self, s: Settings) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        self._local_rows(form, s)
        form.addRow(_section("Or an endpoint (a provider, a relay, any OpenAI-compatible server)"))
        self.provider = QComboBox()
        self.provider.addItem("Custom", CUSTOM_PROVIDER)
        for key, preset in PROVIDER_PRESETS.items():
            self.provider.addItem(preset.label, key)
        self.provider.setCurrentIndex(max(0, self.provider.findData(s.llm.provider)))
        self.provider.activated.connect(lambda _index: self._preset_chosen(self.provider.currentData()))
        self.provider_note = QLabel(PROVIDER_PRESETS[s.llm.provider].note
                                    if s.llm.provider in PROVIDER_PRESETS else "")
        self.provider_note.setWordWrap(True)
        self.provider_note.setObjectName("paneHint")
        self.send_cache_key = QCheckBox("Send prompt_cache_key (OpenAI's cache routing)")
        self.send_cache_key.setChecked(s.llm.send_prompt_cache_key)
        self.send_usage = QCheckBox("Ask for usage in the stream (stream_options.include_usage)")
        self.send_usage.setChecked(s.llm.send_include_usage)
        self.base_url = QLineEdit(s.llm.base_url or "")
        self.base_url.setPlaceholderText("empty = built-in local model (or OPENAI_BASE_URL)")
        self.model = QLineEdit(s.llm.model or "")
        self.model.setPlaceholderText("e.g. gpt-4o-mini; empty = the server's default")
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setPlaceholderText("stored in the system keychain, never in the file")
        self.key_note = QLabel("")
        self.key_note.setWordWrap(True)
        self.key_note.setObjectName("paneHint")
        try:
            stored = secrets.get_api_key(s.llm.base_url, environ={})  # keychain only
            self._loaded_key = stored or ""
        except secrets.SecretStoreError as exc:
            self.key_note.setText(str(exc))
        self.api_key.setText(self._loaded_key)
        show = QCheckBox("Show")
        show.toggled.connect(
            lambda on: self.api_key.setEchoMode(
                QLineEdit.EchoMode.Normal if on else QLineEdit.EchoMode.Password
            )
        )
        key_row = QHBoxLayout()
        key_row.addWidget(self.api_key, 1)
        key_row.addWidget(show)
        self.http2 = QCheckBox("Use HTTP/2")
        self.http2.setChecked(s.llm.http2)
        form.addRow("Provider", self.provider)
        form.addRow("", self.provider_note)
        form.addRow("Endpoint base URL", self.base_url)
        form.addRow("Model", self.model)
        form.addRow("API key", key_row)
        form.addRow("", self.key_note)
        form.addRow("", self.http2)
        form.addRow("", self.send_cache_key)
        form.addRow("", self.send_usage)
        self.base_url.textChanged.connect(lambda _text: self._update_local_note())
        self._update_local_note()
        return page

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
        self.local_note = QLabel("")
        self.local_note.setWordWrap(True)
        self.local_note.setObjectName("paneHint")
        self._local_form = form
        form.addRow(_section("On this computer"))
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

    def _probe_ollama(self) -> None:
        found = find_ollama()
        with contextlib.suppress(RuntimeError):  # the dialog was closed and deleted meanwhile
            self.ollama_probed.emit(found)

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
        self.resize(self.size().expandedTo(self.sizeHint()))  # a longer note never clips a row

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

    def _audio_tab(self, s: Settings) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        self.source = QComboBox()
        sources = ["mic", "loopback"] + (["file"] if s.audio.source == "file" else [])
        labels = {"mic": "Microphone", "loopback": "System audio (loopback)", "file": "File"}
        for src in sources:
            self.source.addItem(labels[src], src)
        self.source.setCurrentIndex(max(0, self.source.findData(s.audio.source)))
        self.device = self._device_combo(s.audio.device)
        refresh = QPushButton("List devices")
        refresh.setToolTip("Fill both device lists with this computer's audio inputs")
        refresh.clicked.connect(self._list_devices)
        device_row = QHBoxLayout()
        device_row.addWidget(self.device, 1)
        device_row.addWidget(refresh)
        self.candidate_on = QCheckBox('Transcribe my microphone too (shown as "You")')
        self.candidate_on.setToolTip(
            "Your answers become context for follow-up questions and close the interviewer's "
            "turn; they are never answered. With speakers instead of headphones the "
            "interviewer's echo is detected and dropped.")
        self.candidate_on.setChecked(s.audio.candidate == "mic")
        self.candidate_device = self._device_combo(s.audio.candidate_device)
        self.candidate_device.setEnabled(self.candidate_on.isChecked())
        self.candidate_on.toggled.connect(self.candidate_device.setEnabled)
        self.language = QComboBox()
        self.language.setEditable(True)
        for code, label in LANGUAGES.items():
            self.language.addItem(f"{code} — {label}", code)
        index = self.language.findData(s.asr.language)
        if index >= 0:
            self.language.setCurrentIndex(index)
        else:
            self.language.setCurrentText(s.asr.language)
        self.chinese_script = QComboBox()
        for script, label in CHINESE_SCRIPTS.items():
            self.chinese_script.addItem(label, script)
        self.chinese_script.setCurrentIndex(max(0, self.chinese_script.findData(s.asr.chinese_script)))
        self.asr_model = QComboBox()
        self.asr_model.setEditable(True)
        self.asr_model.addItems(ASR_MODELS)
        self.asr_model.setCurrentText(s.asr.model)
        self.glossary = QLineEdit(", ".join(s.asr.glossary))
        self.glossary.setPlaceholderText("CockroachDB, ArgoCD, 星澜支付")
        self.glossary.setToolTip(
            "Names your interviews will use (products, companies, tools), separated by commas: "
            "captions spell them right more often. The rarest names of your résumé and the job "
            "description are added on their own.")
        form.addRow(_section("The interviewer"))
        form.addRow("Audio source", self.source)
        form.addRow("Device", device_row)
        form.addRow(_section("Your microphone"))
        form.addRow("", self.candidate_on)
        form.addRow("Microphone", self.candidate_device)
        form.addRow(_section("Speech recognition"))
        form.addRow("Language", self.language)
        form.addRow("Chinese captions", self.chinese_script)
        form.addRow("ASR model", self.asr_model)
        form.addRow("Glossary", self.glossary)
        return page

    def language_code(self) -> str:
        """The chosen code: a listed language's, or what was typed ("ja", "zh — …")."""
        text = self.language.currentText().strip()
        index = self.language.findText(text)
        if index >= 0:
            return str(self.language.itemData(index))
        return text.split("—")[0].strip().lower()

    @staticmethod
    def _device_combo(value: str | None) -> QComboBox:
        combo = QComboBox()
        combo.setEditable(True)
        combo.addItem("")
        combo.setCurrentText(value or "")
        edit = combo.lineEdit()
        if edit is not None:
            edit.setPlaceholderText("system default (or a name / index)")
        return combo

    def _list_devices(self) -> None:
        """User-initiated only: PortAudio's start-up can take a moment."""
        try:
            import sounddevice

            names = [d["name"] for d in sounddevice.query_devices() if d["max_input_channels"] > 0]
        except Exception as exc:
            self._show_error(f"Could not list audio devices: {exc}")
            return
        self.fill_devices(names)

    def fill_devices(self, names: list[str]) -> None:
        """The same inputs in both pickers (the interviewer's and the microphone's), keeping
        what each shows."""
        for combo in (self.device, self.candidate_device):
            current = combo.currentText()
            combo.clear()
            combo.addItem("")
            combo.addItems(names)
            combo.setCurrentText(current)

    def _file_row(self, value: str | None, title: str) -> tuple[QLineEdit, QHBoxLayout]:
        edit = QLineEdit(value or "")
        edit.setPlaceholderText("none")
        browse = QPushButton("Browse…")

        def pick() -> None:
            path, _ = QFileDialog.getOpenFileName(
                self, title, edit.text() or str(Path.home()),
                "Documents (*.docx *.pdf *.txt *.md);;All files (*)",
            )
            if path:
                edit.setText(path)

        browse.clicked.connect(pick)
        row = QHBoxLayout()
        row.addWidget(edit, 1)
        row.addWidget(browse)
        return edit, row

    def _prompt_tab(self, s: Settings) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        self.resume, resume_row = self._file_row(s.prompt.resume_file, "Résumé")
        self.job, job_row = self._file_row(s.prompt.job_description_file, "Job description")
        self.system_prompt = QPlainTextEdit(s.prompt.system_prompt or "")
        self.system_prompt.setPlaceholderText("empty = the built-in prompt")
        form.addRow("Résumé", resume_row)
        form.addRow("Job description", job_row)
        form.addRow("System prompt", self.system_prompt)
        return page

    def _turns_tab(self, s: Settings) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        self.turn_spins: dict[str, QSpinBox] = {}
        for name, label in TURN_FIELDS.items():
            spin = QSpinBox()
            spin.setRange(0, 60_000)  # the model's own bounds are checked on save
            spin.setValue(int(getattr(s.turns, name)))
            self.turn_spins[name] = spin
            form.addRow(label, spin)
        self.low_latency = QCheckBox("Low-latency mode at start (speculative requests)")
        self.low_latency.setChecked(s.answer.low_latency)
        self.max_spec = QSpinBox()
        self.max_spec.setRange(0, 100)
        self.max_spec.setValue(s.answer.max_speculations)
        form.addRow("", self.low_latency)
        form.addRow("Max speculations per turn", self.max_spec)
        return page

    def _hotkeys_tab(self, s: Settings) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        self.hotkey_edits: dict[str, QLineEdit] = {}
        for action, label in ACTIONS.items():
            edit = QLineEdit(getattr(s.hotkeys, action))
            edit.setPlaceholderText("e.g. ctrl+alt+l")
            self.hotkey_edits[action] = edit
            form.addRow(label, edit)
        note = QLabel("Modifiers: ctrl, alt (option), shift, cmd (win/super). "
                      "Keys: a–z, 0–9, f1–f24, space, arrows, punctuation.")
        note.setWordWrap(True)
        note.setObjectName("paneHint")
        form.addRow("", note)
        return page

    def _prices_tab(self, s: Settings) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        table = QTableWidget(0, 4)
        table.setHorizontalHeaderLabels(["Model", "Input $/Mtok", "Cached $/Mtok", "Output $/Mtok"])
        table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        table.verticalHeader().setVisible(False)
        for model, price in s.prices.items():
            self._add_price_row(table, model, price.input_per_mtok, price.cached_input_per_mtok,
                                price.output_per_mtok)
        add = QPushButton("Add")
        add.clicked.connect(lambda: self._add_price_row(table, "", 0.0, 0.0, 0.0))
        remove = QPushButton("Remove")
        remove.clicked.connect(lambda: table.removeRow(table.currentRow()))
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(add)
        row.addWidget(remove)
        layout.addWidget(table)
        layout.addLayout(row)
        self.prices = table
        return page

    @staticmethod
    def _add_price_row(table: QTableWidget, model: str, *values: float) -> None:
        r = table.rowCount()
        table.insertRow(r)
        table.setItem(r, 0, QTableWidgetItem(model))
        for c, v in enumerate(values, start=1):
            table.setItem(r, c, QTableWidgetItem(f"{v:g}"))

    def _window_tab(self, s: Settings) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        self.stay_on_top = QCheckBox("Keep the window above others")
        self.stay_on_top.setChecked(s.ui.stay_on_top)
        self.large_font = QCheckBox("Large text in the transcript and answer")
        self.large_font.setChecked(s.ui.large_font)
        self.theme = QComboBox()
        for mode, label in (("system", "Follow the system"), ("light", "Light"), ("dark", "Dark")):
            self.theme.addItem(label, mode)
        self.theme.setCurrentIndex(max(0, self.theme.findData(s.ui.theme)))
        form.addRow("", self.stay_on_top)
        form.addRow("", self.large_font)
        form.addRow("Theme", self.theme)
        return page

    # --- validation -------------------------------------------------------------------

    def collect(self) -> Settings:
        """The edited settings, validated; raises ValueError with a user-facing message."""
        errors: list[str] = []
        data: dict[str, Any] = self._original.model_dump(mode="python")
        base_url = self.base_url.text().strip()
        if base_url and not base_url.lower().startswith(("http://", "https://")):
            errors.append("Endpoint base URL must start with http:// or https://")
        data["llm"]["base_url"] = base_url or None
        data["llm"]["model"] = self.model.text().strip() or None
        data["llm"]["http2"] = self.http2.isChecked()
        data["llm"]["provider"] = self.provider.currentData()
        data["llm"]["send_prompt_cache_key"] = self.send_cache_key.isChecked()
        data["llm"]["send_include_usage"] = self.send_usage.isChecked()
        kind = self.local_kind.currentData()
        if kind == BUNDLED:
            data["llm"]["local_model"] = BUNDLED
        elif kind == "gguf":
            path = self.gguf_path.text().strip()
            try:
                check_gguf(path) if path else None
            except LocalModelError as exc:
                errors.append(str(exc))
            if not path:
                errors.append("GGUF file: choose a .gguf file, or pick the bundled model")
            data["llm"]["local_model"] = path or BUNDLED
        data["audio"]["source"] = self.source.currentData()
        data["audio"]["device"] = self.device.currentText().strip() or None
        data["audio"]["candidate"] = "mic" if self.candidate_on.isChecked() else "off"
        data["audio"]["candidate_device"] = self.candidate_device.currentText().strip() or None
        data["asr"]["language"] = self.language_code()
        data["asr"]["chinese_script"] = self.chinese_script.currentData()
        data["asr"]["model"] = self.asr_model.currentText().strip()
        terms = _GLOSSARY_SEPARATORS.split(self.glossary.text())
        data["asr"]["glossary"] = [t.strip() for t in terms if t.strip()]
        for key, edit in (("resume_file", self.resume), ("job_description_file", self.job)):
            value = edit.text().strip()
            if value and not Path(value).expanduser().is_file():
                errors.append(f"File not found: {value}")
            data["prompt"][key] = value or None
        data["prompt"]["system_prompt"] = self.system_prompt.toPlainText().strip() or None
        for name, spin in self.turn_spins.items():
            data["turns"][name] = spin.value()
        data["answer"]["low_latency"] = self.low_latency.isChecked()
        data["answer"]["max_speculations"] = self.max_spec.value()
        for action, edit in self.hotkey_edits.items():
            try:
                data["hotkeys"][action] = parse_hotkey(edit.text()).canonical()
            except HotkeyError as exc:
                errors.append(f"{ACTIONS[action]}: {exc}")
        data["prices"] = self._collect_prices(errors)
        data["ui"] = {
            "stay_on_top": self.stay_on_top.isChecked(),
            "large_font": self.large_font.isChecked(),
            "theme": self.theme.currentData(),
        }
        try:
            settings = Settings.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                key = ".".join(str(p) for p in err["loc"])
                errors.append(f"{_LABELS.get(key, key)}: {err['msg']}")
            settings = None
        if errors or settings is None:
            raise ValueError("\n".join(errors))
        return settings

    def _collect_prices(self, errors: list[str]) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        names = ("input_per_mtok", "cached_input_per_mtok", "output_per_mtok")
        for r in range(self.prices.rowCount()):
            item = self.prices.item(r, 0)
            model = item.text().strip() if item else ""
            if not model:
                continue
            row: dict[str, float] = {}
            for c, name in enumerate(names, start=1):
                cell = self.prices.item(r, c)
                try:
                    row[name] = float(cell.text()) if cell and cell.text().strip() else 0.0
                except ValueError:
                    errors.append(f"Prices, {model}: {cell.text() if cell else ''!r} is not a number")
                    row[name] = 0.0
            out[model] = row
        return out

    def _show_error(self, text: str) -> None:
        self.error_label.setText(text)
        self.error_label.setVisible(bool(text))

    def accept(self) -> None:
        try:
            settings = self.collect()
        except ValueError as exc:
            self._show_error(str(exc))
            return
        key = self.api_key.text().strip()
        url_changed = settings.llm.base_url != self._original.llm.base_url
        try:
            if key and (key != self._loaded_key or url_changed):
                secrets.set_api_key(settings.llm.base_url, key)
            elif not key and self._loaded_key:
                secrets.delete_api_key(settings.llm.base_url)
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
