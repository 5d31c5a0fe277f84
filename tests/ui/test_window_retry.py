"""The window keeps listening through a lost microphone: the app as a user starts it.

``interview-copilot --device "Fake USB Mic"`` runs through the real entry point
(:func:`app.frontends.cli.main`): the real window, the real :class:`Session`, the real
:class:`~app.audio.device.DeviceSource` with its loss detection and reopening, Whisper.
Only PortAudio is a fake (:class:`FakePortAudio`, at the ``sounddevice`` seam the device
source calls): a microphone that delivers room tone in real time, can be unplugged (its
stream stops, and opening it fails, as PortAudio does for a device that is gone) and
plugged back in under the same entry, and can be spoken into.

The steps run inside the window's own Qt loop (:class:`Steps`), each waiting for what the
user would see before the next: the window is listening; the microphone is unplugged;
the loss is an error banner; it is plugged back; the device source reopens it and the
level meter moves again; a question spoken then is transcribed into the window.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import keyring
import numpy as np
import numpy.typing as npt
import platformdirs
import pytest
import sounddevice as sd
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from app.audio import device
from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE
from app.core.events import ErrorEvent, Event, FinalEvent, LevelEvent, SessionStateEvent
from app.frontends.cli import main
from app.observing.session_files import sessions_dir
from app.ui.window import MainWindow
from devtools.fake_server import FakeServer, Profile
from tests.conftest import EventRecorder
from tests.memory_keyring import MemoryKeyring
from tests.patience import NEVER_S
from tests.speech import read_wav

MIC = "Fake USB Mic"
KEY = "sk-window-retry"
QUESTION = Path(__file__).parents[1] / "data" / "rate-limiter.wav"
""""Walk me through how you would design a rate limiter." (tests/data/README.md)"""


class FakeStream:
    """``sd.InputStream`` of the fake microphone: one block per 30 ms, paced in real time,
    from a thread of its own (PortAudio's callback thread); it finishes when unplugged."""

    def __init__(self, mic: FakeMicrophone, callback: Callable[..., None],
                 finished_callback: Callable[[], None], **_: Any) -> None:
        self._mic = mic
        self._callback = callback
        self._finished = finished_callback
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-portaudio", daemon=True)
        self.active = False

    def start(self) -> None:
        self.active = True
        self._thread.start()

    def _run(self) -> None:
        status = SimpleNamespace(input_overflow=False)
        due = time.monotonic()
        while not self._stop.is_set() and self._mic.plugged:
            due += FRAME_SAMPLES / SAMPLE_RATE
            self._stop.wait(max(0.0, due - time.monotonic()))
            block = self._mic.next_block()
            self._callback(block.reshape(-1, 1), len(block), None, status)
        self.active = False
        self._finished()

    def abort(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._stop.set()


@dataclass
class FakeMicrophone:
    """The one input of :class:`FakePortAudio`."""

    plugged: bool = True
    opens: int = 0
    _speech: list[npt.NDArray[np.float32]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(3))

    def say(self, samples: npt.NDArray[np.int16]) -> None:
        """Speak into the microphone: the samples follow in the next blocks."""
        audio = (samples / 32768).astype(np.float32)
        with self._lock:
            self._speech += [audio[i:i + FRAME_SAMPLES] for i in range(0, len(audio), FRAME_SAMPLES)]

    def next_block(self) -> npt.NDArray[np.float32]:
        room = (self._rng.standard_normal(FRAME_SAMPLES) * 0.002).astype(np.float32)  # not digital silence
        with self._lock:
            spoken = self._speech.pop(0) if self._speech else None
        if spoken is not None:
            room[: len(spoken)] += spoken
        return room


class FakePortAudio:
    """What :mod:`app.audio.device` uses of ``sounddevice``, with one fake microphone."""

    PortAudioError = sd.PortAudioError

    def __init__(self, mic: FakeMicrophone) -> None:
        self.mic = mic
        self.default = SimpleNamespace(device=(0, -1))

    def query_hostapis(self) -> list[dict[str, Any]]:
        return [{"name": "Fake"}]

    def query_devices(self) -> list[dict[str, Any]]:
        # Still listed while unplugged: PortAudio reads the list once (app/audio/device.py).
        return [{"name": MIC, "hostapi": 0, "max_input_channels": 1, "default_samplerate": 16000.0}]

    def InputStream(self, **kwargs: Any) -> FakeStream:  # sounddevice's name
        if not self.mic.plugged:
            raise sd.PortAudioError("Device unavailable [PaErrorCode -9985]")
        self.mic.opens += 1
        return FakeStream(self.mic, **kwargs)


@pytest.fixture
def mic(monkeypatch: pytest.MonkeyPatch) -> FakeMicrophone:
    microphone = FakeMicrophone()
    monkeypatch.setattr(device, "sd", FakePortAudio(microphone))
    return microphone


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(Profile(answer_tokens=8), api_key=KEY) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _private_user(isolated_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fresh user's keychain and folders (the data folder too where it is not XDG's)."""
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda *_a, **_k: str(isolated_dirs / "data"))
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    yield
    keyring.set_keyring(previous)


Wait = Callable[[], bool]


@dataclass
class Steps:
    """Runs a scenario inside the Qt loop: the generator yields what to wait for before
    its next step; a timer polls it.  A failure or a wait past :data:`NEVER_S` is kept
    and closes the window, so the app exits and the test can report it."""

    scenario: Callable[[MainWindow], Generator[Wait, None, None]]
    failure: str | None = None
    _steps: Generator[Wait, None, None] | None = None
    _waiting: Wait | None = None
    _deadline: float = 0.0
    _window: MainWindow | None = None
    _timer: QTimer = field(default_factory=QTimer)

    def start(self) -> None:
        self._timer.timeout.connect(self._poll)
        self._timer.start(50)

    def _poll(self) -> None:
        try:
            if self._window is None:
                found = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)]
                if not found:
                    return
                self._window = found[0]
                self._steps = self.scenario(self._window)
            elif self._waiting is not None and not self._waiting():
                if time.monotonic() > self._deadline:
                    raise AssertionError(f"timed out waiting for {self._waiting.__doc__ or self._waiting}")
                return
            assert self._steps is not None
            self._waiting = next(self._steps)
            self._deadline = time.monotonic() + NEVER_S
        except StopIteration:
            self._end()
        except Exception as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            self._end()

    def _end(self) -> None:
        self._timer.stop()
        if self._window is not None:
            self._window.close()  # quit_on_close: the Qt loop ends, the app shuts down
        else:
            QApplication.quit()


def test_the_window_listens_again_once_a_lost_microphone_is_back(
        qapp: QApplication, mic: FakeMicrophone, server: FakeServer) -> None:
    seen = EventRecorder()
    facts: dict[str, Any] = {}

    def after(kind: type[Event], since: int) -> list[Any]:
        return [e for e in seen.events[since:] if isinstance(e, kind)]

    def scenario(window: MainWindow) -> Generator[Wait, None, None]:
        window.controller.bus.subscribe(seen)

        def listening() -> bool:
            """the window listening to the microphone"""
            return window.controller.active and bool(after(LevelEvent, 0))
        yield listening

        mic.plugged = False
        lost_at = len(seen.events)

        def banner() -> bool:
            """the loss as an error banner"""
            return any(b.level == "error" and "was lost" in b.text() for b in window.banners.banners)
        yield banner
        facts["error"] = [e.message for e in after(ErrorEvent, lost_at)]

        mic.plugged = True
        replugged_at = len(seen.events)

        def reopened() -> bool:
            """the microphone reopened by the device source, and heard again"""
            return mic.opens >= 2 and bool(after(LevelEvent, replugged_at))
        yield reopened
        facts["states"] = [e.state for e in seen.of(SessionStateEvent)]
        facts["listening"] = window.controller.active
        facts["button"] = window.start_button.text()
        facts["status"] = window.status.state
        back_at = len(seen.events)

        mic.say(read_wav(QUESTION))

        def transcribed() -> bool:
            """the question spoken after the reconnection, transcribed in the window"""
            finals = after(FinalEvent, back_at)
            return bool(finals) and finals[0].text.strip() in window.panes.transcript.toPlainText()
        yield transcribed
        facts["final"] = after(FinalEvent, back_at)[0].text

    steps = Steps(scenario)
    steps.start()
    code = main(["--device", MIC, "--candidate-device", "off", "--base-url", server.base_url,
                 "--api-key", KEY, "--model", "gpt-4o-mini"])

    assert steps.failure is None, f"{steps.failure}; events: {[e.name for e in seen.events]}"
    assert code == 0
    errors = facts["error"]
    assert isinstance(errors, list) and len(errors) == 1 and MIC in errors[0] and "was lost" in errors[0]
    # Through the loss and back the session stayed where it was: listening (the states
    # are those said after the window subscribed; Stop and shutdown come only at the end).
    assert facts["listening"] is True and not {"failed", "stopping", "idle"} & set(facts["states"]), facts
    assert facts["button"] == "Stop listening" and facts["status"] in ("listening", "speaking")
    assert "rate" in str(facts["final"]).lower(), facts["final"]
    (saved,) = sessions_dir().glob("*.jsonl")  # the session log, as the user finds it
    logged = [json.loads(line) for line in saved.read_text().splitlines() if line.strip()]
    assert any(e["event"] == "error" and "was lost" in e["message"] for e in logged)
    assert not [e for e in logged if e["event"] == "session" and e["state"] == "failed"]
