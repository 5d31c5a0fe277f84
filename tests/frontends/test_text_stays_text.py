"""What a model or a server writes is shown as text: never an instruction to the terminal,
never HTML in the window.

Through the real command line against the test server (an answer that sets the window's
title, clears the screen and plants a link; an error message doing the same), and through
real offscreen widgets (a status or a banner that holds markup)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from app.core.terminal import printable
from app.frontends.console import LiveTranscript, TerminalStream
from devtools.fake_server import FakeServer, Fault, Profile
from tests.frontends.test_cli_faults import env_for
from tests.speech import synth

TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J\x1b[H"
LINK_OPEN, LINK_CLOSE = "\x1b]8;;https://evil.example/\x1b\\", "\x1b]8;;\x1b\\"
HOSTILE = (f"{TITLE}Start with{CLEAR} the {LINK_OPEN}requirements{LINK_CLOSE}, "
           "then\u202e the \x9b31mplan\x07.")
"""A title-setting OSC, a clear-screen, an OSC-8 link (as the issue measured them), a
bidi override, a C1 CSI and a BEL; what a terminal would show of it is :data:`VISIBLE`."""
VISIBLE = "Start with the requirements, then the plan."
QUESTION = "Why are you interested in this role?"


def _run(server: FakeServer, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    clip = synth(QUESTION)
    return subprocess.run([sys.executable, "-m", "app", "listen", "--headless", "--audio", str(clip),
                           "--base-url", server.start(), "--api-key", "sk-x", "--no-low-latency"],
                          capture_output=True, timeout=180, env=env_for(tmp_path))


def _no_controls(out: bytes) -> None:
    assert out.count(b"\x1b") == 0 and out.count(b"\x07") == 0, out
    text = out.decode("utf-8")
    assert printable(text) == text, ascii(text)


@pytest.mark.slow
def test_a_hostile_answer_reaches_the_terminal_as_text(tmp_path: Path) -> None:
    with FakeServer(Profile(), api_key=None) as server:
        server.faults.append(Fault("say", message=HOSTILE, times=10))
        out = _run(server, tmp_path)
    assert out.returncode == 0, out.stderr.decode()
    _no_controls(out.stdout)
    _no_controls(out.stderr)
    assert f"A: {VISIBLE}" in out.stdout.decode(), out.stdout.decode()
    saved = next((tmp_path / "data").rglob("session-*.jsonl")).read_text(encoding="utf-8")
    assert "\\u001b]0;pwned" in saved  # the session file keeps what was sent, JSON-escaped: data


@pytest.mark.slow
def test_a_hostile_error_message_reaches_the_terminal_as_text(tmp_path: Path) -> None:
    with FakeServer(Profile(), api_key=None) as server:
        server.faults.append(Fault("status", status=500, message=f"overloaded{TITLE}{CLEAR} now",
                                   times=10))
        out = _run(server, tmp_path)
    assert out.returncode == 3, out.stderr.decode()
    _no_controls(out.stdout)
    _no_controls(out.stderr)
    assert "Server said: overloaded now" in out.stdout.decode(), out.stdout.decode()


def test_the_live_transcript_keeps_its_own_line_rewrite_only() -> None:
    """On a terminal the partial caption rewrites its line (the app's own sequence, written
    past the filter); whatever the text holds is stripped."""
    from app.core.events import PartialEvent, StatusEvent

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    raw = Tty()
    transcript = LiveTranscript(TerminalStream(raw), answers=True)  # type: ignore[arg-type]
    transcript(PartialEvent(t=0.0, turn=1, text=f"Why{CLEAR}", stable="", audio_end=0.0))
    transcript(StatusEvent(t=0.0, stage="llm", message=f"warming up: {TITLE}down"))
    assert raw.getvalue() == "\r\x1b[K… Why\r\x1b[K[llm] warming up: down\n"


def test_anything_printed_is_made_safe() -> None:
    raw = io.StringIO()
    stream = TerminalStream(raw)
    print(f"error: {HOSTILE}", file=stream)
    assert raw.getvalue() == f"error: {VISIBLE}\n"


# --- the window's labels ----------------------------------------------------------------

MARKUP = "<b>x</b><img src='file:///etc/hostname'> & <a href='https://evil.example/'>y</a>"


def _shown(label: QLabel, qtbot: QtBot) -> str:
    """What the label shows, as a user selecting all of it (Ctrl+A) would copy it."""
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                  | Qt.TextInteractionFlag.TextSelectableByKeyboard)
    qtbot.keyClick(label, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)  # type: ignore[no-untyped-call]
    return label.selectedText()


def test_a_status_message_shows_markup_as_text(qtbot: QtBot) -> None:
    from app.ui.status import StatusPanel

    panel = StatusPanel()
    qtbot.addWidget(panel)
    panel.set_message(f"llm: warming up: {MARKUP}")
    assert _shown(panel.message_label, qtbot) == f"llm: warming up: {MARKUP}"
    for label in (panel.latency_label, panel.cost_label, panel.speculation_label):
        label.setText(MARKUP)
        assert _shown(label, qtbot) == MARKUP


@pytest.mark.parametrize("title", ["Llm", ""])
def test_a_banner_shows_markup_as_text(qtbot: QtBot, title: str) -> None:
    from app.ui.banner import BannerArea

    area = BannerArea()
    qtbot.addWidget(area)
    banner = area.show_message("error", title, MARKUP)
    shown = _shown(banner.label, qtbot)
    assert shown.endswith(MARKUP) and "&lt;" not in shown
    assert banner.text() == shown


def test_recalled_lines_show_markup_as_text(qtbot: QtBot) -> None:
    from app.core.events import RecallEvent, RecallLine
    from app.ui.recall_view import RecallView

    view = RecallView()
    qtbot.addWidget(view)
    view.show_recall(RecallEvent(t=0.0, turn=1, lines=(RecallLine(text=MARKUP, source="resume", score=1.0),)))
    assert MARKUP in _shown(view, qtbot)
