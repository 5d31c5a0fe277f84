"""The footer: what the copilot is doing, how loud the input is, and what it cost.

Two rows so a compact window still shows the latency breakdown in full: row one is the
live state (listening/speaking/thinking, level meter, low-latency mode, session tokens and
cost), row two the last turn's latency timeline and speculation outcome.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from app.ui.theme import LIGHT, Theme

FLOOR_DBFS = -60.0


class LevelMeter(QWidget):
    """Input level, −60…0 dBFS; repaints only itself, so it is cheap at meter rates."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._dbfs = FLOOR_DBFS
        self._theme = LIGHT
        self.setFixedSize(QSize(72, 8))
        self.setToolTip("Input level")
        self.setAccessibleName("Input level")

    @property
    def dbfs(self) -> float:
        return self._dbfs

    def set_level(self, dbfs: float) -> None:
        value = max(FLOOR_DBFS, min(0.0, dbfs))
        if abs(value - self._dbfs) >= 0.5:
            self._dbfs = value
            self.setToolTip(f"Input level {dbfs:.0f} dBFS")
            self.update()

    def apply_theme(self, theme: Theme) -> None:
        self._theme = theme
        self.update()

    def paintEvent(self, e: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QColor(self._theme.border))
        p.drawRoundedRect(rect, 4, 4)
        frac = (self._dbfs - FLOOR_DBFS) / -FLOOR_DBFS
        if frac > 0.01:
            color = self._theme.good if self._dbfs < -12 else (
                self._theme.warn if self._dbfs < -3 else self._theme.bad
            )
            p.setBrush(QColor(color))
            p.drawRoundedRect(QRectF(rect.x(), rect.y(), rect.width() * frac, rect.height()), 4, 4)
        p.end()


STATES: dict[str, tuple[str, str]] = {
    "stopped": ("Stopped", "faint"),
    "listening": ("Listening", "good"),
    "speaking": ("Interviewer speaking", "accent"),
    "thinking": ("Thinking", "warn"),
    "answering": ("Answering", "accent"),
}


class StatusPanel(QFrame):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("footer")
        self._theme = LIGHT
        self.state = "stopped"
        self._low = True
        outer = QVBoxLayout(self)
        outer.setContentsMargins(10, 5, 10, 6)
        outer.setSpacing(2)
        top = QHBoxLayout()
        top.setSpacing(10)
        self.state_label = QLabel()
        self.state_label.setObjectName("state")
        self.meter = LevelMeter()
        self.low_latency_label = QLabel()
        self.low_latency_label.setObjectName("metric")
        self.cost_label = QLabel("0 tok · $0.0000")
        self.cost_label.setObjectName("metric")
        self.cost_label.setToolTip("Tokens and cost of this session")
        top.addWidget(self.state_label)
        top.addWidget(self.meter, 0, Qt.AlignmentFlag.AlignVCenter)
        top.addWidget(self.low_latency_label)
        top.addStretch(1)
        top.addWidget(self.cost_label)
        bottom = QHBoxLayout()
        bottom.setSpacing(10)
        self.latency_label = QLabel("Last turn: —")
        self.latency_label.setObjectName("metric")
        self.latency_label.setToolTip(
            "Milestones after the interviewer fell silent: endpoint decided, request sent, "
            "first token received, first words shown"
        )
        self.latency_label.setWordWrap(True)
        small = self.latency_label.font()
        if small.pointSizeF() > 0:
            small.setPointSizeF(small.pointSizeF() * 0.9)
            self.latency_label.setFont(small)
        self.latency_label.setMinimumWidth(120)
        self.speculation_label = QLabel("")  # kept for tests/tools; shown inside the line
        bottom.addWidget(self.latency_label, 1)
        outer.addLayout(top)
        outer.addLayout(bottom)
        self.message_label = QLabel("")
        self.message_label.setObjectName("metric")
        self.message_label.setWordWrap(True)
        self.message_label.setVisible(False)
        outer.addWidget(self.message_label)
        self.set_state("stopped")
        self.set_low_latency(True)

    def set_state(self, state: str) -> None:
        self.state = state
        text, color = STATES.get(state, (state, "muted"))
        dot = getattr(self._theme, color)
        self.state_label.setText(f"<span style='color:{dot}'>●</span> {text}")

    def set_low_latency(self, on: bool) -> None:
        self._low = on
        color = self._theme.accent if on else self._theme.faint
        label = "Low latency on" if on else "Low latency off"
        self.low_latency_label.setText(f"<span style='color:{color}'>⚡</span> {label}")
        self.low_latency_label.setToolTip(
            "Speculation: requests leave before the turn is confirmed" if on else
            "Requests leave only once the turn is over"
        )

    def set_latency(self, text: str) -> None:
        self.latency_label.setText(text)
        self.latency_label.setToolTip(
            f"{text}\nMilliseconds after the interviewer fell silent (after the request for a "
            "regenerated answer): endpoint decided, request sent (spec. = speculative, sent "
            "before the endpoint), first token received, first words painted.")

    def set_speculation(self, text: str) -> None:
        self.speculation_label.setText(text)

    def set_cost(self, text: str) -> None:
        self.cost_label.setText(text)

    def set_message(self, text: str) -> None:
        self.message_label.setText(text)
        self.message_label.setVisible(bool(text))

    def apply_theme(self, theme: Theme) -> None:
        self._theme = theme
        self.meter.apply_theme(theme)
        self.set_state(self.state)
        self.set_low_latency(self._low)
