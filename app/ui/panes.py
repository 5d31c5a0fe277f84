"""The two reading panes (question above, answer below), shared by the live window and the
read-only session viewer so a reopened session looks exactly as it did live."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.core.clock import SessionClock
from app.core.events import (
    AnswerDoneEvent,
    CutEvent,
    EndpointEvent,
    Event,
    FinalEvent,
    PartialEvent,
    RecallEvent,
    RestoredEvent,
    ResumedEvent,
    RetractedEvent,
    TokenEvent,
    WrittenQuestionEvent,
)
from app.ui.answer_view import AnswerView
from app.ui.recall_view import RecallView
from app.ui.theme import Theme, pane_font
from app.ui.transcript import TranscriptView


def _on_screen(event: WrittenQuestionEvent, lines: int = 3) -> str:
    """The transcript's line for a written question: its first lines (the session keeps all)."""
    shown = [line for line in event.text.splitlines() if line.strip()]
    more = " …" if len(shown) > lines else ""
    captures = f"{event.captures} captures" if event.captures > 1 else "screen"
    return f"[{captures}] " + " / ".join(line.strip() for line in shown[:lines]) + more


def _pane(title: str, body: QWidget, extra: QWidget | None = None) -> QFrame:
    frame = QFrame()
    frame.setObjectName("pane")
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(2, 6, 2, 2)
    layout.setSpacing(0)
    head = QHBoxLayout()
    head.setContentsMargins(12, 0, 6, 0)
    label = QLabel(title)
    label.setObjectName("paneTitle")
    head.addWidget(label)
    head.addStretch(1)
    if extra is not None:
        head.addWidget(extra)
    layout.addLayout(head)
    layout.addWidget(body, 1)
    return frame


class Panes(QSplitter):
    """Transcript over answer; ``feed`` routes the content events to them.

    Only ``token`` events add answer text: requests (speculative or not) and speculation
    outcomes never do, which is what keeps a discarded speculation off the screen.
    """

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        clock: SessionClock | None = None,
        post: Callable[[Event], None] | None = None,
    ) -> None:
        super().__init__(Qt.Orientation.Vertical, parent)
        self.setChildrenCollapsible(False)
        self.setHandleWidth(8)
        self.transcript = TranscriptView()
        self.transcript.setAccessibleName("Interviewer transcript")
        self.answer = AnswerView(clock=clock, post=post)
        self.answer.setAccessibleName("Suggested answer")
        self.copy_button = QPushButton("Copy")
        self.copy_button.setObjectName("flat")
        self.copy_button.setToolTip("Copy the current answer")
        self.copy_button.clicked.connect(self.copy_answer)
        self.addWidget(_pane("QUESTION", self.transcript))
        self.recall = RecallView()
        answer_body = QWidget()
        column = QVBoxLayout(answer_body)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.recall)  # the résumé lines the question touches, above the answer
        column.addWidget(self.answer, 1)
        self.addWidget(_pane("SUGGESTED ANSWER", answer_body, self.copy_button))
        self.setStretchFactor(0, 2)
        self.setStretchFactor(1, 3)
        self.setSizes([180, 360])

    def feed(self, event: Event) -> None:
        if isinstance(event, TokenEvent):
            self.answer.append_token(event.turn, event.request, event.text, event.t)
        elif isinstance(event, PartialEvent):
            self.transcript.show_partial(event.turn, event.text, event.stable, event.speaker)
        elif isinstance(event, FinalEvent):
            self.transcript.show_final(event.turn, event.text, event.speaker)
        elif isinstance(event, WrittenQuestionEvent):
            self.transcript.show_final(event.turn, _on_screen(event), "interviewer")
            self.transcript.end_turn()
        elif isinstance(event, EndpointEvent):
            self.transcript.end_turn()
        elif isinstance(event, ResumedEvent):
            self.transcript.reopen(event.turn)
        elif isinstance(event, CutEvent):
            self.answer.mark_cut(event.request)
        elif isinstance(event, AnswerDoneEvent):
            self.answer.mark_done(event.request, event.truncated)
        elif isinstance(event, RetractedEvent):
            self.answer.retract(event.request, event.reason)
        elif isinstance(event, RestoredEvent):
            self.answer.restore(event.request)
        elif isinstance(event, RecallEvent):
            self.recall.show_recall(event)

    def copy_answer(self) -> None:
        text = self.answer.current_answer()
        if text:
            QGuiApplication.clipboard().setText(text)
            self.copy_button.setText("Copied")
        else:
            self.copy_button.setText("Nothing yet")
        QTimer.singleShot(1200, lambda: self.copy_button.setText("Copy"))

    def apply_theme(self, theme: Theme, large_font: bool) -> None:
        app_font = QGuiApplication.font()
        for view in (self.transcript, self.answer):
            view.setFont(pane_font(app_font, large_font))
        self.transcript.set_colors(theme.faint)
        self.answer.set_colors(theme.muted, theme.code_bg)
        self.recall.set_colors(theme.muted)
        self.recall.setFont(pane_font(app_font, large_font))
