"""The footer: what the copilot is doing, how loud the input is, and what it cost.

Two rows so a compact window still shows the latency breakdown in full: row one is the
live state (listening/speaking/thinking, a level meter per input — the interviewer's, and
the candidate's microphone once it delivers — low-latency mode, session tokens and cost),
row two the last turn's latency timeline and speculation outcome, with the same
turn drawn underneath as a stacked bar so where the time went reads at a glance.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.core.events import Speaker
from app.observing.timeline import Segment, SegmentKey, TurnLatency
from app.platform.redact import shown
from app.ui.qtcompat import protect_singletons
from app.ui.theme import LIGHT, Theme

FLOOR_DBFS = -60.0


def plain_label(text: str = "") -> QLabel:
    """A label that shows its text as it is: never read as HTML, whatever it holds.

    A ``QLabel`` guesses rich text from the text itself, so a status carrying a server's
    words ("warming up: <b>…</b><img src=…>") would be rendered, images and links
    included.  Labels that must style their text say ``RichText`` and escape what they show.
    """
    label = QLabel()
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setText(text)
    return label


METER_NAMES: dict[Speaker, str] = {"interviewer": "Interviewer", "candidate": "You"}


class LevelMeter(QWidget):
    """Input level, −60…0 dBFS; repaints only itself, so it is cheap at meter rates."""

    def __init__(self, parent: QWidget | None = None, *, who: str = "Input") -> None:
        super().__init__(parent)
        self._dbfs = FLOOR_DBFS
        self._theme = LIGHT
        self._who = who
        self.setFixedSize(QSize(72, 8))
        self.setToolTip(f"{who} level")
        self.setAccessibleName(f"{who} level")

    @property
    def dbfs(self) -> float:
        return self._dbfs

    def set_level(self, dbfs: float) -> None:
        value = max(FLOOR_DBFS, min(0.0, dbfs))
        if abs(value - self._dbfs) >= 0.5:
            self._dbfs = value
            self.setToolTip(f"{self._who} level {dbfs:.0f} dBFS")
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


def segment_colors(theme: Theme) -> dict[SegmentKey, str]:
    """Greys for the parts spent on the interviewer's side (silence, transcript), colour for
    the parts the answer path owns, so a slow model or a slow paint stands out."""
    return {
        "endpoint": theme.faint,
        "final": theme.muted,
        "llm": theme.accent,
        "held": theme.warn,
        "paint": theme.good,
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _on(color: QColor) -> QColor:
    """Black or white, whichever reads better on ``color`` (perceived luminance)."""
    luma = 0.299 * color.redF() + 0.587 * color.greenF() + 0.114 * color.blueF()
    return QColor("#111418") if luma > 0.6 else QColor("#ffffff")


_TIP_LABELS: dict[SegmentKey, str] = {
    "endpoint": "endpoint wait (silence → turn over)",
    "final": "final transcript",
    "llm": "LLM, still waiting for the 1st token",
    "held": "held until the guess was confirmed",
    "paint": "painted",
}


def breakdown_tooltip(lat: TurnLatency | None, theme: Theme) -> str:
    """The bar's numbers as a small table, and what the LLM span looked like in full."""
    if lat is None or lat.response is None:
        return "Last turn: no answer yet.\nThe bar splits the next answer's response latency."
    origin = "speech end" if lat.origin == "silence" else "request sent"
    end = "first words painted" if lat.shown is not None else "tokens handed to the window"
    colors = segment_colors(theme)
    rows = []
    for seg in lat.segments():
        swatch = f"<span style='color:{colors[seg.key]}'>■</span>"
        rows.append(f"<tr><td>{swatch} {escape(_TIP_LABELS[seg.key])}</td>"
                    f"<td align='right'>&nbsp;&nbsp;{seg.duration * 1000:.0f} ms</td></tr>")
    notes: list[str] = []
    span = lat.llm_span
    if span is not None:
        request, first = span
        note = f"Request → 1st token: {_ms(first - request)} in all (the strip under the bar)"
        if lat.endpoint is not None and request < lat.endpoint:
            kind = "speculatively " if lat.request_kind == "speculative" else ""
            note += f";\nsent {kind}{_ms(lat.endpoint - request)} before the endpoint"
        notes.append(note)
    if lat.speculation:
        notes.append(f"Speculation: {lat.speculation}")
    html = (f"<b>Last turn {_ms(lat.response)}</b>, {origin} → {end}"
            f"<table cellspacing='0' cellpadding='1'>{''.join(rows)}</table>")
    return html + "<br>".join(escape(n, quote=False).replace("\n", "<br>") for n in notes)


class LatencyBar(QWidget):
    """The last turn as one stacked bar: a partition of speech end → painted.

    The bar always spans the whole widget (the total is in the text above it); its parts
    are :meth:`app.observing.timeline.TurnLatency.segments`, which never overlap, so their widths
    add up to the response latency.  A request that left before the question was final
    would otherwise be invisible, so its full request → first-token span is drawn in the
    LLM colour as a tick where the request left and a thin strip along the bottom edge from
    there: for a speculative request the LLM visibly starts inside the endpoint wait and
    runs on into the LLM part.  Labels are drawn only where they fit.
    """

    HEIGHT = 18

    def __init__(self, parent: QWidget | None = None) -> None:
        protect_singletons()
        super().__init__(parent)
        self._theme = LIGHT
        self._turn: TurnLatency | None = None
        self.setFixedHeight(self.HEIGHT)
        self.setMinimumWidth(120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("Last turn latency breakdown")
        self.setToolTip(breakdown_tooltip(None, self._theme))

    @property
    def turn(self) -> TurnLatency | None:
        return self._turn

    def segments(self) -> list[Segment]:
        return self._turn.segments() if self._turn is not None else []

    def set_turn(self, lat: TurnLatency | None) -> None:
        self._turn = lat
        self.setToolTip(breakdown_tooltip(lat, self._theme))
        self.setAccessibleDescription(lat.describe() if lat is not None else "No answer yet")
        self.update()

    def apply_theme(self, theme: Theme) -> None:
        self._theme = theme
        self.setToolTip(breakdown_tooltip(self._turn, theme))
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(240, self.HEIGHT)

    def paintEvent(self, e: QPaintEvent) -> None:
        t = self._theme
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QColor(t.surface))
        p.drawRoundedRect(rect, 4, 4)
        segments = [s for s in self.segments() if s.duration > 0]
        total = segments[-1].end if segments else 0.0
        if total <= 0:
            p.setPen(QPen(QColor(t.border)))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRoundedRect(rect, 4, 4)
            p.end()
            return
        clip = QRectF(rect)
        p.setClipRect(clip)
        scale = rect.width() / total
        font = QFont(self.font())
        size = font.pointSizeF() if font.pointSizeF() > 0 else 9.0
        font.setPointSizeF(max(6.5, size * 0.78))
        p.setFont(font)
        metrics = QFontMetricsF(font)
        colors = segment_colors(t)
        path_rect = rect
        for seg in segments:
            x0 = rect.x() + seg.start * scale
            x1 = rect.x() + seg.end * scale
            part = QRectF(x0, rect.y(), max(x1 - x0, 1.0), rect.height())
            color = QColor(colors[seg.key])
            p.setClipRect(part.intersected(path_rect))
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(color)
            p.drawRoundedRect(rect, 4, 4)  # clipped: only the ends of the bar are rounded
            text = f"{seg.label} {seg.duration * 1000:.0f}"
            if metrics.horizontalAdvance(text) + 6 > part.width():
                text = f"{seg.duration * 1000:.0f}"
            if metrics.horizontalAdvance(text) + 6 <= part.width():
                p.setPen(_on(color))
                p.drawText(part.adjusted(0, -1, 0, -1), Qt.AlignmentFlag.AlignCenter, text)
        p.setClipping(False)
        span = self._turn.llm_span if self._turn is not None else None
        if span is not None:
            x0 = rect.x() + max(0.0, span[0]) * scale
            x1 = rect.x() + min(total, span[1]) * scale
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QColor(colors["llm"]))
            p.setClipRect(rect)
            p.drawRect(QRectF(x0, rect.bottom() - 3, max(x1 - x0, 1.0), 3))
            p.drawRect(QRectF(x0, rect.y(), 1.5, rect.height()))  # the request leaving
        p.end()


STATES: dict[str, tuple[str, str]] = {
    "stopped": ("Stopped", "faint"),
    "starting": ("Starting…", "warn"),
    "failed": ("Not listening", "warn"),
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
        self.state_label.setTextFormat(Qt.TextFormat.RichText)  # a coloured dot, then the state escaped
        self.state_label.setObjectName("state")
        self.meters: dict[Speaker, LevelMeter] = {}
        self.meter_labels: dict[Speaker, QLabel] = {}
        for speaker, who in METER_NAMES.items():
            self.meters[speaker] = LevelMeter(who="Interviewer" if speaker == "interviewer"
                                              else "Your microphone")
            label = plain_label(who)
            label.setObjectName("metric")
            self.meter_labels[speaker] = label
        self.meter = self.meters["interviewer"]
        self.candidate_meter = self.meters["candidate"]
        self.low_latency_label = QLabel()
        self.low_latency_label.setTextFormat(Qt.TextFormat.RichText)  # a coloured icon, then a constant
        self.low_latency_label.setObjectName("metric")
        self.cost_label = plain_label("0 tok · $0.0000")
        self.cost_label.setObjectName("metric")
        self.cost_label.setToolTip("Tokens and cost of this session")
        top.addWidget(self.state_label)
        top.addWidget(self._meter_stack(), 0, Qt.AlignmentFlag.AlignVCenter)
        top.addWidget(self.low_latency_label)
        top.addStretch(1)
        top.addWidget(self.cost_label)
        bottom = QHBoxLayout()
        bottom.setSpacing(10)
        self.latency_label = plain_label("Last turn: —")
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
        self.speculation_label = plain_label()  # kept for tests/tools; shown inside the line
        bottom.addWidget(self.latency_label, 1)
        self.breakdown = LatencyBar()
        outer.addLayout(top)
        outer.addLayout(bottom)
        outer.addWidget(self.breakdown)
        self.message_label = plain_label()  # a stage's message: may quote a server's words
        self.message_label.setObjectName("metric")
        self.message_label.setWordWrap(True)
        self.message_label.setVisible(False)
        outer.addWidget(self.message_label)
        self.set_state("stopped")
        self.set_low_latency(True)
        self.hide_candidate_meter()

    def _meter_stack(self) -> QWidget:
        """The meters one above the other, names to their left: as narrow as one meter, so
        the row still fits a compact window when both sides are heard."""
        stack = QWidget()
        grid = QGridLayout(stack)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(5)
        grid.setVerticalSpacing(2)
        for row, (speaker, meter) in enumerate(self.meters.items()):
            label = self.meter_labels[speaker]
            small = label.font()
            if small.pointSizeF() > 0:
                small.setPointSizeF(small.pointSizeF() * 0.8)
                label.setFont(small)
            grid.addWidget(label, row, 0, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            grid.addWidget(meter, row, 1, Qt.AlignmentFlag.AlignVCenter)
        return stack

    def set_level(self, speaker: Speaker, dbfs: float) -> None:
        """A ``level`` reading; the candidate's first one brings their meter (and both
        meters' names, so the two bars cannot be confused) into view."""
        if speaker == "candidate" and self.candidate_meter.isHidden():
            for widget in (*self.meters.values(), *self.meter_labels.values()):
                widget.setVisible(True)
        self.meters[speaker].set_level(dbfs)

    def hide_candidate_meter(self) -> None:
        """One meter, unlabelled, as long as only the interviewer is heard (a new session
        may run without the microphone)."""
        self.candidate_meter.set_level(FLOOR_DBFS)
        self.candidate_meter.setVisible(False)
        for label in self.meter_labels.values():
            label.setVisible(False)

    def set_state(self, state: str) -> None:
        self.state = state
        text, color = STATES.get(state, (state, "muted"))
        dot = getattr(self._theme, color)
        self.state_label.setText(f"<span style='color:{dot}'>●</span> {escape(text)}")

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

    def set_breakdown(self, lat: TurnLatency | None) -> None:
        """Redraw the stacked bar for ``lat`` (the timeline's last turn; None before any)."""
        self.breakdown.set_turn(lat)

    def set_speculation(self, text: str) -> None:
        self.speculation_label.setText(text)

    def set_cost(self, text: str) -> None:
        self.cost_label.setText(text)

    def set_message(self, text: str) -> None:
        """The status line: ``text`` made safe (:func:`app.platform.redact.shown`)."""
        text = shown(text)
        self.message_label.setText(text)
        self.message_label.setVisible(bool(text))

    def apply_theme(self, theme: Theme) -> None:
        self._theme = theme
        for meter in self.meters.values():
            meter.apply_theme(theme)
        self.breakdown.apply_theme(theme)
        self.set_state(self.state)
        self.set_low_latency(self._low)
