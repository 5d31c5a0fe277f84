"""The question on the screen, end to end on a real X display (Xvfb), as a screenshot.

A rendered problem page fills the screen; the production window is asked to read a region
(the hotkey's action: our window hides, the screen is grabbed through Qt, the region cut),
the OCR's text appears in the box, Enter asks, and a real Session streams the answer from
the test server (which says a coding answer with fenced code); the screen is saved.

    DISPLAY=:99 .venv/bin/python -m devtools.screen_demo --out docs/screen-question.png
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLabel

    from devtools.screen_pages import Theme

ANSWER = """**Problem:** return the indices of the two numbers that add up to target.

**Approach:** one pass with a hash map from each value to its index: for each number,
look up target - n among the numbers already seen.

**Code:**
```python
class Solution:
    def two_sum(self, nums: list[int], target: int) -> list[int]:
        seen: dict[int, int] = {}
        for i, n in enumerate(nums):
            if target - n in seen:  # the pair is complete
                return [seen[target - n], i]
            seen[n] = i
        return []
```
**Complexity:** O(n) time (one pass, O(1) lookups); O(n) space for the map.
"""


def problem_on_screen(theme: Theme = "light") -> QLabel:
    """A rendered problem page shown over the whole primary screen (kept alive by the caller)."""
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QGuiApplication, QImage, QPixmap
    from PySide6.QtWidgets import QLabel

    from devtools.screen_pages import render

    screen = QGuiApplication.primaryScreen().geometry()
    page = render("problem", theme=theme, width=screen.width(), height=screen.height())
    h, w = page.image.shape[:2]
    background = QLabel()
    background.setPixmap(QPixmap.fromImage(QImage(page.image.data, w, h, 3 * w, QImage.Format.Format_RGB888)))
    background.setGeometry(QRect(0, 0, w, h))
    background.show()
    return background


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screen-question.png"))
    parser.add_argument("--theme", choices=["light", "dark"], default="light")
    args = parser.parse_args(argv)
    if not os.environ.get("DISPLAY"):
        print("set DISPLAY (e.g. Xvfb :99 & DISPLAY=:99)", file=sys.stderr)
        return 2
    os.environ.setdefault("XDG_DATA_HOME", tempfile.mkdtemp(prefix="screen-demo-"))
    os.environ["INTERVIEW_COPILOT_CONFIG_DIR"] = tempfile.mkdtemp(prefix="screen-demo-config-")

    from PySide6.QtCore import QTimer
    from PySide6.QtGui import QGuiApplication

    from app.core.config import Settings
    from app.llm.endpoint import resolve_llm_endpoint
    from app.session.session import Session
    from app.ui.app import ensure_app
    from app.ui.region import Rect
    from app.ui.window import MainWindow
    from devtools.fake_server import FakeServer, Fault, Profile

    app = ensure_app()
    screen = QGuiApplication.primaryScreen().geometry()
    background = problem_on_screen(args.theme)

    settings = Settings()
    settings.ui.theme = args.theme
    with FakeServer(Profile(tokens_per_s=120), api_key="sk-demo") as server:
        server.faults.append(Fault("say", message=ANSWER, match="Read from my screen", times=5))
        llm = resolve_llm_endpoint(settings, base_url=server.start(), api_key="sk-demo", model="gpt-4o-mini")
        session = Session(settings, llm=llm)
        window = MainWindow(session, settings)
        window.resize(640, 900)
        window.move(screen.width() - 660, 20)
        window.show()
        shot = {"done": False}

        def capture() -> None:
            window.region.capture()
            QTimer.singleShot(1200, lambda: window.region.choose(Rect(0, 0, 1280, 400)))
            QTimer.singleShot(1500, wait_for_text)

        def wait_for_text() -> None:
            if "Two Sum" not in window.capture_panel.box.toPlainText():
                QTimer.singleShot(300, wait_for_text)
                return
            window.capture_panel.submit()
            QTimer.singleShot(300, wait_for_answer)

        def wait_for_answer() -> None:
            if not window.panes.answer.codes:
                QTimer.singleShot(300, wait_for_answer)
                return
            QTimer.singleShot(500, save)

        def save() -> None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            QGuiApplication.primaryScreen().grabWindow(0).save(str(args.out))
            shot["done"] = True
            app.quit()

        QTimer.singleShot(800, capture)
        QTimer.singleShot(300_000, app.quit)
        app.exec()
        background.close()
        window.close_resources()
        session.shutdown()
    print(args.out if shot["done"] else "no screenshot: timed out", file=sys.stderr)
    return 0 if shot["done"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
