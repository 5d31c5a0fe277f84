"""The main window: controls, banners, the two panes and the status footer.

Every bus event reaches :meth:`MainWindow.on_event` on the GUI thread via the bridge;
handlers only touch widgets, so a burst of events can never block a stage and the GUI
thread never waits on audio, ASR, the network or the disk (settings and session files
are written off-thread or by bus listeners).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QHBoxLayout,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.core.config import ConfigProblem, Settings, config_dir, save_settings, save_ticket
from app.core.events import (
    AnswerDoneEvent,
    EndpointEvent,
    ErrorEvent,
    Event,
    LevelEvent,
    PartialEvent,
    RequestEvent,
    SessionStateEvent,
    StatusEvent,
    TokenEvent,
    VadEvent,
)
from app.core.private import private_dir
from app.observing.session_files import SessionLog, write_markdown
from app.observing.timeline import Timeline
from app.ui import theme as themes
from app.ui.banner import BannerArea
from app.ui.bridge import BusPoster, EventBridge
from app.ui.capture import GRAB_LEAVES_US_OUT, RegionCapture
from app.ui.capture_panel import CapturePanel
from app.ui.hotkeys import GlobalBackend, HotkeyManager
from app.ui.latency_view import LatencyView
from app.ui.panes import Panes
from app.ui.qtcompat import protect_singletons
from app.ui.settings import SettingsDialog
from app.ui.status import StatusPanel

if TYPE_CHECKING:
    from app.session.session import Controller

APP_TITLE = "Interview Copilot"
DEFAULT_SIZE = (560, 680)


class MainWindow(QMainWindow):
    settings_changed = Signal(object)
    _background_error = Signal(str)
    _low_latency_changed = Signal(bool)
    """Low-latency mode changed (told on the session's thread, shown on this one)."""

    def __init__(
        self,
        controller: Controller,
        settings: Settings,
        *,
        settings_path: Path | None = None,
        problems: Sequence[ConfigProblem] = (),
        session_log: SessionLog | None = None,
        hotkey_backend: GlobalBackend | None = None,
        state_file: Path | None = None,
    ) -> None:
        protect_singletons()
        super().__init__()
        self.controller = controller
        self.settings = settings
        self.settings_path = settings_path
        self.session_log = session_log
        self.quit_on_close = False
        self.timeline = Timeline()
        self._latency_view: LatencyView | None = None
        self._state_file = state_file or (config_dir() / "window.ini")
        self._theme = themes.LIGHT
        self._speaking = False
        self.setWindowTitle(APP_TITLE)
        self.resize(*DEFAULT_SIZE)
        self.setMinimumSize(380, 420)

        self.poster = BusPoster(controller.bus)
        self.panes = Panes(clock=controller.clock, post=self.poster.post)
        self.banners = BannerArea()
        self.capture_panel = CapturePanel(self._ask_written, max_captures=settings.screen.max_captures,
                                          with_images=self._screen_images,
                                          language=settings.screen.language)
        self.region = RegionCapture(self, self.capture_panel.add_capture,
                                    lambda message: self.banners.show_message("error", "Screen", message),
                                    read_ahead=self.capture_panel.read_ahead,
                                    grab_leaves_us_out=GRAB_LEAVES_US_OUT)
        self.status = StatusPanel()
        self._build_controls()
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(10, 8, 10, 0)
        layout.setSpacing(8)
        layout.addLayout(self._controls)
        layout.addWidget(self.banners)
        layout.addWidget(self.capture_panel)
        layout.addWidget(self.panes, 1)
        outer = QWidget()
        outer_layout = QVBoxLayout(outer)
        outer_layout.setContentsMargins(0, 0, 0, 0)
        outer_layout.setSpacing(8)
        outer_layout.addWidget(central, 1)
        outer_layout.addWidget(self.status)
        self.setCentralWidget(outer)
        self._build_menus()

        self.hotkeys = HotkeyManager(self, hotkey_backend)
        self.hotkeys.triggered.connect(self._on_hotkey)
        self._background_error.connect(lambda m: self.banners.show_message("error", "Settings", m))
        self._low_latency_changed.connect(self._show_low_latency)
        self._stop_observing = controller.low_latency.observe(self._low_latency_changed.emit)

        self.bridge = EventBridge(controller.bus, self)
        self.bridge.connect_to(self.on_event)
        self._sync = QTimer(self)
        self._sync.setInterval(400)
        self._sync.timeout.connect(self._sync_controls)
        self._sync.start()
        self._message_timer = QTimer(self)
        self._message_timer.setSingleShot(True)
        self._message_timer.timeout.connect(lambda: self.status.set_message(""))

        self.apply_settings(settings, initial=True)
        self._restore_geometry()
        for problem in problems:
            self.banners.show_message("warning", "Settings file", str(problem))

    # --- construction -----------------------------------------------------------------

    def _build_controls(self) -> None:
        row = QHBoxLayout()
        row.setSpacing(6)
        self.start_button = QPushButton("Start listening")
        self.start_button.setObjectName("primary")
        self.start_button.clicked.connect(self._toggle_listening)
        self.answer_button = QPushButton("Answer now")
        self.answer_button.setToolTip("Treat what was heard so far as the whole question")
        self.answer_button.clicked.connect(self.controller.answer_now)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the answer being streamed")
        self.cancel_button.clicked.connect(self.controller.cancel_answer)
        self.regen_button = QPushButton("Regenerate")
        self.regen_button.setToolTip("Ask again for the last question, as a new answer")
        self.regen_button.clicked.connect(self.controller.regenerate)
        self.low_latency_button = QPushButton("⚡ Low latency")
        self.low_latency_button.setCheckable(True)
        self.low_latency_button.setToolTip("Speculative requests before the turn is confirmed")
        self.low_latency_button.toggled.connect(self._set_low_latency)
        self.capture_button = QPushButton("Read screen")
        self.capture_button.setToolTip("Drag a region of the screen to read it as a written question")
        self.capture_button.clicked.connect(lambda: self.region.capture())
        for b in (self.start_button, self.answer_button, self.cancel_button, self.regen_button,
                  self.low_latency_button, self.capture_button):
            row.addWidget(b)
        row.addStretch(1)
        self._controls = row

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&Session")
        export = QAction("&Export transcript…", self)
        export.setShortcut("Ctrl+E")
        export.triggered.connect(self.export_transcript)
        past = QAction("&Past sessions…", self)
        past.triggered.connect(self.open_sessions)
        settings = QAction("Se&ttings…", self)
        settings.setShortcut("Ctrl+,")
        settings.triggered.connect(self.open_settings)
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut("Ctrl+Q")
        quit_action.triggered.connect(self.close)
        self.withdraw_action = QAction("&Withdraw the answer", self)
        self.withdraw_action.setToolTip("Take the answer on screen back: it answered the wrong question")
        self.withdraw_action.setShortcut("Ctrl+Backspace")
        self.withdraw_action.triggered.connect(self.controller.retract_answer)
        for a in (export, past):
            file_menu.addAction(a)
        file_menu.addSeparator()
        file_menu.addAction(self.withdraw_action)
        file_menu.addSeparator()
        file_menu.addAction(settings)
        file_menu.addSeparator()
        file_menu.addAction(quit_action)

        view = bar.addMenu("&View")
        self.on_top_action = QAction("Stay on &top", self, checkable=True)
        self.on_top_action.toggled.connect(lambda on: self._set_ui(stay_on_top=on))
        self.large_font_action = QAction("&Large text", self, checkable=True)
        self.large_font_action.toggled.connect(lambda on: self._set_ui(large_font=on))
        view.addAction(self.on_top_action)
        view.addAction(self.large_font_action)
        theme_menu = view.addMenu("&Theme")
        group = QActionGroup(self)
        self.theme_actions: dict[str, QAction] = {}
        for mode, label in (("system", "Follow the system"), ("light", "Light"), ("dark", "Dark")):
            action = QAction(label, self, checkable=True)
            action.triggered.connect(lambda _=False, m=mode: self._set_ui(theme=m))
            group.addAction(action)
            theme_menu.addAction(action)
            self.theme_actions[mode] = action
        view.addSeparator()
        latency = QAction("Response &latency…", self)
        latency.triggered.connect(self.open_latency_view)
        view.addAction(latency)
        view.addSeparator()
        clear = QAction("&Clear panes", self)
        clear.triggered.connect(self._clear_panes)
        view.addAction(clear)

        help_menu = bar.addMenu("&Help")
        about = QAction("&About Interview Copilot", self)
        about.triggered.connect(self.show_about)
        help_menu.addAction(about)

    def show_about(self) -> None:
        """Versions of the bundled components and the models' licences."""
        from app.session.about import about_text

        QMessageBox.about(self, "About Interview Copilot", about_text())

    def open_latency_view(self) -> LatencyView:
        """The session's response latencies; one non-modal dialog, raised if already open."""
        if self._latency_view is None:
            self._latency_view = LatencyView(self.timeline, self.bridge, self)
        self._latency_view.show()
        self._latency_view.raise_()
        self._latency_view.activateWindow()
        return self._latency_view

    # --- settings and appearance ------------------------------------------------------

    def apply_settings(self, settings: Settings, *, initial: bool = False) -> None:
        self.settings = settings
        ui = settings.ui
        for action, value in ((self.on_top_action, ui.stay_on_top),
                              (self.large_font_action, ui.large_font)):
            action.blockSignals(True)
            action.setChecked(value)
            action.blockSignals(False)
        self.theme_actions[ui.theme].setChecked(True)
        self._apply_theme()
        self._apply_on_top(ui.stay_on_top)
        if initial:
            self._show_low_latency(self.controller.low_latency.on)
            app = QGuiApplication.instance()
            if isinstance(app, QGuiApplication):
                app.styleHints().colorSchemeChanged.connect(lambda _s: self._apply_theme())
        defaults = type(settings.hotkeys)().model_dump()
        problems = self.hotkeys.apply(settings.hotkeys.model_dump(), defaults)
        for problem in problems:
            self.banners.show_message("warning", "Hotkeys", problem)
        self.status.set_message(self.hotkeys.summary())

    def _apply_theme(self) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            self._theme = themes.apply(app, self.settings.ui.theme)
        else:
            self._theme = themes.resolve(self.settings.ui.theme)
        self.panes.apply_theme(self._theme, self.settings.ui.large_font)
        self.status.apply_theme(self._theme)
        self.banners.apply_theme(self._theme)

    def _apply_on_top(self, on: bool) -> None:
        current = bool(self.windowFlags() & Qt.WindowType.WindowStaysOnTopHint)
        if current == on:
            return
        visible = self.isVisible()
        self.setWindowFlag(Qt.WindowType.WindowStaysOnTopHint, on)
        if visible:
            self.show()

    def _set_ui(self, **changes: object) -> None:
        ui = self.settings.ui.model_copy(update=changes)
        settings = self.settings.model_copy(update={"ui": ui})
        self.apply_settings(settings)
        self._save_in_background(settings)

    def _save_in_background(self, settings: Settings) -> None:
        path = self.settings_path
        asked = save_ticket()  # now, on the GUI thread: the order the user changed things in

        def save() -> None:
            try:
                save_settings(settings, path, asked=asked)
            except OSError as exc:
                self._background_error.emit(f"Could not save the settings file: {exc}")

        threading.Thread(target=save, name="ui-save-settings", daemon=True).start()

    def open_settings(self) -> SettingsDialog:
        dialog = SettingsDialog(self.settings, self.settings_path, self)
        dialog.finished.connect(lambda _r: self._settings_closed(dialog))
        dialog.open()
        return dialog

    def _settings_closed(self, dialog: SettingsDialog) -> None:
        new = dialog.result_settings
        if new is None:
            return
        old = self.settings
        self.apply_settings(new)
        restart = [name for name in ("audio", "asr", "llm", "prompt", "turns", "vad")
                   if getattr(old, name) != getattr(new, name)]
        if restart:
            self.banners.show_message(
                "info", "Settings saved",
                f"Changes to {', '.join(restart)} take effect when the app is restarted.")
        self.settings_changed.emit(new)

    # --- events -----------------------------------------------------------------------

    def on_event(self, obj: object) -> None:
        if not isinstance(obj, Event):
            return
        event = obj
        if isinstance(event, LevelEvent):
            self.status.set_level(event.speaker, event.dbfs)
            return
        self.panes.feed(event)
        if self.timeline.feed(event):
            if self.timeline.last is not None:
                self.status.set_latency(self.timeline.last.describe())
                self.status.set_breakdown(self.timeline.last)
                self.status.set_speculation(self.timeline.last.speculation or "")
            self.status.set_cost(self.timeline.totals.describe())
        if isinstance(event, VadEvent):
            self._speaking = event.speech
            if self.status.state in ("listening", "speaking", "stopped"):
                self.status.set_state("speaking" if event.speech else "listening")
        elif isinstance(event, PartialEvent):
            if self.status.state in ("listening", "stopped") and self._speaking:
                self.status.set_state("speaking")
        elif isinstance(event, EndpointEvent):
            self.status.set_state("thinking")
        elif isinstance(event, RequestEvent):
            if event.kind != "speculative":
                self.status.set_state("thinking")
        elif isinstance(event, TokenEvent):
            if self.status.state != "answering":
                self.status.set_state("answering")
        elif isinstance(event, AnswerDoneEvent):
            self.status.set_state(self._idle_state())
        elif isinstance(event, SessionStateEvent):
            self._sync_controls()
            if event.state == "starting":
                self.status.hide_candidate_meter()  # until this session's microphone speaks
            if event.state in ("starting", "failed"):
                self.status.set_state(event.state)
            elif event.state == "listening":
                self.status.set_state(self._idle_state())
        elif isinstance(event, ErrorEvent):
            self.banners.show_message("error", event.stage.capitalize(), event.message)
        elif isinstance(event, StatusEvent) and event.stage == "echo":
            # Persistent, unlike a status line: the user has to act (put headphones on).
            self.banners.show_message("warning", "Echo", event.message)
        elif isinstance(event, StatusEvent):
            self.status.set_message(f"{event.stage}: {event.message}")
            self._message_timer.start(8000)

    def _idle_state(self) -> str:
        if not self.controller.active:
            return "stopped"
        return "speaking" if self._speaking else "listening"

    # --- controls ---------------------------------------------------------------------

    def _toggle_listening(self) -> None:
        try:
            if self.controller.active:
                self.controller.stop()
            else:
                self.controller.start()
        except Exception as exc:  # a controller bug must not take the window down
            self.banners.show_message("error", "Audio", f"{type(exc).__name__}: {exc}")
        self._sync_controls()

    def _sync_controls(self) -> None:
        listening = self.controller.active
        self.start_button.setText("Stop listening" if listening else "Start listening")
        if self.start_button.property("listening") != listening:
            self.start_button.setProperty("listening", listening)
            self.start_button.style().unpolish(self.start_button)
            self.start_button.style().polish(self.start_button)
        if not listening and self.status.state in ("listening", "speaking", "starting"):
            self.status.set_state("stopped")
        elif listening and self.status.state == "stopped":
            self.status.set_state("listening")

    def _show_low_latency(self, on: bool) -> None:
        """The button and the status line follow the mode (the session's)."""
        self.low_latency_button.blockSignals(True)
        self.low_latency_button.setChecked(on)
        self.low_latency_button.blockSignals(False)
        self.status.set_low_latency(on)

    def _set_low_latency(self, on: bool) -> None:
        """The button was toggled: the session sets the mode, and the window shows it when told."""
        self.controller.set_low_latency(on)

    def _on_hotkey(self, action: str) -> None:
        if action == "toggle_low_latency":
            self.low_latency_button.toggle()
        elif action == "answer_now":
            self.controller.answer_now()
        elif action == "capture_region":
            self.region.capture()
        elif action == "capture_again":
            self.region.capture(again=True)
        elif action == "show_hide":
            if self.isVisible() and self.isActiveWindow():
                self.hide()
            else:
                self.showNormal()
                self.raise_()
                self.activateWindow()

    def _screen_images(self) -> bool:
        """The captures' images are wanted: sent to the endpoint, or kept in the session."""
        return self.settings.screen.send_image or self.settings.screen.keep_images

    def _ask_written(self, text: str, images: list[bytes], captures: int) -> None:
        self.controller.ask_written(text, images, captures=captures)
        self.status.set_state("thinking")

    def _clear_panes(self) -> None:
        self.panes.transcript.clear()
        self.panes.answer.clear_answers()
        self.panes.recall.clear_recall()

    # --- sessions ---------------------------------------------------------------------

    def export_transcript(self) -> Path | None:
        if self.session_log is None:
            self.banners.show_message("info", "Export", "This session is not being recorded.")
            return None
        default = Path.home() / f"interview-{datetime.now():%Y%m%d-%H%M}.md"
        name, _ = QFileDialog.getSaveFileName(self, "Export transcript", str(default),
                                              "Markdown (*.md)")
        if not name:
            return None
        return self.write_export(Path(name))

    def write_export(self, target: Path) -> Path | None:
        assert self.session_log is not None
        try:
            self.session_log.flush()
            write_markdown(self.session_log.path, target)
        except OSError as exc:
            self.banners.show_message("error", "Export", f"Could not write {target}: {exc}")
            return None
        self.status.set_message(f"Exported to {target}")
        self._message_timer.start(8000)
        return target

    def open_sessions(self) -> None:
        from app.ui.sessions_dialog import SessionsDialog

        current = self.session_log.path if self.session_log else None
        SessionsDialog(self, current=current).open()

    # --- geometry ---------------------------------------------------------------------

    def _qsettings(self) -> QSettings:
        private_dir(self._state_file.parent)  # Qt would create the settings folder with the umask
        return QSettings(str(self._state_file), QSettings.Format.IniFormat)

    def _restore_geometry(self) -> None:
        store = self._qsettings()
        geometry = store.value("geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        splitter = store.value("splitter")
        if isinstance(splitter, QByteArray) and not splitter.isEmpty():
            self.panes.restoreState(splitter)

    def save_geometry(self) -> None:
        store = self._qsettings()
        store.setValue("geometry", self.saveGeometry())
        store.setValue("splitter", self.panes.saveState())
        store.sync()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.save_geometry()
        self.close_resources()
        super().closeEvent(event)
        if self.quit_on_close:
            app = QApplication.instance()
            if app is not None:
                app.quit()

    def close_resources(self) -> None:
        self._stop_observing()
        self._sync.stop()
        self.hotkeys.close()
        self.bridge.detach()
        self.poster.close()
