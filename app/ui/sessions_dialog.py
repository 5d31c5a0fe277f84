"""Past sessions: pick one and reread it, read-only, in the same panes as live."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QPushButton,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from app.observing.session_files import SessionInfo, list_sessions, load_session, write_markdown
from app.ui.panes import Panes
from app.ui.theme import resolve


class SessionViewer(QMainWindow):
    """A finished session replayed into fresh panes; nothing here talks to a controller."""

    def __init__(self, path: Path, parent: QWidget | None = None, theme_mode: str = "system"):
        super().__init__(parent)
        self.path = path
        session = load_session(path)
        self.setWindowTitle(f"{path.stem} — read-only")
        self.resize(560, 640)
        self.panes = Panes()
        mode = theme_mode if theme_mode in ("system", "light", "dark") else "system"
        self.panes.apply_theme(resolve(mode), large_font=False)  # type: ignore[arg-type]
        for event in session.events:
            self.panes.feed(event)
        self.setCentralWidget(self.panes)
        bar = QToolBar()
        bar.setMovable(False)
        export = QPushButton("Export Markdown…")
        export.clicked.connect(self._export)
        bar.addWidget(export)
        if session.skipped:
            bar.addWidget(QLabel(f"  {session.skipped} unreadable line(s) skipped"))
        self.addToolBar(bar)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

    def _export(self) -> None:
        name, _ = QFileDialog.getSaveFileName(
            self, "Export transcript", str(Path.home() / f"{self.path.stem}.md"), "Markdown (*.md)"
        )
        if name:
            write_markdown(self.path, Path(name))


class SessionsDialog(QDialog):
    def __init__(self, parent: QWidget | None = None, *, current: Path | None = None,
                 folder: Path | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Past sessions")
        self.resize(420, 360)
        self.viewers: list[SessionViewer] = []
        self.list = QListWidget()
        for info in list_sessions(folder):
            item = QListWidgetItem(_label(info, current))
            item.setData(Qt.ItemDataRole.UserRole, str(info.path))
            self.list.addItem(item)
        if self.list.count() == 0:
            self.list.addItem("No sessions recorded yet.")
        self.list.itemDoubleClicked.connect(lambda _i: self.open_selected())
        open_button = QPushButton("Open")
        open_button.clicked.connect(self.open_selected)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(open_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.list)
        layout.addWidget(buttons)

    def open_selected(self) -> SessionViewer | None:
        item = self.list.currentItem()
        raw = item.data(Qt.ItemDataRole.UserRole) if item else None
        if not raw:
            return None
        parent = self.parentWidget()
        mode = getattr(getattr(parent, "settings", None), "ui", None)
        viewer = SessionViewer(Path(str(raw)), None, getattr(mode, "theme", "system"))
        viewer.show()
        self.viewers.append(viewer)
        return viewer


def _label(info: SessionInfo, current: Path | None) -> str:
    size = f"{info.size / 1024:.0f} KB" if info.size >= 1024 else f"{info.size} B"
    now = "  (this session)" if current is not None and info.path == current else ""
    return f"{info.started:%Y-%m-%d %H:%M:%S}   {size}{now}"
