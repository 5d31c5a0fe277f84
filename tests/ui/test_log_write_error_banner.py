"""The window's own session log says when it cannot write (issue 54, item 6): on a full
disk a banner names the session log, where before lines were dropped without a word."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.observing.full_disk import small_disk

_SCRIPT = r"""
import sys, threading
from pathlib import Path
from PySide6.QtCore import QTimer
from app.core.config import Settings
from app.core.events import FinalEvent
from app.ui import app as ui_app, hotkeys
from app.ui.window import MainWindow
from tests.ui_fakes import FakeController

ui_app.ensure_app()
controller = FakeController()
hotkeys.default_backend = lambda: hotkeys.NullBackend("tests")
said = []

def windows():
    return [w for w in ui_app.QApplication.topLevelWidgets() if isinstance(w, MainWindow)]

def speak():
    controller.emit_from_thread(FinalEvent(t=float(n), turn=n, text="How would you shard it? " * 40,
                                           audio_end=float(n)) for n in range(60))

def look():
    for window in windows():
        said.extend(t for t in window.banners.texts() if "session log" in t.lower())
        if said or not looked.pop():
            window.close()

looked = [False] + [True] * 100  # 10 s at most (pop takes from the end)
QTimer.singleShot(300, speak)
timer = QTimer()
timer.timeout.connect(look)
timer.start(100)
ui_app.run_window(controller, Settings(), settings_path=Path(sys.argv[1]) / "s.toml")
print("BANNER:", said[0] if said else "none")
"""


def test_a_full_disk_under_the_window_shows_a_banner(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    with small_disk(tmp_path / "data", 4096):
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(tmp_path / "data"),
               "INTERVIEW_COPILOT_CONFIG_DIR": str(tmp_path / "config")}
        out = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path)], cwd=root, env=env,
                             capture_output=True, text=True, timeout=120)
    assert "BANNER:" in out.stdout, out.stderr[-2000:]
    assert "No space left on device" in out.stdout, out.stdout + out.stderr[-2000:]
