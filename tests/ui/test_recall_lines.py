"""The recalled résumé lines in the window: above the answer, newest question only."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from app.core.config import Settings
from app.core.events import FinalEvent, RecallEvent, RecallLine, TokenEvent
from app.ui.window import MainWindow
from tests.ui_fakes import AcceptingBackend, FakeController

KAFKA = RecallLine("Replaced nightly batch jobs with a Kafka event pipeline", "resume", 1.2)
JOB = RecallLine("Lead the move of our batch ETL to streaming with <Kafka> & Flink", "job", 0.9)


@pytest.fixture
def controller() -> Iterator[FakeController]:
    fake = FakeController()
    fake.clock.start()
    yield fake
    fake.shutdown()


@pytest.fixture
def window(qtbot: QtBot, controller: FakeController, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[MainWindow]:
    monkeypatch.setenv("INTERVIEW_COPILOT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    win = MainWindow(controller, Settings(), hotkey_backend=AcceptingBackend(),  # type: ignore[arg-type]
                     settings_path=tmp_path / "config" / "settings.toml", state_file=tmp_path / "w.ini")
    qtbot.addWidget(win)
    win.show()
    yield win
    win.close_resources()


def test_recalled_lines_show_above_the_answer_and_follow_the_newest_question(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    recall = window.panes.recall
    assert not recall.isVisible()  # nothing recalled: no room taken
    controller.emit_from_thread([
        FinalEvent(t=1.0, turn=1, text="what did you use kafka for", audio_end=1.0),
        RecallEvent(t=1.0, turn=1, lines=(KAFKA, JOB)),
        TokenEvent(t=1.2, turn=1, request=1, text="- I built an event pipeline"),
    ])
    qtbot.waitUntil(lambda: window.panes.answer.current_answer() != "", timeout=5000)
    assert recall.isVisible() and recall.lines == (KAFKA, JOB)
    assert recall.plain_text() == f"{KAFKA.text}\n{JOB.text}"
    assert "&lt;Kafka&gt; &amp; Flink" in recall.text() and "· job" in recall.text()  # escaped, sourced
    above = recall.mapTo(window, recall.rect().topLeft()).y()
    below = window.panes.answer.mapTo(window, window.panes.answer.rect().topLeft()).y()
    assert above < below
    controller.emit_from_thread([RecallEvent(t=2.0, turn=2, lines=(), guessed=False),
                                 RecallEvent(t=2.1, turn=1, lines=(KAFKA,)),  # late, older turn
                                 TokenEvent(t=2.2, turn=2, request=2, text="- In my last role")])
    qtbot.waitUntil(lambda: window.panes.answer.current_answer() == "- In my last role", timeout=5000)
    assert recall.turn == 2 and recall.lines == () and not recall.isVisible()
