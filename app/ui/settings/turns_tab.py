"""Settings → Turns: when a question counts as asked, and how eagerly to guess it."""

from __future__ import annotations

from typing import Any, ClassVar

from PySide6.QtWidgets import QCheckBox, QFormLayout, QSpinBox

from app.core.config import Settings
from app.ui.settings.tab import SettingsTab

TURN_FIELDS: dict[str, str] = {
    "speculate_silence_ms": "Speculate after silence (ms)",
    "endpoint_silence_ms": "End of turn after silence (ms)",
    "endpoint_question_silence_ms": "…after a question mark (ms)",
    "endpoint_thinking_silence_ms": "…after a thinking word (ms)",
}


class TurnsTab(SettingsTab):
    """The end-of-turn silences and the low-latency (speculation) options."""

    title: ClassVar[str] = "Turns"
    labels: ClassVar[dict[str, str]] = {
        **{f"turns.{k}": v for k, v in TURN_FIELDS.items()},
        "answer.max_speculations": "Max speculations",
    }

    def __init__(self, s: Settings) -> None:
        super().__init__()
        form = QFormLayout(self)
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

    def collect(self, into: dict[str, Any], errors: list[str]) -> None:
        for name, spin in self.turn_spins.items():
            into["turns"][name] = spin.value()
        into["answer"]["low_latency"] = self.low_latency.isChecked()
        into["answer"]["max_speculations"] = self.max_spec.value()
