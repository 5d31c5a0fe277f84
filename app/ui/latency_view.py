"""View → Response latency…: every answered turn of the session as one bar, live.

The numbers come from the window's :class:`~app.observing.timeline.Timeline`, so the chart can
never disagree with the status bar or the exported transcript.  The dialog listens to the
window's :class:`~app.ui.bridge.EventBridge` with a queued connection made after the
window's own, so Qt delivers each event to the window (which feeds the timeline) before it
reaches the dialog; nothing polls.  Drawn with QPainter: a plotting library in the GUI
would cost startup time and bundle size for a dozen rectangles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QHelpEvent, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QDialog, QLabel, QSizePolicy, QToolTip, QVBoxLayout, QWidget

from app.core.events import FinalEvent, PaintedEvent, SpeculationEvent, TokenEvent
from app.observing.percentile import median, p95
from app.observing.timeline import Outcome, Timeline
from app.ui.bridge import EventBridge
from app.ui.qtcompat import protect_singletons
from app.ui.theme import DARK, LIGHT, Theme

OUTCOME_LABELS: dict[Outcome, str] = {
    "hit": "speculation hit",
    "miss": "speculation missed",
    "none": "no speculation",
}

_RELEVANT = (TokenEvent, PaintedEvent, SpeculationEvent, FinalEvent)
"""The events that can add a turn or change one's latency or outcome."""


def outcome_colors(theme: Theme) -> dict[Outcome, str]:
    """Green when a guess paid off, amber when guesses were thrown away, blue otherwise."""
    return {"hit": theme.good, "miss": theme.warn, "none": theme.accent}


def theme_of(widget: QWidget) -> Theme:
    """The app theme in force, read from the palette :func:`app.ui.theme.apply` installed,
    so an open dialog follows a theme switch without the window telling it."""
    return DARK if widget.palette().color(QPalette.ColorRole.Window).lightness() < 128 else LIGHT


@dataclass(frozen=True)
class TurnRow:
    """One bar: a turn's response latency (seconds, speech end → painted) and outcome."""

    turn: int
    latency: float
    outcome: Outcome
    painted: bool


_STEPS = (0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0)


def _axis(longest: float) -> tuple[float, float]:
    """(top, step) of the y axis: a round step giving at most five gridlines, and a top a
    little above the slowest bar so it never touches the frame."""
    want = max(longest, 0.001) * 1.08
    step = next((s for s in _STEPS if want / s <= 5), 60.0 * math.ceil(want / 300.0))
    return step * math.ceil(want / step), step


class LatencyChart(QWidget):
    """Bars per turn in answer order, gridlines in ms, and the median and p95 as lines."""

    MARGIN_LEFT = 46.0
    MARGIN_RIGHT = 86.0
    """Room for "median 1234" beside the plot, where it never covers a bar."""
    MARGIN_TOP = 20.0
    MARGIN_BOTTOM = 22.0

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: tuple[TurnRow, ...] = ()
        self.setMinimumSize(360, 180)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setAccessibleName("Response latency per turn")

    @property
    def rows(self) -> tuple[TurnRow, ...]:
        return self._rows

    def set_rows(self, rows: tuple[TurnRow, ...]) -> None:
        self._rows = rows
        self.update()

    def bar_color(self, row: TurnRow) -> QColor:
        return QColor(outcome_colors(theme_of(self))[row.outcome])

    def _plot(self) -> QRectF:
        return QRectF(self.rect()).adjusted(self.MARGIN_LEFT, self.MARGIN_TOP,
                                            -self.MARGIN_RIGHT, -self.MARGIN_BOTTOM)

    def bar_rects(self) -> list[QRectF]:
        """Where each row's bar is drawn (also the tooltip hit areas)."""
        if not self._rows:
            return []
        plot = self._plot()
        top, _ = _axis(max(r.latency for r in self._rows))
        slot = plot.width() / len(self._rows)
        width = max(2.0, min(34.0, slot * 0.7))
        out = []
        for i, row in enumerate(self._rows):
            h = plot.height() * min(1.0, max(0.0, row.latency) / top)
            x = plot.x() + slot * i + (slot - width) / 2
            out.append(QRectF(x, plot.bottom() - h, width, h))
        return out

    def paintEvent(self, e: QPaintEvent) -> None:
        t = theme_of(self)
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.fillRect(self.rect(), QColor(t.base))
        font = QFont(self.font())
        size = font.pointSizeF() if font.pointSizeF() > 0 else 9.0
        font.setPointSizeF(size * 0.85)
        p.setFont(font)
        metrics = QFontMetricsF(font)
        if not self._rows:
            p.setPen(QColor(t.muted))
            p.drawText(QRectF(self.rect()), Qt.AlignmentFlag.AlignCenter,
                       "No answered turns yet.\nEach answer adds a bar here as it is shown.")
            p.end()
            return
        plot = self._plot()
        top, step = _axis(max(r.latency for r in self._rows))
        value = 0.0
        while value <= top + 1e-9:
            y = plot.bottom() - plot.height() * value / top
            p.setPen(QPen(QColor(t.border), 1))
            p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
            p.setPen(QColor(t.muted))
            label = f"{value * 1000:.0f}" if value < 10 else f"{value:.0f} s"
            p.drawText(QRectF(0, y - 8, self.MARGIN_LEFT - 6, 16),
                       Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, label)
            value += step
        p.drawText(QRectF(0, 2, self.MARGIN_LEFT - 6, 14),
                   Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, "ms")
        p.drawText(QRectF(plot.right() + 14, plot.bottom() + 3, self.MARGIN_RIGHT - 14, 16),
                   Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop, "turn")

        rects = self.bar_rects()
        label_every = max(1, math.ceil(len(rects) * (metrics.horizontalAdvance("000") + 6) / plot.width()))
        above_axis = QRectF(plot.left(), 0, plot.width(), plot.bottom())
        for i, (row, rect) in enumerate(zip(self._rows, rects, strict=True)):
            color = self.bar_color(row)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(color)
            radius = min(3.0, rect.width() / 3)
            p.setClipRect(above_axis)  # rounded top, square foot on the axis
            p.drawRoundedRect(rect.adjusted(0, 0, 0, radius), radius, radius)
            p.setClipping(False)
            if i % label_every == 0 or i == len(rects) - 1:
                p.setPen(QColor(t.muted))
                p.drawText(QRectF(rect.center().x() - 20, plot.bottom() + 3, 40, 16),
                           Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop, str(row.turn))
        p.fillRect(QRectF(plot.left(), plot.bottom(), plot.width(), 1.0), QColor(t.muted))

        values = [r.latency for r in self._rows]
        marks = [("median", median(values), Qt.PenStyle.DashLine),
                 ("p95", p95(values), Qt.PenStyle.DotLine)]
        placed: list[float] = []
        for name, mark, style in marks:
            if mark is None or len(values) < 2:
                continue
            y = plot.bottom() - plot.height() * min(1.0, mark / top)
            pen = QPen(QColor(t.text), 1.2, style)
            p.setPen(pen)
            p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
            ty = y
            for other in placed:  # keep the two labels apart when the values are close
                if abs(ty - other) < 13:
                    ty = other - 13 if ty <= other else other + 13
            placed.append(ty)
            p.setPen(QColor(t.text))
            p.drawText(QRectF(plot.right() + 4, ty - 8, self.MARGIN_RIGHT - 4, 16),
                       Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                       f"{name} {mark * 1000:.0f}")
        p.end()

    def event(self, e: QEvent) -> bool:
        if e.type() == QEvent.Type.ToolTip and isinstance(e, QHelpEvent):
            pos = QPointF(e.pos())
            for row, rect in zip(self._rows, self.bar_rects(), strict=True):
                hit = QRectF(rect.x() - 2, self._plot().top(), rect.width() + 4, self._plot().height())
                if hit.contains(pos):
                    end = "painted" if row.painted else "handed to the window (not painted yet)"
                    QToolTip.showText(e.globalPos(),
                                      f"Turn {row.turn}: {row.latency * 1000:.0f} ms, speech end → "
                                      f"{end}\n{OUTCOME_LABELS[row.outcome].capitalize()}", self)
                    return True
            QToolTip.hideText()
            e.ignore()
            return True
        return super().event(e)


class LatencyView(QDialog):
    """Non-modal: it stays open beside the window and grows a bar per answered turn."""

    def __init__(self, timeline: Timeline, bridge: EventBridge, parent: QWidget | None = None) -> None:
        protect_singletons()
        super().__init__(parent)
        self.setWindowTitle("Response latency")
        self.setModal(False)
        self.resize(560, 340)
        self._timeline = timeline
        self._skipped = 0
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.setSpacing(6)
        self.summary = QLabel()
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.chart = LatencyChart()
        self.legend = QLabel()
        self.legend.setObjectName("metric")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.note = QLabel()
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        self.note.setObjectName("metric")
        self.note.setWordWrap(True)
        layout.addWidget(self.summary)
        layout.addWidget(self.chart, 1)
        layout.addWidget(self.legend)
        layout.addWidget(self.note)
        self._update_legend()
        self._show(self.rows(), 0)
        bridge.received.connect(self._on_event, Qt.ConnectionType.QueuedConnection)

    def rows(self) -> tuple[TurnRow, ...]:
        """Turns timed from the interviewer's silence; regenerated answers are left out
        because they count from their own request and would pull the median down."""
        return tuple(
            TurnRow(lat.turn, lat.response, lat.outcome, lat.shown is not None)
            for lat in self._timeline.turns()
            if lat.origin == "silence" and lat.response is not None
        )

    def refresh(self) -> None:
        """Re-read the timeline; cheap when nothing changed (most events are tokens)."""
        rows = self.rows()
        skipped = sum(1 for lat in self._timeline.turns() if lat.origin != "silence")
        if rows != self.chart.rows or skipped != self._skipped:
            self._show(rows, skipped)

    def _show(self, rows: tuple[TurnRow, ...], skipped: int) -> None:
        self._skipped = skipped
        values = [r.latency for r in rows]
        med, slow = median(values), p95(values)
        if med is None or slow is None:
            self.summary.setText("Response latency per turn (speech end → first words painted)")
        else:
            count = f"{len(rows)} turn" + ("s" if len(rows) != 1 else "")
            self.summary.setText(f"{count} · median {med * 1000:.0f} ms · p95 {slow * 1000:.0f} ms "
                                 "(speech end → first words painted)")
        self.note.setText(
            f"{skipped} regenerated answer{'s' if skipped != 1 else ''} not shown: "
            "they have no speech end to count from." if skipped else "")
        self.note.setVisible(bool(skipped))
        self.chart.set_rows(rows)

    def _update_legend(self) -> None:
        colors = outcome_colors(theme_of(self))
        self.legend.setText("&nbsp;&nbsp;&nbsp;".join(
            f"<span style='color:{colors[key]}'>■</span> {label}" for key, label in OUTCOME_LABELS.items()
        ) + "&nbsp;&nbsp;&nbsp;╌ median &nbsp;┈ p95 (nearest rank)")

    def _on_event(self, obj: object) -> None:
        if isinstance(obj, _RELEVANT):
            self.refresh()

    def changeEvent(self, e: QEvent) -> None:
        if e.type() == QEvent.Type.PaletteChange:  # theme switched: the legend's colours are HTML
            self._update_legend()
        super().changeEvent(e)
