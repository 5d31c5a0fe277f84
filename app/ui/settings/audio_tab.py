"""Settings → Audio & speech: whom to listen to, and how to read what they say.

The interviewer's source and device, your microphone (captions only), and the
recogniser's language, Chinese script, model and glossary.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QHBoxLayout, QLineEdit, QPushButton

from app.asr.revisions import PINNED_REVISIONS
from app.core.config import Settings
from app.ui.settings.tab import SettingsTab, section

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
ASR_MODELS = ["bundled", *PINNED_REVISIONS]
"""What the list offers: the bundled model and the sizes downloaded at a pinned commit (any
other is typed, as ``SIZE@COMMIT``)."""
_GLOSSARY_SEPARATORS = re.compile(r"[,;\n，、；]")
"""Between glossary terms: commas and semicolons in either script (a term may hold spaces)."""


class AudioTab(SettingsTab):
    """The audio sources and the speech recognition settings."""

    title: ClassVar[str] = "Audio && speech"
    labels: ClassVar[dict[str, str]] = {
        "asr.language": "Language",
        "asr.chinese_script": "Chinese captions",
        "asr.model": "ASR model",
        "asr.glossary": "Glossary",
        "audio.source": "Audio source",
    }
    failed = Signal(str)
    """A sentence for the dialog's error line (listing the devices failed)."""

    def __init__(self, s: Settings) -> None:
        super().__init__()
        form = QFormLayout(self)
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
        form.addRow(section("The interviewer"))
        form.addRow("Audio source", self.source)
        form.addRow("Device", device_row)
        form.addRow(section("Your microphone"))
        form.addRow("", self.candidate_on)
        form.addRow("Microphone", self.candidate_device)
        form.addRow(section("Speech recognition"))
        form.addRow("Language", self.language)
        form.addRow("Chinese captions", self.chinese_script)
        form.addRow("ASR model", self.asr_model)
        form.addRow("Glossary", self.glossary)

    def collect(self, into: dict[str, Any], errors: list[str]) -> None:
        audio, asr = into["audio"], into["asr"]
        audio["source"] = self.source.currentData()
        audio["device"] = self.device.currentText().strip() or None
        audio["candidate"] = "mic" if self.candidate_on.isChecked() else "off"
        audio["candidate_device"] = self.candidate_device.currentText().strip() or None
        asr["language"] = self.language_code()
        asr["chinese_script"] = self.chinese_script.currentData()
        asr["model"] = self.asr_model.currentText().strip()
        terms = _GLOSSARY_SEPARATORS.split(self.glossary.text())
        asr["glossary"] = [t.strip() for t in terms if t.strip()]

    def language_code(self) -> str:
        """The chosen code: a listed language's, or what was typed ("ja", "zh — …")."""
        text = self.language.currentText().strip()
        index = self.language.findText(text)
        if index >= 0:
            return str(self.language.itemData(index))
        return text.split("—")[0].strip().lower()

    def fill_devices(self, names: list[str]) -> None:
        """The same inputs in both pickers (the interviewer's and the microphone's), keeping
        what each shows."""
        for combo in (self.device, self.candidate_device):
            current = combo.currentText()
            combo.clear()
            combo.addItem("")
            combo.addItems(names)
            combo.setCurrentText(current)

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
            self.failed.emit(f"Could not list audio devices: {exc}")
            return
        self.fill_devices(names)
