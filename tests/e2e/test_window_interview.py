"""End to end in the real window: a WAV through real ASR, answers from our test server,
the answer text painted in the widget."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from app.asr.decoder import WhisperDecoder
from app.core.config import Settings
from app.core.events import (
    AnswerDoneEvent,
    EndpointEvent,
    Event,
    FinalEvent,
    PaintedEvent,
    PartialEvent,
    SessionStateEvent,
    TokenEvent,
)
from app.llm.endpoint import LlmEndpoint
from app.session.session import Session, Sources
from app.ui.window import MainWindow
from devtools.fake_server import FakeServer, Profile
from tests.speech import synth
from tests.ui_fakes import AcceptingBackend


@pytest.fixture
def server() -> Iterator[FakeServer]:
    profile = Profile(queue_delay=0.02, ttft=0.1, tokens_per_s=100, answer_tokens=20)
    with FakeServer(profile, api_key="k") as s:
        yield s


def test_a_spoken_question_ends_up_painted(qtbot: QtBot, server: FakeServer, decoder: WhisperDecoder,
                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    clip = synth("Why are you interested in this role?")
    copilot = Session(Settings(), sources=Sources(clip), decoder=decoder,
                      llm=LlmEndpoint(server.start(), "k", "gpt-4o-mini", local=False))
    events: list[Event] = []
    lock = threading.Lock()

    def record(event: Event) -> None:
        with lock:
            events.append(event)

    def seen(kind: type) -> list[Event]:
        with lock:
            return [e for e in events if isinstance(e, kind)]

    copilot.bus.subscribe(record)
    window = MainWindow(copilot, Settings(), settings_path=tmp_path / "s.toml",
                        hotkey_backend=AcceptingBackend(), state_file=tmp_path / "w.ini")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    try:
        copilot.start()
        qtbot.waitUntil(lambda: bool(seen(AnswerDoneEvent)), timeout=30_000)
        answer = "".join(e.text for e in seen(TokenEvent))  # type: ignore[attr-defined]
        qtbot.waitUntil(lambda: window.panes.answer.current_answer() == answer, timeout=5_000)
        qtbot.waitUntil(lambda: bool(seen(PaintedEvent)), timeout=5_000)
    finally:
        window.close_resources()
        copilot.shutdown()
    final = seen(FinalEvent)[0]
    assert "interested" in final.text.lower()  # type: ignore[attr-defined]
    assert "interested" in answer.lower()  # the test server answers the question it was asked
    painted = seen(PaintedEvent)
    # Each paint's latency is measured on the session clock from a token's hand-over: never
    # from before the turn's first token (how small it is, bench measures, not this test).
    first_token: dict[int, float] = {}
    for token in seen(TokenEvent):
        first_token.setdefault(token.turn, token.t)  # type: ignore[attr-defined]
    assert painted and all(0.0 <= p.latency <= p.t - first_token[p.turn]  # type: ignore[attr-defined]
                           for p in painted)


def test_the_window_thread_never_emits_and_answer_now_keeps_its_order(
        qtbot: QtBot, server: FakeServer, decoder: WhisperDecoder, tmp_path: Path) -> None:
    """Every window action is a command to the session: no event is emitted on the GUI
    thread (a bus listener there would run, and block, inside a click), Answer now's
    endpoint is decided on the session thread and its final follows it."""
    # long enough that Answer now, clicked at the first caption, comes before the end
    clip = synth("Tell me about a time you disagreed with a colleague about a design, what you "
                 "each proposed, how you settled it, and what you would do differently today.")
    copilot = Session(Settings(), sources=Sources(clip), decoder=decoder,
                      llm=LlmEndpoint(server.start(), "k", "gpt-4o-mini", local=False))
    said: list[tuple[Event, str]] = []
    lock = threading.Lock()

    def record(event: Event) -> None:
        with lock:
            said.append((event, threading.current_thread().name))

    def seen(kind: type) -> list[Event]:
        with lock:
            return [e for e, _ in said if isinstance(e, kind)]

    copilot.bus.subscribe(record)
    window = MainWindow(copilot, Settings(), settings_path=tmp_path / "s.toml",
                        hotkey_backend=AcceptingBackend(), state_file=tmp_path / "w.ini")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    gui = threading.current_thread().name
    try:
        window.start_button.click()
        qtbot.waitUntil(lambda: bool(seen(PartialEvent)), timeout=30_000)
        window.answer_button.click()  # mid-question: whatever was heard is the question
        qtbot.waitUntil(lambda: bool(seen(EndpointEvent)), timeout=30_000)
        turn = seen(EndpointEvent)[0].turn  # type: ignore[attr-defined]
        # its final (or, the voice going on, the continued question's at its end)
        qtbot.waitUntil(lambda: any(f.turn == turn for f in seen(FinalEvent)),  # type: ignore[attr-defined]
                        timeout=60_000)
        window.low_latency_button.click()
        window.regen_button.click()
        window.cancel_button.click()
        window.withdraw_action.trigger()
        window.start_button.click()  # Stop
        qtbot.waitUntil(lambda: copilot.state == "idle", timeout=30_000)
    finally:
        window.close_resources()
        copilot.shutdown()
    assert [t for _, t in said if t == gui] == []
    endpoint = seen(EndpointEvent)[0]
    assert endpoint.reason == "forced"  # type: ignore[attr-defined]
    with lock:
        order = [(e, t) for e, t in said if isinstance(e, EndpointEvent | FinalEvent)
                 and e.turn == endpoint.turn]  # type: ignore[attr-defined]
    assert order[0] == (endpoint, "session") and any(isinstance(e, FinalEvent) for e, _ in order[1:])
    assert [e.state for e in seen(SessionStateEvent)] == [  # type: ignore[attr-defined]
        "starting", "listening", "stopping", "idle"]
