"""The sessions viewer opens a file with malformed lines, says so once and shows the
rest (issue 54, item 6): valid JSON of the wrong shape crashed it."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path

from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from app.ui.sessions_dialog import SessionViewer
from tests.observing.test_malformed_lines import GARBAGE, WRONG_SHAPE, session  # noqa: F401 (a fixture)


def test_the_sessions_viewer_opens_it(session: Path, qtbot: QtBot) -> None:  # noqa: F811
    viewer = SessionViewer(session)
    qtbot.addWidget(viewer)
    labels = [w.text() for w in viewer.findChildren(QLabel)]
    said = [t for t in labels if "unreadable line(s) skipped" in t]
    assert said == [f"  {len(WRONG_SHAPE) + len(GARBAGE)} unreadable line(s) skipped"]
    shown = "".join(b.text for b in viewer.panes.answer.blocks)
    assert "A balanced tree." in shown
