"""Entry point of the desktop window: ``run_window(controller, settings, …)``."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from app.core.config import APP_NAME, ConfigProblem, Settings
from app.core.events import ErrorEvent
from app.observing.session_files import SessionLog
from app.ui.qtcompat import protect_singletons
from app.ui.window import MainWindow

if TYPE_CHECKING:
    from app.session.session import Controller


def ensure_app() -> QApplication:
    """The running QApplication, or a new one set up for crisp high-DPI rendering."""
    protect_singletons()
    existing = QCoreApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    # Fractional scale factors as-is (125 %, 150 %): rounding would blur or shrink text.
    QGuiApplication.setHighDpiScaleFactorRoundingPolicy(
        Qt.HighDpiScaleFactorRoundingPolicy.PassThrough
    )
    app = QApplication(sys.argv[:1])
    app.setApplicationName(APP_NAME)
    app.setApplicationDisplayName("Interview Copilot")
    app.setDesktopFileName(APP_NAME)
    return app


def _banner_on(controller: Controller) -> Callable[[str], None]:
    """A session log's write error as an error event: the window shows it as a banner
    (from the writer's thread: the bus hands it to the GUI thread)."""
    return lambda message: controller.bus.emit(
        ErrorEvent(t=controller.clock.now(), stage="session log", message=message))


def run_window(
    controller: Controller,
    settings: Settings,
    *,
    settings_path: Path | None = None,
    problems: Sequence[ConfigProblem] = (),
    session_log: SessionLog | None = None,
) -> int:
    """Show the window, start listening, run the Qt loop; always shuts the controller down.

    The window's calls return at once (the session runs them on its own thread); only
    once the Qt loop is over does this wait, for the session to say it has shut down
    (``Controller.shutdown``) and for the window's last events to reach the log.

    ``session_log``: attached to ``controller.bus`` here (a no-op if the caller already
    did); when None a new log is created in the sessions folder and closed on exit.
    """
    app = ensure_app()
    own_log = session_log is None
    log = session_log if session_log is not None else SessionLog(on_error=_banner_on(controller))
    log.attach(controller.bus)
    window: MainWindow | None = None
    previous_sigint = signal.getsignal(signal.SIGINT)
    try:
        window = MainWindow(controller, settings, settings_path=settings_path,
                            problems=problems, session_log=log)
        window.quit_on_close = True
        window.show()
        # Ctrl+C in the terminal: Qt's loop is in C++, so let Python run every 200 ms.
        signal.signal(signal.SIGINT, lambda *_: app.quit())
        ticker = QTimer(window)
        ticker.timeout.connect(lambda: None)
        ticker.start(200)
        try:
            controller.start()
        except Exception as exc:  # show it; the user can fix settings and press Start
            window.banners.show_message("error", "Start", f"{type(exc).__name__}: {exc}")
        return int(app.exec())
    finally:
        signal.signal(signal.SIGINT, previous_sigint)
        if window is not None:
            window.close_resources()
            window.hide()
        try:
            controller.shutdown()
            if window is not None:
                window.poster.close(wait=1.0)  # its last `painted` events, before the log closes
        finally:
            if own_log:
                log.close()
