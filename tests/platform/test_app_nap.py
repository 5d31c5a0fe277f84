"""macOS App Nap: a listening session holds a user-initiated, latency-critical activity and
ends it when it is over (pyobjc's NSProcessInfo faked: it only exists on a Mac)."""

from __future__ import annotations

import logging
import threading
import wave
from pathlib import Path

import numpy as np
import pytest

from app.asr.decoder import WhisperDecoder
from app.core.config import Settings
from app.core.events import SessionStateEvent
from app.platform.app_nap import ListeningActivity
from app.session.session import Session, SessionOptions, Sources
from tests.conftest import EventRecorder

USER_INITIATED = 0x00FFFFFF  # NSActivityUserInitiated, NSProcessInfo.h
LATENCY_CRITICAL = 0xFF00000000  # NSActivityLatencyCritical


class FakeProcessInfo:
    """``NSProcessInfo``'s two calls, written down; each activity is a fresh token."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object, object]] = []
        self._lock = threading.Lock()

    def beginActivityWithOptions_reason_(self, options: int, reason: str) -> object:
        token = object()
        with self._lock:
            self.calls.append(("begin", options, reason))
            self.calls.append(("token", token, None))
        return token

    def endActivity_(self, token: object) -> None:
        with self._lock:
            self.calls.append(("end", token, None))

    def begun(self) -> list[object]:
        with self._lock:
            return [c[1] for c in self.calls if c[0] == "token"]

    def ended(self) -> list[object]:
        with self._lock:
            return [c[1] for c in self.calls if c[0] == "end"]


def _on_mac(info: FakeProcessInfo, loads: list[int] | None = None) -> ListeningActivity:
    def load() -> FakeProcessInfo:
        if loads is not None:
            loads.append(1)
        return info

    return ListeningActivity(platform="darwin", process_info=load)


def _state(state: str) -> SessionStateEvent:
    return SessionStateEvent(t=0.0, state=state)  # type: ignore[arg-type]


def test_begins_once_per_session_with_user_initiated_latency_critical_and_ends_its_own_token() -> None:
    info = FakeProcessInfo()
    loads: list[int] = []
    activity = _on_mac(info, loads)
    for state in ("starting", "listening", "stopping", "idle"):
        activity(_state(state))
    begins = [c for c in info.calls if c[0] == "begin"]
    assert len(begins) == 1
    _, options, reason = begins[0]
    assert options == USER_INITIATED | LATENCY_CRITICAL
    assert isinstance(reason, str) and reason
    assert info.ended() == info.begun()
    assert not activity.held
    for state in ("starting", "listening", "idle"):  # a second session: a new activity
        activity(_state(state))
    assert len(info.begun()) == 2 and info.begun()[0] is not info.begun()[1]
    assert info.ended() == info.begun()
    assert loads == [1]  # pyobjc's object is fetched once, and only once a session begins


def test_a_failed_start_ends_it_and_ending_twice_ends_once() -> None:
    info = FakeProcessInfo()
    activity = _on_mac(info)
    activity(_state("starting"))
    assert activity.held
    activity(_state("failed"))
    activity(_state("idle"))
    activity.end()
    assert len(info.ended()) == 1 and info.ended() == info.begun()


@pytest.mark.parametrize("platform", ["linux", "win32"])
def test_never_on_linux_or_windows(platform: str) -> None:
    def load() -> FakeProcessInfo:
        raise AssertionError("NSProcessInfo asked for off macOS")

    activity = ListeningActivity(platform=platform, process_info=load)
    for state in ("starting", "listening", "stopping", "idle"):
        activity(_state(state))
    assert not activity.held


def test_without_pyobjc_it_is_a_no_op_said_once_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    loads: list[int] = []

    def load() -> FakeProcessInfo:
        loads.append(1)
        raise ModuleNotFoundError("No module named 'Foundation'")

    activity = ListeningActivity(platform="darwin", process_info=load)
    with caplog.at_level(logging.WARNING, logger="app.platform.app_nap"):
        for state in ("starting", "listening", "idle", "starting", "listening", "idle"):
            activity(_state(state))
    assert not activity.held
    assert loads == [1]
    records = [r for r in caplog.records if r.name == "app.platform.app_nap"]
    assert len(records) == 1 and "pyobjc-framework-Cocoa" in records[0].getMessage()


# --- held by a real Session ---------------------------------------------------------------


def _quiet_wav(path: Path, seconds: float) -> Path:
    """A recording of a quiet room: the session listens to it without a question."""
    rng = np.random.default_rng(0)
    samples = (rng.normal(0, 30, int(16_000 * seconds))).astype(np.int16)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16_000)
        out.writeframes(samples.tobytes())
    return path


def _states(seen: EventRecorder) -> list[str]:
    return [e.state for e in seen.of(SessionStateEvent)]


def test_a_session_holds_it_while_listening_and_ends_it_on_stop_and_at_shutdown(
        decoder: WhisperDecoder, tmp_path: Path) -> None:
    info = FakeProcessInfo()
    session = Session(Settings(), sources=Sources(_quiet_wav(tmp_path / "room.wav", 60.0)),
                      options=SessionOptions(answers=False), decoder=decoder, app_nap=_on_mac(info))
    seen = EventRecorder()
    session.bus.subscribe(seen)
    try:
        session.start()
        seen.wait(lambda rec: "listening" in _states(rec))
        assert len(info.begun()) == 1 and info.ended() == []
        session.stop()
        seen.wait(lambda rec: _states(rec)[-1:] == ["idle"])
        assert info.ended() == info.begun()
        session.start()  # a second start after Stop: a new activity
        seen.wait(lambda rec: _states(rec).count("listening") == 2)
        assert len(info.begun()) == 2 and len(info.ended()) == 1
    finally:
        session.shutdown()
    assert info.ended() == info.begun()  # shutdown, without a Stop, ended the second


def test_a_session_whose_start_fails_ends_it(decoder: WhisperDecoder, tmp_path: Path) -> None:
    info = FakeProcessInfo()
    session = Session(Settings(), sources=Sources(tmp_path / "missing.wav"),
                      options=SessionOptions(answers=False), decoder=decoder, app_nap=_on_mac(info))
    try:
        session.start()
        assert session.wait(30.0) == "failed"
        assert len(info.begun()) == 1 and info.ended() == info.begun()
    finally:
        session.shutdown()
