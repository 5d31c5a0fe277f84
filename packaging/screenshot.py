"""Screenshot of the real window driven by a scripted session (default assets/screenshot.png).

Starts a private Xvfb unless ``--display`` (or an existing ``$DISPLAY`` with
``--use-display``) is given, so it runs on a headless build machine.  The window is the
production one; only the controller is fake.

    .venv/bin/python packaging/screenshot.py [--out assets/screenshot.png] [--theme dark]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def start_xvfb(width: int, height: int) -> tuple[subprocess.Popen[bytes], str]:
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        raise SystemExit("Xvfb not found: apt-get install xvfb (or pass --use-display)")
    for number in range(91, 120):
        if Path(f"/tmp/.X{number}-lock").exists():
            continue
        display = f":{number}"
        proc = subprocess.Popen(
            [xvfb, display, "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp",
             "+extension", "RECORD"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for _ in range(50):
            if Path(f"/tmp/.X11-unix/X{number}").exists():
                return proc, display
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        proc.kill()
    raise SystemExit("could not start Xvfb")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "assets" / "screenshot.png")
    parser.add_argument("--theme", choices=["light", "dark"], default="light")
    parser.add_argument("--scale", type=float, default=1.5, help="device pixel ratio")
    parser.add_argument("--size", default="560x700", help="window size in logical pixels")
    parser.add_argument("--use-display", action="store_true", help="use the current $DISPLAY")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.split("x"))

    xvfb = None
    if not args.use_display:
        sw, sh = int((width + 80) * args.scale), int((height + 80) * args.scale)
        xvfb, display = start_xvfb(sw, sh)
        os.environ["DISPLAY"] = display
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    os.environ["QT_SCALE_FACTOR"] = str(args.scale)
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="xdg-"))
    scratch = Path(tempfile.mkdtemp(prefix="copilot-shot-"))
    os.environ["INTERVIEW_COPILOT_CONFIG_DIR"] = str(scratch / "config")
    os.environ["XDG_DATA_HOME"] = str(scratch / "data")
    try:
        return _shoot(args.out, args.theme, width, height)
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait(5)
        shutil.rmtree(scratch, ignore_errors=True)


class _AcceptingBackend:
    """Pretends the OS took the hotkeys: the still should show the normal state."""

    name = "screenshot"

    def unavailable(self) -> str | None:
        return None

    def register(self, action: str, hotkey: object, callback: object) -> str | None:
        return None

    def unregister_all(self) -> None:
        return None


def _shoot(out: Path, theme: str, width: int, height: int) -> int:
    from PySide6.QtCore import QTimer

    from app.core.config import Settings
    from app.observing.session_files import SessionLog
    from app.ui.app import ensure_app
    from app.ui.window import MainWindow
    from devtools.scripted import ScriptedController, interview_script

    app = ensure_app()
    settings = Settings()
    settings.ui.theme = theme  # type: ignore[assignment]
    controller = ScriptedController(interview_script(), speed=1.0)
    log = SessionLog()
    log.attach(controller.bus)
    window = MainWindow(controller, settings, session_log=log,
                        hotkey_backend=_AcceptingBackend())
    window.status.set_message("")
    window.resize(width, height)
    window.move(40, 40)
    window.show()
    controller.start()

    def finish() -> None:
        if not controller.done.is_set():
            QTimer.singleShot(100, finish)
            return
        QTimer.singleShot(400, grab)

    def grab() -> None:
        window.status.meter.set_level(-21.0)  # a live-looking meter in the still
        window.status.set_message("")
        app.processEvents()
        screen = window.screen()
        pixmap = screen.grabWindow(window.winId())
        if pixmap.isNull():
            pixmap = window.grab()
        out.parent.mkdir(parents=True, exist_ok=True)
        pixmap.save(str(out))
        print(f"saved {out} ({pixmap.width()}x{pixmap.height()} px)")
        window.close_resources()
        controller.shutdown()
        log.close()
        app.quit()

    QTimer.singleShot(300, finish)
    return int(app.exec())


if __name__ == "__main__":
    raise SystemExit(main())
