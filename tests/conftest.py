"""Shared fixtures: the real Whisper model (loaded once) and synthesized speech."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app.asr.decoder import WhisperDecoder
from app.asr.model import load_model
from app.core.events import Event, TokenEvent
from app.platform.cores import limit_numpy_threads
from devtools.pulse import PulseDaemon
from tests.speech import require_espeak

limit_numpy_threads()  # as the app does at start-up: no idle BLAS worker spinning beside each pass

E = TypeVar("E", bound=Event)


SLOW_MARKS = ("pulse", "local_llm")
"""A private PulseAudio daemon or the embedded llama.cpp server: seconds to start each."""
SLOW_MODULES = {
    "tests.packaging.test_pyinstaller_bundle": "builds the PyInstaller bundle",
    "tests.packaging.test_replay_demo": "replays the demo through the bundle",
    "tests.e2e.test_headless_listen": "the whole app as a subprocess, in real time",
    "tests.frontends.test_cli_faults": "the whole app as a subprocess, per fault",
    "tests.session.test_session": "sessions in real time; a device lost under four busy processes",
    "tests.session.test_listener": "speech replayed in real time through the listening half",
    "tests.e2e.test_two_voices": "two voices replayed in real time",
    "tests.e2e.test_window_interview": "the window driven through a whole interview",
    "tests.llm.test_relay": "an nginx relay in front of the test server",
    "tests.ui.test_window_retry": "the window through a lost microphone, in real time",
    "tests.frontends.test_cli_flags": "the whole app as a subprocess, per subcommand",
    "tests.devtools.test_speech_fixture": "a child pytest per case",
}
"""Modules whose tests run the app end to end; the rest is the quick tier."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Two tiers: ``pytest -m "not slow"`` is the edit-and-test loop (no bundle, no
    PulseAudio, no end-to-end run); ``bash tests/run.sh`` and CI run everything."""
    for item in items:
        module = getattr(item, "module", None)
        if (any(item.get_closest_marker(mark) for mark in SLOW_MARKS)
                or (module is not None and module.__name__ in SLOW_MODULES)):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def whisper_model() -> object:
    return load_model("bundled")


@pytest.fixture(scope="session")
def decoder(whisper_model: object) -> WhisperDecoder:
    return WhisperDecoder(whisper_model)  # type: ignore[arg-type]


@pytest.fixture
def speech() -> None:
    """A test that synthesizes speech (espeak-ng) asks for this, by argument or with
    ``@pytest.mark.usefixtures("speech")``: without espeak-ng it fails on Linux CI, naming
    the package, and skips elsewhere.  (``tests.speech.synth`` checks the same, for tests
    that call it without the fixture; tests/platform_marks.py marks both kinds.)"""
    require_espeak()


@pytest.fixture
def isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Config and data folders of a fresh user, so tests never touch the real ones."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("INTERVIEW_COPILOT_CONFIG_DIR", str(tmp_path / "config" / "interview-copilot"))
    yield tmp_path


class EventRecorder:
    """A bus listener that keeps every event, for tests to wait on and read back.

    Waiting is on a condition notified by each event, never a sleep: a busy machine only
    makes the wait longer, and ``timeout`` bounds a test that would otherwise hang.
    """

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._cond = threading.Condition()

    def __call__(self, event: Event) -> None:
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def of(self, kind: type[E]) -> list[E]:
        with self._cond:
            return [e for e in self.events if isinstance(e, kind)]

    def wait(self, until: Callable[[EventRecorder], bool] | type[Event], count: int = 1,
             timeout: float = 30.0) -> None:
        """Until ``until(self)`` holds, or (given an event type) ``count`` of them arrived."""
        if isinstance(until, type):
            kind = until
            until = lambda rec: len(rec.of(kind)) >= count  # noqa: E731
        deadline = time.monotonic() + timeout
        with self._cond:
            while not until(self):
                left = deadline - time.monotonic()
                assert left > 0, f"timed out; events: {[e.name for e in self.events]}"
                self._cond.wait(left)

    def shown(self, turn: int) -> str:
        """What the screen got for ``turn``: its token events, joined."""
        return "".join(e.text for e in self.of(TokenEvent) if e.turn == turn)


@pytest.fixture
def pulse(tmp_path: Path) -> Iterator[PulseDaemon]:
    """A private PulseAudio daemon for the test (devtools/pulse.py), killed after it."""
    daemon = PulseDaemon(tmp_path)
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.kill()
