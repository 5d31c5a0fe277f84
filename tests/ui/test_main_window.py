"""The window, driven through the Controller protocol with events from other threads."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QColor, QTextCursor
from pytestqt.qtbot import QtBot

from app.core.config import Settings, load_settings
from app.core.events import (
    AnswerDoneEvent,
    CutEvent,
    EndpointEvent,
    ErrorEvent,
    Event,
    FinalEvent,
    FirstTokenEvent,
    LevelEvent,
    PaintedEvent,
    PartialEvent,
    RequestEvent,
    RestoredEvent,
    ResumedEvent,
    RetractedEvent,
    SessionStateEvent,
    SpeculateEvent,
    SpeculationEvent,
    StatusEvent,
    TokenEvent,
    TurnStatsEvent,
    Usage,
    VadEvent,
)
from app.observing.session_files import SessionLog
from app.platform import secrets
from app.ui.hotkeys import ACTIONS, HotkeyError, NullBackend, parse_hotkey
from app.ui.hotkeys.macos import to_carbon
from app.ui.hotkeys.windows import to_windows
from app.ui.hotkeys.x11 import to_pynput
from app.ui.settings import SettingsDialog
from app.ui.window import MainWindow
from tests.ui_fakes import AcceptingBackend, FakeController, MemoryKeyring, RefusingBackend


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryKeyring]:
    monkeypatch.setenv("INTERVIEW_COPILOT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for var in ("INTERVIEW_COPILOT_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    previous = keyring.get_keyring()
    memory = MemoryKeyring()
    keyring.set_keyring(memory)
    yield memory
    keyring.set_keyring(previous)


@pytest.fixture
def controller() -> Iterator[FakeController]:
    fake = FakeController()
    fake.clock.start()
    yield fake
    fake.shutdown()


def make_window(
    qtbot: QtBot,
    controller: FakeController,
    tmp_path: Path,
    **kwargs: object,
) -> MainWindow:
    kwargs.setdefault("hotkey_backend", AcceptingBackend())
    kwargs.setdefault("settings_path", tmp_path / "config" / "settings.toml")
    window = MainWindow(controller, kwargs.pop("settings", Settings()),  # type: ignore[arg-type]
                        state_file=tmp_path / "window.ini", **kwargs)  # type: ignore[arg-type]
    qtbot.addWidget(window)
    return window


@pytest.fixture
def window(qtbot: QtBot, controller: FakeController, tmp_path: Path) -> Iterator[MainWindow]:
    win = make_window(qtbot, controller, tmp_path)
    yield win
    win.close_resources()


def answer_text(window: MainWindow) -> str:
    return "".join(b.text for b in window.panes.answer.blocks)


# --- answer pane ------------------------------------------------------------------------


def test_tokens_from_a_background_thread_arrive_in_order(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    tokens = [f" t{i}" for i in range(300)]
    controller.emit_from_thread(TokenEvent(t=0.0, turn=1, request=1, text=x) for x in tokens)
    qtbot.waitUntil(lambda: answer_text(window) == "".join(tokens), timeout=5000)
    assert window.panes.answer.toPlainText().endswith(" t298 t299")
    assert window.status.state == "answering"


def test_only_token_events_add_answer_text(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    events: list[Event] = [
        SpeculateEvent(t=1.0, turn=0, text="DISCARDED question", reason="silence"),
        RequestEvent(t=1.0, turn=1, request=1, kind="speculative", text="DISCARDED request"),
        FirstTokenEvent(t=1.2, turn=1, request=1, ttft=0.2),
        SpeculationEvent(t=1.3, turn=1, request=1, outcome="miss", similarity=0.4),
        RequestEvent(t=1.4, turn=1, request=2, kind="final", text="The real question?"),
        AnswerDoneEvent(t=1.5, turn=0, request=1, text="DISCARDED answer"),
        TokenEvent(t=1.6, turn=1, request=1, text="Shown"),
        TokenEvent(t=1.61, turn=1, request=1, text=" answer."),
    ]
    controller.emit_from_thread(events)
    qtbot.waitUntil(lambda: answer_text(window) == "Shown answer.", timeout=3000)
    plain = window.panes.answer.toPlainText()
    assert "DISCARDED" not in plain and "real question" not in plain
    assert window.panes.answer.current_answer() == "Shown answer."


def test_new_turn_and_regenerate_start_new_blocks(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    controller.emit_from_thread([
        TokenEvent(t=1.0, turn=1, request=1, text="First."),
        TokenEvent(t=2.0, turn=2, request=2, text="Second."),
        RequestEvent(t=3.0, turn=2, request=5, kind="regenerate", text="q"),
        TokenEvent(t=3.1, turn=2, request=5, text="Again."),
    ])
    qtbot.waitUntil(lambda: len(window.panes.answer.blocks) == 3, timeout=3000)
    blocks = window.panes.answer.blocks
    assert [b.text for b in blocks] == ["First.", "Second.", "Again."]
    assert [b.regenerated for b in blocks] == [False, False, True]
    plain = window.panes.answer.toPlainText()
    assert plain.index("First.") < plain.index("Second.") < plain.index("Again.")
    assert "regenerated" in plain


def test_a_cut_answer_ends_its_block_and_a_taken_back_one_collapses(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    controller.emit_from_thread([
        TokenEvent(t=1.0, turn=1, request=1, text="A long first answer"),
        CutEvent(t=1.5, turn=1, request=1),
        AnswerDoneEvent(t=1.5, turn=1, request=1, text="A long first answer", truncated=True),
        TokenEvent(t=1.6, turn=2, request=2, text="Yes, a team of four."),
        ResumedEvent(t=2.0, turn=2, pause=0.4),
        RetractedEvent(t=2.05, turn=2, request=2, reason="continued"),
        TokenEvent(t=3.0, turn=2, request=3, text="Yes, twelve people."),
    ])
    view = window.panes.answer
    qtbot.waitUntil(lambda: len(view.blocks) == 3, timeout=3000)
    plain = view.toPlainText()
    assert "cut short" in plain and plain.index("cut short") < plain.index("taken back")
    assert "taken back (the question went on): Yes, a team of four." in plain
    assert "\nYes, a team of four." not in plain  # collapsed to the one dimmed line
    assert view.current_answer() == "Yes, twelve people."
    assert not view.blocks[2].regenerated  # the whole question's answer, not a regeneration
    controller.emit_from_thread([RestoredEvent(t=4.0, turn=2, request=2)])
    qtbot.waitUntil(lambda: "taken back" not in view.toPlainText(), timeout=3000)


def test_markdown_bullets_render_incrementally(qtbot: QtBot, window: MainWindow) -> None:
    view = window.panes.answer
    for token in ["**Short", " answer:**", " yes.\n", "-", " Use", " `idx`", "\n", "- Two\n",
                  "1.", " Numbered\n"]:
        view.append_token(1, 1, token)
    doc = view.document()
    blocks = [doc.findBlockByNumber(i) for i in range(doc.blockCount())]
    texts = [b.text() for b in blocks]
    assert "Short answer: yes." in texts  # ** markers removed
    bullet = next(b for b in blocks if b.text() == "Use idx")
    assert bullet.textList() is not None  # "- " became a real list item
    two = next(b for b in blocks if b.text() == "Two")
    assert two.textList() is bullet.textList()  # consecutive bullets share one list
    numbered = next(b for b in blocks if b.text() == "Numbered")
    assert numbered.textList() is not None and numbered.textList() is not bullet.textList()
    cursor = QTextCursor(next(b for b in blocks if b.text().startswith("Short")))
    cursor.movePosition(QTextCursor.MoveOperation.Right)
    assert cursor.charFormat().fontWeight() >= 600  # bold
    assert view.current_answer().startswith("**Short answer:** yes.")


def test_paint_reports_painted_events(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    painted: list[PaintedEvent] = []
    controller.bus.subscribe(lambda e: painted.append(e) if isinstance(e, PaintedEvent) else None)
    window.show()
    qtbot.waitExposed(window)
    handed_over = controller.clock.now()
    controller.emit_from_thread([TokenEvent(t=handed_over, turn=7, request=7, text="Hello")])
    qtbot.waitUntil(lambda: bool(painted), timeout=30_000)
    seen_at = controller.clock.now()
    # Measured on the session clock from the hand-over: within the time this test watched
    # it, however slowly this machine painted (another clock or start would fall outside).
    assert painted[0].turn == 7 and 0.0 <= painted[0].latency <= seen_at - handed_over
    assert painted[0].t == pytest.approx(handed_over + painted[0].latency)


# --- transcript -------------------------------------------------------------------------


def test_partial_rewrites_in_place_with_a_lighter_tail(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    t = window.panes.transcript
    controller.emit_from_thread([
        FinalEvent(t=0.5, turn=0, text="Hello there.", audio_end=0.5),
        PartialEvent(t=1.0, turn=1, text="What is", stable="", audio_end=1.0),
        PartialEvent(t=1.3, turn=1, text="What is your great", stable="What is", audio_end=1.3),
    ])
    qtbot.waitUntil(lambda: "your great" in t.toPlainText(), timeout=3000)
    assert t.toPlainText() == "Hello there.\nWhat is your great"
    block = t.document().findBlockByNumber(1)
    stable_fmt = QTextCursor(block)
    stable_fmt.setPosition(block.position() + 2)
    tail_fmt = QTextCursor(block)
    tail_fmt.setPosition(block.position() + len("What is your") + 1)
    faint = QColor(window._theme.faint)
    assert stable_fmt.charFormat().foreground().color() != faint
    assert tail_fmt.charFormat().foreground().color() == faint
    controller.emit_from_thread([
        FinalEvent(t=2.0, turn=1, text="What is your greatest strength?", audio_end=2.0),
        PartialEvent(t=2.1, turn=1, text="stale partial", stable="", audio_end=1.9),
        FinalEvent(t=2.5, turn=2, text="Next.", audio_end=2.5),  # shown after the stale one was handled
    ])
    qtbot.waitUntil(lambda: "Next." in t.toPlainText(), timeout=30_000)
    assert t.toPlainText() == "Hello there.\nWhat is your greatest strength?\nNext."


# --- status bar -------------------------------------------------------------------------


def test_latency_status_updates_from_a_sequence_of_events(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    controller.emit_from_thread([
        VadEvent(t=10.0, speech=True),
        LevelEvent(t=10.1, dbfs=-12.0),
        VadEvent(t=11.0, speech=False),
        EndpointEvent(t=11.8, turn=3, reason="silence", silence=0.8),
        RequestEvent(t=11.81, turn=4, request=9, kind="final", text="q"),
        FirstTokenEvent(t=12.2, turn=4, request=9, ttft=0.39),
        TokenEvent(t=12.21, turn=4, request=4, text="Yes"),
        PaintedEvent(t=12.23, turn=4, request=4, latency=0.02),
        AnswerDoneEvent(t=12.5, turn=4, request=9, text="Yes",
                        usage=Usage(prompt_tokens=1000, completion_tokens=50), cost=0.0012),
    ])
    expected = ("Last turn 1230 ms: endpoint +800 · request +810 · 1st token +1200 · "
                "shown +1230")
    qtbot.waitUntil(lambda: window.status.latency_label.text() == expected, timeout=3000)
    assert window.status.cost_label.text() == "1,050 tok · $0.0012"
    assert window.status.meter.dbfs == -12.0
    assert window.status.state in ("listening", "stopped")
    controller.emit_from_thread([
        TurnStatsEvent(t=12.6, turn=4, requests=2, speculative_requests=1, hits=0, misses=1,
                       prompt_tokens=2000, completion_tokens=60, wasted_prompt_tokens=1000,
                       wasted_completion_tokens=10, cost=0.0024, wasted_cost=0.0012),
    ])
    qtbot.waitUntil(lambda: "2,060 tok" in window.status.cost_label.text(), timeout=3000)
    assert "spec. waste $0.0012" in window.status.cost_label.text()


def test_speculation_outcome_in_status(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    controller.emit_from_thread([
        VadEvent(t=1.0, speech=False),
        RequestEvent(t=1.25, turn=1, request=1, kind="speculative", text="q"),
        EndpointEvent(t=1.3, turn=0, reason="question", silence=0.3),
        SpeculationEvent(t=1.31, turn=1, request=1, outcome="hit", similarity=0.97),
        FirstTokenEvent(t=1.5, turn=1, request=1, ttft=0.25),
        TokenEvent(t=1.51, turn=1, request=1, text="A"),
    ])
    qtbot.waitUntil(lambda: "spec. hit" in window.status.latency_label.text(), timeout=3000)
    assert "request +250 spec. hit" in window.status.latency_label.text()
    assert window.status.speculation_label.text() == "hit (0.97)"


def test_error_banner_is_non_modal_and_dismissable(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    message = "The API key was rejected (401). Open Settings → Model and paste a valid key."
    controller.emit_from_thread([ErrorEvent(t=1.0, stage="llm", message=message)] * 2)
    qtbot.waitUntil(lambda: bool(window.banners.banners) and window.banners.banners[0].count == 2,
                    timeout=3000)
    assert len(window.banners.banners) == 1  # repeated message counted, not stacked
    assert message in window.banners.texts()[0]
    window.banners.dismiss(window.banners.banners[0])
    assert window.banners.banners == [] and not window.banners.isVisible()


def test_controls_drive_the_controller(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    window.start_button.click()
    window.answer_button.click()
    window.cancel_button.click()
    window.regen_button.click()
    window.low_latency_button.click()
    window.withdraw_action.trigger()
    assert controller.calls == ["start", "answer_now", "cancel_answer", "regenerate",
                                "set_low_latency:False", "retract_answer"]
    assert window.start_button.text() == "Stop listening"
    assert "off" in window.status.low_latency_label.text()


def test_the_window_shows_low_latency_mode_as_its_owner_changes_it(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    """The session owns the mode and changes it on its own thread (a hotkey, the command
    line): the button and the status line follow, painted on the window's thread."""
    assert window.low_latency_button.isChecked() and "on" in window.status.low_latency_label.text()
    changer = threading.Thread(target=controller.low_latency.set, args=(False,))
    changer.start()
    changer.join()
    qtbot.waitUntil(lambda: not window.low_latency_button.isChecked(), timeout=3000)
    assert "off" in window.status.low_latency_label.text()
    assert "set_low_latency:False" not in controller.calls  # shown, not asked again


# --- settings ---------------------------------------------------------------------------


def test_settings_round_trip_key_goes_to_keyring_only(
    qtbot: QtBot, window: MainWindow, tmp_path: Path, _isolated: MemoryKeyring
) -> None:
    dialog = window.open_settings()
    qtbot.addWidget(dialog)
    dialog.base_url.setText("https://api.example.com/v1")
    dialog.model.setText("gpt-4o-mini")
    dialog.api_key.setText("sk-test-SECRET-1234567890")
    dialog.http2.setChecked(True)
    dialog.turn_spins["endpoint_silence_ms"].setValue(650)
    dialog.hotkey_edits["answer_now"].setText("Ctrl+Shift+Space")
    dialog.large_font.setChecked(True)
    dialog.accept()
    assert dialog.result_settings is not None
    path = tmp_path / "config" / "settings.toml"
    text = path.read_text(encoding="utf-8")
    assert "SECRET" not in text and "sk-test" not in text
    loaded, problems = load_settings(path)
    assert problems == []
    assert loaded.llm.base_url == "https://api.example.com/v1" and loaded.llm.http2
    assert loaded.llm.model == "gpt-4o-mini"
    assert loaded.turns.endpoint_silence_ms == 650
    assert loaded.hotkeys.answer_now == "ctrl+shift+space"
    assert secrets.get_api_key("https://api.example.com/v1") == "sk-test-SECRET-1234567890"
    assert _isolated.store == {("interview-copilot", "https://api.example.com"): "sk-test-SECRET-1234567890"}
    qtbot.waitUntil(lambda: window.settings.ui.large_font, timeout=2000)
    # reopening shows the stored key (masked) and saving unchanged keeps it
    again = SettingsDialog(loaded, path)
    qtbot.addWidget(again)
    assert again.api_key.text() == "sk-test-SECRET-1234567890"
    assert again.api_key.echoMode() == again.api_key.EchoMode.Password


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.turn_spins["endpoint_silence_ms"].setValue(20),
         "End of turn after silence (ms): Input should be greater than or equal to 100"),
        (lambda d: d.hotkey_edits["toggle_low_latency"].setText("ctrl+alt+nonsense"),
         "unknown key 'nonsense'"),
        (lambda d: d.base_url.setText("api.example.com"), "must start with http"),
        (lambda d: d.resume.setText("/no/such/resume.pdf"), "File not found"),
    ],
)
def test_invalid_settings_are_rejected_with_a_message(
    qtbot: QtBot, tmp_path: Path, edit: object, message: str
) -> None:
    path = tmp_path / "settings.toml"
    dialog = SettingsDialog(Settings(), path)
    qtbot.addWidget(dialog)
    edit(dialog)  # type: ignore[operator]
    dialog.accept()
    assert dialog.result_settings is None
    assert not dialog.error_label.isHidden()
    assert message in dialog.error_label.text()
    assert not path.exists()


def test_broken_toml_shows_the_problem_banner(
    qtbot: QtBot, controller: FakeController, tmp_path: Path
) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('[turns]\nendpoint_silence_ms = "soon"\n\n[ui]\ntheme = "purple"\n',
                    encoding="utf-8")
    settings, problems = load_settings(path)
    window = make_window(qtbot, controller, tmp_path, settings=settings, problems=problems,
                         settings_path=path)
    texts = "\n".join(window.banners.texts())
    assert f"{path}:2: turns.endpoint_silence_ms" in texts
    assert f"{path}:5: ui.theme" in texts
    window.close_resources()


# --- hotkeys ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical", "mac"),
    [
        ("ctrl+alt+l", "ctrl+alt+l", "⌃⌥L"),
        ("Ctrl + Alt + L", "ctrl+alt+l", "⌃⌥L"),
        ("⌃⌥L", "ctrl+alt+l", "⌃⌥L"),
        ("control+option+space", "ctrl+alt+space", "⌃⌥Space"),
        ("cmd+shift+F5", "shift+meta+f5", "⇧⌘F5"),
        ("F9", "f9", "F9"),
        ("alt+,", "alt+,", "⌥,"),
        ("ctrl+alt+pgdn", "ctrl+alt+pagedown", "⌃⌥Pagedown"),
    ],
)
def test_hotkey_parsing(text: str, canonical: str, mac: str) -> None:
    hotkey = parse_hotkey(text)
    assert hotkey.canonical() == canonical
    assert hotkey.display(mac=True) == mac
    assert parse_hotkey(hotkey.canonical()) == hotkey
    assert not hotkey.to_qt().isEmpty()


@pytest.mark.parametrize(
    ("text", "why"),
    [("", "empty"), ("ctrl+alt", "only modifiers"), ("l", "needs ctrl"),
     ("ctrl+a+b", "two keys"), ("ctrl+ctrl+l", "twice"), ("ctrl+alt+nope", "unknown key"),
     ("shift+x", "needs ctrl")],
)
def test_invalid_hotkeys_are_rejected(text: str, why: str) -> None:
    with pytest.raises(HotkeyError, match=why):
        parse_hotkey(text)


def test_pynput_and_windows_forms() -> None:
    hotkey = parse_hotkey("ctrl+alt+l")
    assert to_pynput(hotkey) == "<ctrl>+<alt>+l"
    assert to_windows(hotkey) == (0x4000 | 2 | 1, ord("L"))
    assert to_carbon(hotkey) == (37, 0x1000 | 0x800)
    assert to_pynput(parse_hotkey("cmd+pageup")) == "<cmd>+<page_up>"


def test_refused_global_hotkeys_fall_back_to_in_window_shortcuts(
    qtbot: QtBot, controller: FakeController, tmp_path: Path
) -> None:
    backend = RefusingBackend()
    window = make_window(qtbot, controller, tmp_path, hotkey_backend=backend)
    assert backend.attempts == list(ACTIONS)
    shortcuts = window.hotkeys.shortcuts
    assert set(shortcuts) == set(ACTIONS)
    assert shortcuts["toggle_low_latency"].key().toString() == "Ctrl+Shift+L"
    texts = "\n".join(window.banners.texts())
    assert "already used by another application" in texts
    assert "works only while this window is focused" in texts
    assert "in-window" in window.status.message_label.text()
    shortcuts["answer_now"].activated.emit()
    qtbot.waitUntil(lambda: "answer_now" in controller.calls, timeout=2000)
    window.close_resources()


def test_platform_without_global_hotkeys_says_so(
    qtbot: QtBot, controller: FakeController, tmp_path: Path
) -> None:
    window = make_window(qtbot, controller, tmp_path,
                         hotkey_backend=NullBackend("Wayland does not let applications "
                                                    "register global hotkeys"))
    assert any("Wayland" in t for t in window.banners.texts())
    assert len(window.hotkeys.shortcuts) == len(ACTIONS)
    window.close_resources()


def test_invalid_configured_hotkey_keeps_the_default(
    qtbot: QtBot, controller: FakeController, tmp_path: Path
) -> None:
    settings = Settings()
    settings.hotkeys.toggle_low_latency = "ctrl+alt+???"
    backend = AcceptingBackend()
    window = make_window(qtbot, controller, tmp_path, settings=settings, hotkey_backend=backend)
    assert window.hotkeys.bindings["toggle_low_latency"] == parse_hotkey("ctrl+shift+l")
    assert any("using ctrl+shift+l" in t for t in window.banners.texts())
    # a global trigger from another thread toggles once even if the shortcut fires too
    thread = threading.Thread(target=backend.callbacks["toggle_low_latency"])
    thread.start()
    thread.join()
    window.hotkeys.shortcuts["toggle_low_latency"].activated.emit()
    qtbot.waitUntil(lambda: "set_low_latency:False" in controller.calls, timeout=30_000)
    QCoreApplication.sendPostedEvents()  # the global trigger's queued delivery, if still queued
    assert controller.calls.count("set_low_latency:False") == 1
    assert "set_low_latency:True" not in controller.calls
    window.close_resources()


# --- sessions and lifecycle ---------------------------------------------------------------


def test_export_and_reopen_session(
    qtbot: QtBot, controller: FakeController, tmp_path: Path
) -> None:
    log = SessionLog()
    log.attach(controller.bus)
    window = make_window(qtbot, controller, tmp_path, session_log=log)
    controller.emit_from_thread([
        FinalEvent(t=1.0, turn=1, text="Why Python?", audio_end=1.0),
        EndpointEvent(t=1.5, turn=1, reason="silence", silence=0.8),
        TokenEvent(t=2.0, turn=1, request=1, text="- Fast to write\n"),
    ])
    qtbot.waitUntil(lambda: window.panes.answer.current_answer() == "- Fast to write",
                    timeout=3000)
    out = window.write_export(tmp_path / "out.md")
    assert out is not None
    md = out.read_text(encoding="utf-8")
    assert "> Why Python?" in md and "- Fast to write" in md
    from app.ui.sessions_dialog import SessionsDialog

    dialog = SessionsDialog(window, current=log.path)
    qtbot.addWidget(dialog)
    assert "(this session)" in dialog.list.item(0).text()
    dialog.list.setCurrentRow(0)
    viewer = dialog.open_selected()
    assert viewer is not None
    qtbot.addWidget(viewer)
    assert viewer.panes.transcript.toPlainText() == "Why Python?"
    assert viewer.panes.answer.current_answer() == "- Fast to write"
    assert viewer.panes.answer.isReadOnly()
    log.close()
    window.close_resources()


def test_geometry_is_remembered(qtbot: QtBot, controller: FakeController, tmp_path: Path) -> None:
    first = make_window(qtbot, controller, tmp_path)
    first.resize(611, 533)
    first.save_geometry()
    first.close_resources()
    second = make_window(qtbot, controller, tmp_path)
    assert (second.width(), second.height()) == (611, 533)
    second.close_resources()


def test_thousands_of_tokens_do_not_exhaust_singleton_refcounts(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    """PySide6 6.12 drops a reference to None per void call (see app.ui.qtcompat); without
    the guard, one long answer aborts CPython 3.11 with "none_dealloc"."""
    import sys

    count = 4000
    controller.emit_from_thread(TokenEvent(t=0.0, turn=1, request=1, text=" w") for _ in range(count))
    qtbot.waitUntil(lambda: len(answer_text(window)) == 2 * count, timeout=10000)
    if sys.version_info < (3, 12):
        assert sys.getrefcount(None) > 1 << 39
        assert sys.getrefcount(True) > 1 << 39


_RUN_WINDOW = """
import sys
from pathlib import Path
from PySide6.QtCore import QTimer
from app.core.config import Settings
from app.observing.session_files import SessionLog
from app.ui import app as ui_app, hotkeys
from app.ui.window import MainWindow
from tests.ui_fakes import FakeController

tmp = Path(sys.argv[1])
ui_app.ensure_app()  # the timer below needs the application that run_window will reuse
controller = FakeController()
log = SessionLog(tmp / "session-x.jsonl")
hotkeys.default_backend = lambda: hotkeys.NullBackend("tests")
def close_all():
    for widget in ui_app.QApplication.topLevelWidgets():
        if isinstance(widget, MainWindow):
            widget.close()
QTimer.singleShot(200, close_all)
code = ui_app.run_window(controller, Settings(), settings_path=tmp / "s.toml", session_log=log)
log.close()
assert code == 0, code
assert controller.calls[0] == "start" and controller.calls[-1] == "shutdown", controller.calls
print("ok")
"""


def test_run_window_starts_and_shuts_down(tmp_path: Path) -> None:
    """In its own process: once ``app.exec()`` has returned, pytest-qt's waits in the same
    process no longer see queued cross-thread signals (the CLI runs the loop once)."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(tmp_path / "data"),
           "INTERVIEW_COPILOT_CONFIG_DIR": str(tmp_path / "config")}
    out = subprocess.run([sys.executable, "-c", _RUN_WINDOW, str(tmp_path)], cwd=root, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


def test_about_lists_versions_and_model_licences(qtbot: QtBot, window: MainWindow,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from app.ui import window as window_module

    shown: list[str] = []
    monkeypatch.setattr(window_module.QMessageBox, "about", lambda _parent, _title, text: shown.append(text))
    window.show_about()
    assert shown and "faster-whisper" in shown[0] and "Apache" in shown[0] and "MIT" in shown[0]


# --- latency breakdown bar and session view ---------------------------------------------


def _two_turns() -> list[Event]:
    """Turn 1: a speculative request leaves before the endpoint and hits.  Turn 2: the
    guess misses and the final request is sent after the final transcript."""
    return [
        VadEvent(t=0.2, speech=True),
        VadEvent(t=1.0, speech=False),
        RequestEvent(t=1.25, turn=1, request=1, kind="speculative", text="q1"),
        EndpointEvent(t=1.3, turn=0, reason="question", silence=0.3),
        FinalEvent(t=1.31, turn=0, text="q1", audio_end=1.0),
        SpeculationEvent(t=1.315, turn=1, request=1, outcome="hit", similarity=0.97),
        FirstTokenEvent(t=1.5, turn=1, request=1, ttft=0.25),
        TokenEvent(t=1.51, turn=1, request=1, text="A"),
        TokenEvent(t=1.52, turn=1, request=1, text=" one."),
        PaintedEvent(t=1.53, turn=1, request=1, latency=0.02),
        VadEvent(t=4.0, speech=True),
        VadEvent(t=5.0, speech=False),
        RequestEvent(t=5.4, turn=2, request=2, kind="speculative", text="q2?"),
        EndpointEvent(t=5.6, turn=1, reason="silence", silence=0.6),
        FinalEvent(t=5.7, turn=1, text="q2 really", audio_end=5.0),
        SpeculationEvent(t=5.71, turn=2, request=2, outcome="miss", similarity=0.4),
        RequestEvent(t=5.72, turn=2, request=3, kind="final", text="q2 really"),
        FirstTokenEvent(t=6.1, turn=2, request=3, ttft=0.38),
        TokenEvent(t=6.11, turn=2, request=2, text="B"),
        PaintedEvent(t=6.14, turn=2, request=2, latency=0.03),
    ]


def _durations_ms(window: MainWindow) -> dict[str, int]:
    return {s.key: round(s.duration * 1000) for s in window.status.breakdown.segments()}


def test_breakdown_bar_partitions_the_last_turn(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    events = _two_turns()
    controller.emit_from_thread(events[:10])
    bar = window.status.breakdown
    qtbot.waitUntil(lambda: bar.turn is not None and bar.turn.shown is not None, timeout=3000)
    assert _durations_ms(window) == {"endpoint": 300, "final": 10, "llm": 190, "held": 10, "paint": 20}
    assert bar.turn is not None and bar.turn.llm_span is not None
    assert [round(x * 1000) for x in bar.turn.llm_span] == [250, 500]  # starts inside the wait
    assert round(bar.segments()[-1].end * 1000) == 530 == round((bar.turn.response or 0) * 1000)
    tip = bar.toolTip()
    assert "530 ms" in tip and "190 ms" in tip and "250 ms" in tip and "before the endpoint" in tip
    assert not bar.grab().isNull()

    controller.emit_from_thread(events[10:])
    qtbot.waitUntil(lambda: bar.turn is not None and bar.turn.turn == 2 and bar.turn.shown is not None,
                    timeout=3000)
    assert _durations_ms(window) == {"endpoint": 600, "final": 100, "llm": 400, "held": 10, "paint": 30}
    assert bar.height() <= 20
    assert not bar.grab().isNull()


def test_latency_view_lists_turns_live_with_outcome_colours(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    from app.ui.latency_view import outcome_colors

    view = window.open_latency_view()
    assert not view.isModal() and view.isVisible()
    assert window.open_latency_view() is view  # one dialog, raised again
    assert view.chart.rows == () and "median" not in view.summary.text()
    assert not view.grab().isNull()

    controller.emit_from_thread(_two_turns())
    qtbot.waitUntil(lambda: len(view.chart.rows) == 2 and all(r.painted for r in view.chart.rows),
                    timeout=3000)
    rows = view.chart.rows
    assert [(r.turn, round(r.latency * 1000), r.outcome) for r in rows] == [
        (1, 530, "hit"), (2, 1140, "miss")]
    colors = outcome_colors(window._theme)
    assert [view.chart.bar_color(r).name() for r in rows] == [colors["hit"], colors["miss"]]
    assert view.summary.text().startswith("2 turns · median 835 ms · p95 1140 ms")
    assert not view.grab().isNull()

    controller.emit_from_thread([  # a turn with no speculation, and a regeneration (left out)
        VadEvent(t=9.0, speech=False),
        EndpointEvent(t=9.5, turn=2, reason="silence", silence=0.5),
        FinalEvent(t=9.6, turn=2, text="q3", audio_end=9.0),
        RequestEvent(t=9.61, turn=3, request=4, kind="final", text="q3"),
        FirstTokenEvent(t=9.9, turn=3, request=4, ttft=0.29),
        TokenEvent(t=9.91, turn=3, request=3, text="C"),
        RequestEvent(t=12.0, turn=4, request=5, kind="regenerate", text="q3"),
        TokenEvent(t=12.3, turn=4, request=4, text="C again"),
    ])
    qtbot.waitUntil(lambda: len(view.chart.rows) == 3 and view.note.isVisibleTo(view), timeout=3000)
    third = view.chart.rows[2]
    assert (third.turn, round(third.latency * 1000), third.outcome) == (3, 910, "none")
    assert view.chart.bar_color(third).name() == colors["none"]
    assert "1 regenerated answer" in view.note.text()


def test_latency_view_and_bar_render_empty(qtbot: QtBot, window: MainWindow) -> None:
    window.show()
    qtbot.waitExposed(window)
    assert window.status.breakdown.segments() == []
    assert not window.status.breakdown.grab().isNull()
    view = window.open_latency_view()
    qtbot.waitExposed(view)
    assert not view.grab().isNull()
    assert view.chart.rows == () and not view.note.isVisibleTo(view)
    view.close()


# --- both sides of the call ---------------------------------------------------------------


def test_a_meter_per_speaker_the_candidates_shown_once_it_delivers(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    status = window.status
    window.show()
    controller.emit_from_thread([LevelEvent(t=1.0, dbfs=-20.0)])
    qtbot.waitUntil(lambda: status.meter.dbfs == -20.0, timeout=3000)
    assert status.meter.isVisible() and not status.candidate_meter.isVisible()
    assert not any(label.isVisible() for label in status.meter_labels.values())
    controller.emit_from_thread([LevelEvent(t=1.1, dbfs=-33.0, speaker="candidate"),
                                 LevelEvent(t=1.2, dbfs=-25.0, speaker="interviewer")])
    qtbot.waitUntil(lambda: status.candidate_meter.dbfs == -33.0, timeout=3000)
    qtbot.waitUntil(lambda: status.meter.dbfs == -25.0, timeout=3000)
    assert status.candidate_meter.isVisible()
    assert [label.text() for label in status.meter_labels.values() if label.isVisible()] == [
        "Interviewer", "You"]
    assert status.candidate_meter.toolTip() == "Your microphone level -33 dBFS"
    # A new session may run without the microphone: its meter waits for its first level.
    controller.emit_from_thread([SessionStateEvent(t=2.0, state="starting")])
    qtbot.waitUntil(lambda: not status.candidate_meter.isVisible(), timeout=3000)
    assert status.meter.isVisible() and status.meter.dbfs == -25.0


def test_a_lost_device_is_an_error_banner_and_the_window_keeps_listening(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    """The window waits for the device to come back (a headless run ends instead): the
    loss is an error banner naming the device, and the session stays where it was: the
    window neither stops it nor shows it stopped, and follows the voice once it is back.
    (With the real Session and device source: tests/ui/test_window_retry.py.)"""
    from app.session.listener import AUDIO_ERROR

    window.start_button.click()
    assert controller.calls == ["start"] and window.start_button.text() == "Stop listening"
    lost = ("Audio device 'pulse:vsink.monitor' was lost (the stream stopped). Check that it is "
            "plugged in; retrying every 1 s.")
    controller.emit_from_thread([SessionStateEvent(t=0.5, state="listening"),
                                 ErrorEvent(t=1.0, stage=AUDIO_ERROR, message=lost)])
    qtbot.waitUntil(lambda: bool(window.banners.banners), timeout=3000)
    banner = window.banners.banners[0]
    assert banner.level == "error" and "pulse:vsink.monitor" in banner.text() and "was lost" in banner.text()
    assert not window.banners.isHidden()
    assert controller.calls == ["start"]  # the window did not stop the session
    assert window.status.state == "listening" and window.start_button.text() == "Stop listening"
    controller.emit_from_thread([VadEvent(t=3.0, speech=True)])  # the device is back: a voice
    qtbot.waitUntil(lambda: window.status.state == "speaking", timeout=3000)
    assert window.start_button.text() == "Stop listening"


def test_echo_status_is_a_banner_suggesting_headphones(
    qtbot: QtBot, window: MainWindow, controller: FakeController
) -> None:
    from app.audio.echo import HEADPHONES_HINT

    controller.emit_from_thread([StatusEvent(t=1.0, stage="echo", message=HEADPHONES_HINT)] * 2
                                + [StatusEvent(t=1.1, stage="audio", message="listening to x")])
    qtbot.waitUntil(lambda: "listening to x" in window.status.message_label.text(), timeout=3000)
    assert len(window.banners.banners) == 1 and window.banners.banners[0].count == 2
    banner = window.banners.banners[0]
    assert banner.level == "warning" and "headphones" in banner.text()
    assert "headphones" not in window.status.message_label.text()


def test_settings_choose_the_candidates_microphone_from_the_same_list(
    qtbot: QtBot, tmp_path: Path
) -> None:
    path = tmp_path / "settings.toml"
    dialog = SettingsDialog(Settings(), path)
    qtbot.addWidget(dialog)
    assert dialog.candidate_on.isChecked() and dialog.candidate_device.isEnabled()
    dialog.device.setCurrentText("Monitor of Speakers")
    dialog.fill_devices(["Monitor of Speakers", "USB Headset Mic", "Built-in Microphone"])
    lists = [[c.itemText(i) for i in range(c.count())]
             for c in (dialog.device, dialog.candidate_device)]
    assert lists[0] == lists[1] == ["", "Monitor of Speakers", "USB Headset Mic",
                                    "Built-in Microphone"]
    assert dialog.device.currentText() == "Monitor of Speakers"  # kept through the refill
    dialog.candidate_device.setCurrentText("USB Headset Mic")
    dialog.accept()
    loaded, problems = load_settings(path)
    assert problems == []
    assert loaded.audio.candidate == "mic" and loaded.audio.candidate_device == "USB Headset Mic"
    assert loaded.audio.device == "Monitor of Speakers"

    again = SettingsDialog(loaded, path)
    qtbot.addWidget(again)
    assert again.candidate_device.currentText() == "USB Headset Mic"
    again.candidate_on.setChecked(False)
    assert not again.candidate_device.isEnabled()
    again.accept()
    off, _ = load_settings(path)
    assert off.audio.candidate == "off" and off.audio.candidate_device == "USB Headset Mic"


def test_background_saves_that_land_out_of_order_keep_the_last_choice(
    qtbot: QtBot, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two menu changes in a row save on two threads; the first thread running last must
    not put the older theme back (issue 54, item 2)."""
    started: list[threading.Thread] = []
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self))
    window.theme_actions["light"].trigger()
    window.theme_actions["dark"].trigger()
    assert len(started) == 2
    for thread in reversed(started):  # the newer save lands first, the older one after it
        thread.run()
    assert load_settings(tmp_path / "config" / "settings.toml")[0].ui.theme == "dark"
