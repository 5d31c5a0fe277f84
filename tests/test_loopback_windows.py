"""WASAPI loopback capture (Windows) driven on Linux through a fake ``soundcard`` module.

The fake keeps soundcard's Windows API (``default_speaker``, ``all_microphones(
include_loopback=True)`` listing one loopback "microphone" per speaker with the
speaker's id and name, ``get_microphone`` matching an id, then a substring of a name,
``recorder(...)`` / ``record(numframes=None)`` returning frames × channels float32) and
WASAPI's behaviour: an idle endpoint delivers no data at all, and an unplugged one
makes every call fail (soundcard raises RuntimeError with the HRESULT).
"""

from __future__ import annotations

import importlib
import re
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from app.audio import loopback_windows
from app.audio.frames import FRAME_SAMPLES, AudioFrame
from app.audio.loopback_windows import CAPTURE_RATE, WasapiLoopbackSource
from app.core.clock import SessionClock

AUDCLNT_E_DEVICE_INVALIDATED = "Error 0x88890004"
E_NOTFOUND = "Error 0x80070490"


@dataclass
class Endpoint:
    id: str
    name: str
    playing: np.ndarray | None = None
    """What the speaker plays (looped), or None: idle, the loopback delivers nothing."""
    plugged: bool = True


class FakeSoundcard(types.ModuleType):
    def __init__(self, speakers: list[Endpoint], default: str) -> None:
        super().__init__("soundcard")
        self.speakers = speakers
        self.default = default
        self.opened: list[str] = []
        """Endpoint ids whose loopback was recorded from, in order."""
        self.lock = threading.Lock()

    def _endpoint(self, endpoint_id: str) -> Endpoint:
        with self.lock:
            found = [s for s in self.speakers if s.id == endpoint_id and s.plugged]
        if not found:
            raise RuntimeError(AUDCLNT_E_DEVICE_INVALIDATED)
        return found[0]

    def default_speaker(self) -> _Speaker:
        with self.lock:
            if not any(s.id == self.default and s.plugged for s in self.speakers):
                raise RuntimeError(E_NOTFOUND)
            return _Speaker(self, self.default)

    def all_microphones(self, include_loopback: bool = False) -> list[_Microphone]:
        with self.lock:
            plugged = [s for s in self.speakers if s.plugged]
        return [_Microphone(self, s.id, isloopback=True) for s in plugged] if include_loopback else []

    def get_microphone(self, id: str, include_loopback: bool = False) -> _Microphone:
        """soundcard's _match_device: an id, else the first name containing it, else fuzzy."""
        devices = self.all_microphones(include_loopback)
        by_id = {d.id: d for d in devices}
        by_name = {d.name: d for d in devices}
        if id in by_id:
            return by_id[id]
        for name, device in by_name.items():
            if id in name:
                return device
        for name, device in by_name.items():
            if re.match(".*".join(id), name):
                return device
        raise IndexError(f"no device with id {id}")


class _Device:
    def __init__(self, sc: FakeSoundcard, endpoint_id: str) -> None:
        self._sc = sc
        self._id = endpoint_id

    @property
    def id(self) -> str:
        return self._id

    @property
    def name(self) -> str:
        return self._sc._endpoint(self._id).name


class _Speaker(_Device):
    pass


class _Microphone(_Device):
    def __init__(self, sc: FakeSoundcard, endpoint_id: str, isloopback: bool = False) -> None:
        super().__init__(sc, endpoint_id)
        self.isloopback = isloopback

    def recorder(self, samplerate: int, channels: int | None = None, blocksize: int | None = None,
                 exclusive_mode: bool = False) -> _Recorder:
        assert self.isloopback
        return _Recorder(self._sc, self._id, samplerate, channels or 2)


class _Recorder:
    BLOCK = 480  # WASAPI's 10 ms device period at 48 kHz

    def __init__(self, sc: FakeSoundcard, endpoint_id: str, samplerate: int, channels: int) -> None:
        self._sc, self._id, self._rate, self._channels = sc, endpoint_id, samplerate, channels
        self._position = 0
        self._started = 0.0

    def __enter__(self) -> _Recorder:
        self._sc._endpoint(self._id)  # IAudioClient::Initialize fails on a missing endpoint
        self._sc.opened.append(self._id)
        self._started = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def record(self, numframes: int | None = None) -> np.ndarray:
        assert numframes is None, "blocking reads would stall the reader while nothing plays"
        endpoint = self._sc._endpoint(self._id)
        time.sleep(0.002)
        due = int((time.monotonic() - self._started) * self._rate)
        if endpoint.playing is None:
            self._position = due  # idle: the audio engine moves on, the loopback gives nothing
            return np.zeros((0, self._channels), dtype=np.float32)
        count = min(due - self._position, 4 * self.BLOCK)
        if count < self.BLOCK:
            return np.zeros((0, self._channels), dtype=np.float32)
        idx = (np.arange(self._position, self._position + count)) % len(endpoint.playing)
        self._position += count
        return np.repeat(endpoint.playing[idx, None], self._channels, axis=1).astype(np.float32)


def tone(hz: float) -> np.ndarray:
    t = np.arange(CAPTURE_RATE) / CAPTURE_RATE
    return (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


class Capture:
    """Runs a source and records its frames and errors; waits on conditions, never on time."""

    def __init__(self, sc: FakeSoundcard) -> None:
        self.source = WasapiLoopbackSource(SessionClock(), soundcard=sc)
        self.frames: list[AudioFrame] = []
        self.errors: list[str] = []
        self._changed = threading.Condition()

    def __enter__(self) -> Capture:
        self.source.start(self._frame, self._error)
        return self

    def __exit__(self, *exc: object) -> None:
        self.source.stop()

    def _frame(self, frame: AudioFrame) -> None:
        with self._changed:
            self.frames.append(frame)
            self._changed.notify_all()

    def _error(self, message: str) -> None:
        with self._changed:
            self.errors.append(message)
            self._changed.notify_all()

    def wait(self, condition: Callable[[], bool], what: str) -> None:
        with self._changed:
            assert self._changed.wait_for(condition, timeout=60), f"never happened: {what}"

    def loud_frames(self) -> int:
        return sum(1 for f in self.frames if np.abs(f.samples).max() > 1000)


@pytest.fixture
def twins() -> FakeSoundcard:
    """Two speakers with one name (identical USB headsets); the default is the first."""
    return FakeSoundcard(speakers=[Endpoint("{0.0.0.00000000}.{aaaa}", "Speakers (USB Audio)"),
                                   Endpoint("{0.0.0.00000000}.{bbbb}", "Speakers (USB Audio)")],
                         default="{0.0.0.00000000}.{aaaa}")


def test_the_default_speaker_is_chosen_by_id_not_by_name(twins: FakeSoundcard) -> None:
    twins.speakers[0].playing = tone(440)  # only the default plays the call
    with Capture(twins) as cap:
        cap.wait(lambda: cap.loud_frames() >= 10, "the call's audio")
    assert twins.opened == ["{0.0.0.00000000}.{aaaa}"]
    assert cap.errors == []
    # what the name would have opened: soundcard's match by name picks the other twin
    assert twins.get_microphone(id="Speakers (USB Audio)", include_loopback=True).id != twins.default


def test_silence_is_zero_frames_on_the_clock_not_an_error(twins: FakeSoundcard) -> None:
    """Nothing plays: WASAPI delivers no data; the source makes 30 ms zero frames at pace."""
    with Capture(twins) as cap:
        cap.wait(lambda: len(cap.frames) >= 20, "20 frames of silence")
    frames = cap.frames[:20]
    assert all(not f.samples.any() and len(f.samples) == FRAME_SAMPLES for f in frames)
    assert [round(f.t, 3) for f in frames] == [round(0.03 * i, 3) for i in range(20)]
    assert cap.errors == []


def test_a_lost_speaker_is_reported_once_and_capture_resumes(twins: FakeSoundcard) -> None:
    speaker = twins.speakers[0]
    speaker.playing = tone(440)
    with Capture(twins) as cap:
        cap.wait(lambda: cap.loud_frames() >= 5, "audio before the loss")
        with twins.lock:
            speaker.plugged = False  # unplugged: every call fails, and there is no default
        cap.wait(lambda: len(cap.errors) == 1, "the loss reported")
        assert "Speakers (USB Audio)" in cap.errors[0] and "retrying every" in cap.errors[0]
        assert cap.source.reconnects == 0
        heard = cap.loud_frames()
        with twins.lock:
            speaker.plugged = True
        cap.wait(lambda: cap.loud_frames() >= heard + 5, "audio after the speaker came back")
        assert cap.source.reconnects == 1
        with twins.lock:
            speaker.plugged = False  # lost a second time: said again
        cap.wait(lambda: len(cap.errors) == 2, "the second loss reported")
    assert twins.opened == [speaker.id, speaker.id]
    times = [f.t for f in cap.frames]
    assert times == sorted(times) and len(set(times)) == len(times)  # time jumps, never repeats


def test_switching_the_default_speaker_follows_it(twins: FakeSoundcard,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loopback_windows, "DEFAULT_CHECK_S", 0.05)
    first, second = twins.speakers
    first.playing = tone(440)
    second.playing = tone(1000)
    with Capture(twins) as cap:
        cap.wait(lambda: cap.loud_frames() >= 5, "the first speaker")
        with twins.lock:
            twins.default = second.id  # the user plugged in headphones
        cap.wait(lambda: twins.opened[-1:] == [second.id] and cap.loud_frames() >= 20,
                 "the new default's audio")
    assert twins.opened == [first.id, second.id]
    assert cap.errors == []


def test_no_soundcard_package_is_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> Any:
        raise ModuleNotFoundError(f"No module named '{name}'")

    monkeypatch.setattr(importlib, "import_module", missing)
    source = WasapiLoopbackSource(SessionClock())
    errors: list[str] = []
    source.start(lambda f: None, errors.append)
    assert source.wait(60)
    assert errors == ["Loopback capture is unavailable: the soundcard package did not load "
                      "(ModuleNotFoundError: No module named 'soundcard')."]
