"""Let go → text in the real capture path on an X display (Xvfb): the window hides, Qt grabs
the screen, the overlay is up, the region is let go after a drag, the panel shows the text.

A rendered problem page fills the screen.  Each round captures the same 1280x400 region
once with the screen read while it is dragged and once without (alternating which goes
first), for each drag time, the press at the region's corner halfway through it; the
first capture of each process (the models' load) is reported apart.  Medians and the
ratio with / without.

    DISPLAY=:99 .venv/bin/python -m devtools.bench.screen_window --drags 0,0.2,1.0,1.5 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drags", default="0,0.2,1.0,1.5", help="seconds from the freeze to let go")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if not os.environ.get("DISPLAY"):
        print("set DISPLAY (e.g. Xvfb :99 & DISPLAY=:99)", file=sys.stderr)
        return 2
    from PySide6.QtCore import QTimer
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QWidget

    from app.ui.app import ensure_app
    from app.ui.capture import HIDE_MS, RegionCapture
    from app.ui.capture_panel import CapturePanel
    from app.ui.region import Rect
    from devtools.screen_demo import problem_on_screen

    app = ensure_app()
    geometry = QGuiApplication.primaryScreen().geometry()
    background = problem_on_screen()
    window = QWidget()
    window.setGeometry(geometry.width() - 420, geometry.height() - 320, 400, 300)
    panel = CapturePanel(lambda *_: None, parent=window)
    window.show()
    captures = {mode: RegionCapture(window, panel.add_capture, print,
                                    read_ahead=panel.read_ahead if mode == "ahead" else None)
                for mode in ("ahead", "alone")}
    drags = [float(d) for d in args.drags.split(",")]
    plan = [("ahead", drags[-1])]  # the models' load, reported apart
    for n in range(args.rounds):
        for drag in drags:
            plan += [("ahead", drag), ("alone", drag)] if n % 2 == 0 else [("alone", drag), ("ahead", drag)]
    shown: list[float] = []

    def watch() -> None:
        """Polled on the UI thread: the capture of this round has its text in the box."""
        done = [c.seconds for c in panel.captures if c.seconds is not None]
        if done:
            shown.append(done[0])
            QTimer.singleShot(300, next_round)
            return
        QTimer.singleShot(10, watch)

    def next_round() -> None:
        if len(shown) == len(plan):
            app.quit()
            return
        mode, drag = plan[len(shown)]
        panel.clear()
        captures[mode].capture()
        QTimer.singleShot(HIDE_MS + round(drag * 500), lambda: captures[mode].press(0, 0))  # halfway
        QTimer.singleShot(HIDE_MS + round(drag * 1000), lambda: captures[mode].choose(Rect(0, 0, 1280, 400)))
        QTimer.singleShot(HIDE_MS, watch)

    QTimer.singleShot(500, next_round)
    QTimer.singleShot(600_000, app.quit)
    app.exec()
    background.close()
    if len(shown) < len(plan):
        print("timed out", file=sys.stderr)
        return 1
    print(f"first capture (models loaded, drag {drags[-1]} s): {shown[0]:.2f} s")
    for drag in drags:
        times = {mode: [s for (m, d), s in zip(plan[1:], shown[1:], strict=True) if m == mode and d == drag]
                 for mode in ("ahead", "alone")}
        ahead, alone = statistics.median(times["ahead"]), statistics.median(times["alone"])
        print(f"drag {drag:.1f} s: let go -> text {ahead * 1000:.0f} ms read ahead, {alone * 1000:.0f} ms "
              f"alone (ratio {ahead / alone:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
