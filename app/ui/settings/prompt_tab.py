"""Settings → Prompt: the résumé, the job description and the system prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from PySide6.QtWidgets import QFileDialog, QFormLayout, QHBoxLayout, QLineEdit, QPlainTextEdit, QPushButton

from app.core.config import Settings
from app.ui.settings.tab import SettingsTab


class PromptTab(SettingsTab):
    """Two documents picked from disk (checked on Save) and the prompt's text."""

    title: ClassVar[str] = "Prompt"

    def __init__(self, s: Settings) -> None:
        super().__init__()
        form = QFormLayout(self)
        self.resume, resume_row = self._file_row(s.prompt.resume_file, "Résumé")
        self.job, job_row = self._file_row(s.prompt.job_description_file, "Job description")
        self.system_prompt = QPlainTextEdit(s.prompt.system_prompt or "")
        self.system_prompt.setPlaceholderText("empty = the built-in prompt")
        form.addRow("Résumé", resume_row)
        form.addRow("Job description", job_row)
        form.addRow("System prompt", self.system_prompt)

    def collect(self, into: dict[str, Any], errors: list[str]) -> None:
        prompt = into["prompt"]
        for key, edit in (("resume_file", self.resume), ("job_description_file", self.job)):
            value = edit.text().strip()
            if value and not Path(value).expanduser().is_file():
                errors.append(f"File not found: {value}")
            prompt[key] = value or None
        prompt["system_prompt"] = self.system_prompt.toPlainText().strip() or None

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
