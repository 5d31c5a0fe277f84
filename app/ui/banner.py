"""Non-modal messages above the panes: what went wrong and what to do, dismissable.

A modal dialog would stop the window mid-answer; a banner lets the answer keep streaming
while the user reads it.  The same message repeated (a device flapping) is counted on the
existing banner instead of stacking copies.
"""

from __future__ import annotations

from html import escape
from typing import Literal

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from app.platform.redact import shown
from app.ui.theme import LIGHT, Theme

Level = Literal["error", "warning", "info"]
MAX_BANNERS = 4
_ICONS: dict[str, str] = {"error": "⛔", "warning": "⚠", "info": "ℹ"}


class Banner(QFrame):
    dismissed = Signal()

    def __init__(self, level: Level, title: str, message: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.level: Level = level
        self.title = shown(title)
        self.message = shown(message)
        """What is shown: an exception's or a server's words, made safe (app.platform.redact.shown)."""
        self.count = 1
        self.setObjectName("banner")
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 6, 6)
        row.setSpacing(8)
        icon = QLabel(_ICONS[level])
        icon.setTextFormat(Qt.TextFormat.PlainText)
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.label = QLabel()
        # Rich text for the bold title only: the message (a server's words, often) is escaped,
        # and saying RichText keeps an escaped message from being shown as "&lt;" when Qt's
        # guess would have called it plain.
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("✕")
        close.setToolTip("Dismiss")
        close.setAccessibleName("Dismiss message")
        close.clicked.connect(self.dismissed.emit)
        row.addWidget(icon)
        row.addWidget(self.label, 1)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self._render()

    def bump(self) -> None:
        self.count += 1
        self._render()

    def _render(self) -> None:
        times = f"  (×{self.count})" if self.count > 1 else ""
        title = f"<b>{escape(self.title)}</b> — " if self.title else ""
        message = f"<span style='white-space: pre-wrap'>{escape(self.message)}</span>"  # lines stay lines
        self.label.setText(f"{title}{message}{times}")

    def text(self) -> str:
        """What the banner says, as the user reads it (its markup left out)."""
        doc = QTextDocument()
        doc.setHtml(self.label.text())
        return doc.toPlainText().replace("\u2028", "\n")  # a kept line break reads back as U+2028

    def apply_theme(self, theme: Theme) -> None:
        bg, border = {
            "error": theme.banner_error,
            "warning": theme.banner_warning,
            "info": theme.banner_info,
        }[self.level]
        self.setStyleSheet(
            f"QFrame#banner {{ background: {bg}; border: 1px solid {border}; border-radius: 8px; }}"
            f" QLabel {{ color: {theme.text}; background: transparent; }}"
        )


class BannerArea(QWidget):
    """A column of banners; hidden when empty so it costs no space."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(4)
        self._theme: Theme = LIGHT
        self.banners: list[Banner] = []
        self.setVisible(False)

    def show_message(self, level: Level, title: str, message: str) -> Banner:
        """Show ``message`` (made safe: :func:`app.platform.redact.shown`), or count it again."""
        title, message = shown(title), shown(message)
        for banner in self.banners:
            if banner.level == level and banner.title == title and banner.message == message:
                banner.bump()
                return banner
        banner = Banner(level, title, message, self)
        banner.apply_theme(self._theme)
        banner.dismissed.connect(lambda b=banner: self.dismiss(b))
        self.banners.append(banner)
        self._layout.addWidget(banner)
        while len(self.banners) > MAX_BANNERS:
            self.dismiss(self.banners[0])
        self.setVisible(True)
        return banner

    def dismiss(self, banner: Banner) -> None:
        if banner in self.banners:
            self.banners.remove(banner)
            self._layout.removeWidget(banner)
            banner.deleteLater()
        self.setVisible(bool(self.banners))

    def clear(self) -> None:
        for banner in list(self.banners):
            self.dismiss(banner)

    def texts(self) -> list[str]:
        return [f"{b.title}: {b.message}" for b in self.banners]

    def apply_theme(self, theme: Theme) -> None:
        self._theme = theme
        for banner in self.banners:
            banner.apply_theme(theme)
