"""The captures of one written question: thumbnails to drop, the read text to correct, Ask.

Up to ``max_captures`` captures queue into one question (a long problem, or the code and
its error).  Each is read off the UI thread (:class:`app.screen.ocr.Reader`, loaded on the
first capture), from the screen read while the region was dragged where there was one
(:mod:`app.screen.ahead`); its text is appended to the editable box the moment it is read,
so a misread word can be fixed before asking.  Enter asks (Shift+Enter is a new line); asking
hands the text, and the images when a setting wants them (sent to the endpoint, or kept
beside the session file), to ``ask``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QIcon, QImage, QKeyEvent, QPixmap
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.screen.ahead import Chosen, ReadAhead
from app.screen.errors import ScreenError
from app.screen.ocr import Reader
from app.screen.picture import Image, png_bytes

THUMB = QSize(96, 60)

Ask = Callable[[str, list[bytes], int], None]
"""(text, images as PNG, number of captures)."""


@dataclass(eq=False)
class Capture:
    image: Image
    text: str | None = None
    """None while it is being read."""
    error: str | None = None
    started: float = field(default_factory=time.perf_counter)
    seconds: float | None = None
    """From the capture to its text in the box."""


class _QuestionBox(QPlainTextEdit):
    submitted = Signal()

    def keyPressEvent(self, e: QKeyEvent) -> None:
        enter = e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not e.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(e)


class CapturePanel(QWidget):
    """Hidden until the first capture; emptied when the question is asked."""

    _read = Signal(object)

    def __init__(self, ask: Ask, reader: Reader | None = None, *, max_captures: int = 5,
                 with_images: Callable[[], bool] = lambda: False, language: str = "en",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._ask = ask
        self._reader = reader or Reader()
        self._max = max_captures
        self._with_images = with_images
        self._language = language
        self.captures: list[Capture] = []
        self._lock = threading.Lock()  # one read at a time: the reader has one engine
        self.thumbs = QHBoxLayout()
        self.thumbs.setSpacing(6)
        self.note = QLabel("")
        self.note.setObjectName("muted")
        self.box = _QuestionBox()
        self.box.setPlaceholderText("The text read from the screen appears here: fix a misread word, "
                                    "then press Enter to ask")
        self.box.setAccessibleName("Question read from the screen")
        self.box.setMaximumHeight(150)
        self.box.submitted.connect(self.submit)
        self.ask_button = QPushButton("Ask")
        self.ask_button.setObjectName("primary")
        self.ask_button.clicked.connect(self.submit)
        top = QHBoxLayout()
        top.addLayout(self.thumbs)
        top.addStretch(1)
        top.addWidget(self.note)
        top.addWidget(self.ask_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(self.box)
        self._read.connect(self._on_read, Qt.ConnectionType.QueuedConnection)
        self.setVisible(False)

    # --- captures -----------------------------------------------------------------------

    def read_ahead(self, screen: Callable[[], Image]) -> ReadAhead:
        """Start reading a frozen screen, for the region about to be dragged over it."""
        return ReadAhead(self._reader, screen, self._language)

    def add_capture(self, image: Image, chosen: Chosen | None = None) -> bool:
        """Queue a capture and read it off this thread (from the screen read ahead, when it
        was ``chosen`` on one); False when the queue is full."""
        if len(self.captures) >= self._max:
            self.note.setText(f"{self._max} captures at most: drop one first")
            if chosen is not None:
                chosen.cancel()
            return False
        capture = Capture(np.ascontiguousarray(image))
        self.captures.append(capture)
        self._refresh_thumbs()
        self.note.setText("reading…")
        self.setVisible(True)
        threading.Thread(target=self._read_off_thread, args=(capture, chosen), name="screen-read",
                         daemon=True).start()
        return True

    def drop(self, capture: Capture) -> None:
        """Take a capture out of the question (its text leaves the box if unedited)."""
        if capture not in self.captures:
            return
        self.captures.remove(capture)
        if capture.text:
            self.box.setPlainText(self.box.toPlainText().replace(capture.text, "").strip("\n"))
        self._refresh_thumbs()
        if not self.captures and not self.box.toPlainText().strip():
            self.setVisible(False)

    def _read_off_thread(self, capture: Capture, chosen: Chosen | None) -> None:
        with self._lock:
            try:
                reading = chosen.reading() if chosen is not None else None
                capture.text = (reading or self._reader.read(capture.image, self._language)).text
            except ScreenError as exc:
                capture.error = str(exc)
        capture.seconds = time.perf_counter() - capture.started
        self._read.emit(capture)

    def _on_read(self, capture: Capture) -> None:
        if capture not in self.captures:
            return
        if capture.error is not None:
            self.note.setText(capture.error)
            self.drop(capture)
            return
        current = self.box.toPlainText().rstrip("\n")
        self.box.setPlainText(f"{current}\n\n{capture.text}" if current else (capture.text or ""))
        self.box.setFocus()
        reading = any(c.text is None and c.error is None for c in self.captures)
        self.note.setText("reading…" if reading else f"read in {capture.seconds or 0:.1f} s · Enter asks")

    # --- asking -------------------------------------------------------------------------

    def submit(self) -> None:
        text = self.box.toPlainText().strip()
        if not text:
            return
        images = [png_bytes(c.image) for c in self.captures] if self._with_images() else []
        self._ask(text, images, max(1, len(self.captures)))
        self.clear()

    def clear(self) -> None:
        self.captures.clear()
        self.box.clear()
        self.note.setText("")
        self._refresh_thumbs()
        self.setVisible(False)

    def _refresh_thumbs(self) -> None:
        while self.thumbs.count():
            item = self.thumbs.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        for number, capture in enumerate(self.captures, 1):
            button = QToolButton()
            button.setIcon(QIcon(_pixmap(capture.image)))
            button.setIconSize(THUMB)
            button.setToolTip(f"Capture {number}: click to drop it from the question")
            button.setAccessibleName(f"Drop capture {number}")
            button.clicked.connect(lambda _=False, c=capture: self.drop(c))
            self.thumbs.addWidget(button)


def _pixmap(image: Image) -> QPixmap:
    h, w = image.shape[:2]
    qimage = QImage(image.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()
    return QPixmap.fromImage(qimage).scaled(THUMB, Qt.AspectRatioMode.KeepAspectRatio,
                                            Qt.TransformationMode.SmoothTransformation)
