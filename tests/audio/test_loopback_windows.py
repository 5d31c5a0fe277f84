"""WASAPI loopback capture (Windows) driven on Linux through a fake ``soundcard`` module.

The fake keeps soundcard's Windows API (``default_speaker``, ``all_microphones(
include_loopback=True)`` listing one loopback "microphone" per speaker with the
speaker's id and name, ``get_microphone`` matching an id, then a substring of a name,
``recorder(...)`` / ``record(numframes=None)`` returning frames × channels float32) and
WASAPI's behaviour: an idle endpoint delivers no data at all, and an unplugged one
makes every call fail (soundcard raises RuntimeError with the HRESULT).  With ``com`` set
(a :class:`FakeOle32`), every call also needs the calling thread in a COM apartment, as
on Windows once the thread that imported soundcard has ended; ``fromstring=True`` reads
audio the way soundcard 0.4.3–0.4.5 did, through the real numpy.
"""

from __future__ import annotations

import importlib
import importlib.metadata
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
CO_E_NOTINITIALIZED = "Error 0x800401F0"
S_OK, S_FALSE = 0, 1
RPC_E_CHANGED_MODE = -2147417850  # 0x80010106 as ctypes returns a signed HRESULT
E_OUTOFMEMORY = -2147024882  # 0x8007000E


class FakeOle32:
    """CoInitializeEx / CoUninitialize with COM's per-thread bookkeeping.

    ``result`` is what CoInitializeEx answers: S_OK and S_FALSE count an initialisation
    that CoUninitialize must balance; RPC_E_CHANGED_MODE means the thread is already in an
    STA (usable, not counted); a failure leaves the thread outside COM.
    """

    def __init__(self, result: int = S_OK) -> None:
        self.result = result
        self.calls: list[tuple[str, threading.Thread]] = []
        """(what happened, on which thread): init, uninit, and each soundcard call checked
        (threads, not idents: a new thread may reuse an ended one's ident)."""
        self.count: dict[threading.Thread, int] = {}
        self.sta: set[threading.Thread] = set()
        self.unbalanced: list[threading.Thread] = []
        self.lock = threading.Lock()

    def CoInitializeEx(self, reserved: None, coinit: int) -> int:
        assert reserved is None and coinit == 0x0  # COINIT_MULTITHREADED
        me = threading.current_thread()
        with self.lock:
            self.calls.append(("init", me))
            if self.result == RPC_E_CHANGED_MODE:
                self.sta.add(me)
            elif self.result >= 0:
                self.count[me] = self.count.get(me, 0) + 1
        return self.result

    def CoUninitialize(self) -> None:
        me = threading.current_thread()
        with self.lock:
            self.calls.append(("uninit", me))
            if self.count.get(me, 0) <= 0:
                self.unbalanced.append(me)
            else:
                self.count[me] -= 1

    def check(self, what: str) -> None:
        """A soundcard call on this thread: COM must be initialised here."""
        me = threading.current_thread()
        with self.lock:
            self.calls.append((what, me))
            if self.count.get(me, 0) <= 0 and me not in self.sta:
                raise RuntimeError(CO_E_NOTINITIALIZED)

    def threads(self) -> list[list[str]]:
        """What each thread did, in order, threads in the order they first appear."""
        by_thread: dict[threading.Thread, list[str]] = {}
        with self.lock:
            for what, thread in self.calls:
                by_thread.setdefault(thread, []).append(what)
        return list(by_thread.values())


@dataclass
class Endpoint:
    id: str
    name: str
    playing: np.ndarray | None = None
    """What the speaker plays (looped), or None: idle, the loopback delivers nothing."""
    plugged: bool = True


class FakeSoundcard(types.ModuleType):
    def __init__(self, speakers: list[Endpoint], default: str, com: FakeOle32 | None = None,
                 fromstring: bool = False) -> None:
        super().__init__("soundcard")
        self.speakers = speakers
        self.default = default
        self.com = com
        self.fromstring = fromstring
        self.opened: list[str] = []
        """Endpoint ids whose loopback was recorded from, in order."""
        self.lock = threading.Lock()

    def _com(self, what: str) -> None:
        if self.com is not None:
            self.com.check(what)

    def _endpoint(self, endpoint_id: str) -> Endpoint:
        self._com("call")
        with self.lock:
            found = [s for s in self.speakers if s.id == endpoint_id and s.plugged]
        if not found:
            raise RuntimeError(AUDCLNT_E_DEVICE_INVALIDATED)
        return found[0]

    def default_speaker(self) -> _Speaker:
        self._com("call")
        with self.lock:
            if not any(s.id == self.default and s.plugged for s in self.speakers):
                raise RuntimeError(E_NOTFOUND)
            return _Speaker(self, self.default)

    def all_microphones(self, include_loopback: bool = False) -> list[_Microphone]:
        self._com("call")
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
        self._sc._com("record")
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
        block = np.repeat(endpoint.playing[idx, None], self._channels, axis=1).astype(np.float32)
        if self._sc.fromstring:  # soundcard 0.4.5's mediafoundation.py, line 761
            return np.fromstring(block.tobytes(), dtype="float32").reshape(-1, self._channels)
        return block


def tone(hz: float) -> np.ndarray:
    t = np.arange(CAPTURE_RATE) / CAPTURE_RATE
    return (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


class Capture:
    """Runs a source and records its frames and errors; waits on conditions, never on time."""

    def __init__(self, sc: FakeSoundcard) -> None:
        self.source = WasapiLoopbackSource(SessionClock(), soundcard=sc, ole32=sc.com)
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


# --- COM: each capture thread joins the apartment itself ------------------------------------

@pytest.fixture
def com_twins() -> FakeSoundcard:
    """The twins, on a Windows whose implicit MTA is gone: no call works outside COM."""
    return FakeSoundcard(speakers=[Endpoint("{0.0.0.00000000}.{aaaa}", "Speakers (USB Audio)",
                                            playing=tone(440))],
                         default="{0.0.0.00000000}.{aaaa}", com=FakeOle32())


def test_each_capture_thread_initialises_com_and_a_second_start_works(
        com_twins: FakeSoundcard) -> None:
    """Stop → Start: the second start's new thread joins COM itself, as the first did."""
    assert com_twins.com is not None
    for _ in range(2):
        with Capture(com_twins) as cap:
            cap.wait(lambda: cap.loud_frames() >= 5, "the call's audio")
        assert cap.errors == []
    runs = com_twins.com.threads()
    assert len(runs) == 2  # one capture thread per start, none of them the test's
    for run in runs:
        assert run[0] == "init" and run[-1] == "uninit"  # before any soundcard call, at the end
        assert "record" in run and run.count("init") == run.count("uninit") == 1
    assert com_twins.com.unbalanced == [] and not any(com_twins.com.count.values())


def test_com_is_left_when_recording_raises(com_twins: FakeSoundcard) -> None:
    """The speaker is lost mid-capture: the thread retries, and on Stop still leaves COM."""
    assert com_twins.com is not None
    with Capture(com_twins) as cap:
        cap.wait(lambda: cap.loud_frames() >= 5, "audio before the loss")
        with com_twins.lock:
            com_twins.speakers[0].plugged = False
        cap.wait(lambda: len(cap.errors) == 1, "the loss reported")
    assert cap.source.wait(60)
    assert CO_E_NOTINITIALIZED not in cap.errors[0]
    [run] = com_twins.com.threads()
    assert run[0] == "init" and run[-1] == "uninit" and run.count("uninit") == 1


@pytest.mark.parametrize(("result", "balanced_by_uninit"),
                         [(S_OK, True), (S_FALSE, True), (RPC_E_CHANGED_MODE, False)])
def test_com_answers_that_still_let_the_thread_capture(
        com_twins: FakeSoundcard, result: int, balanced_by_uninit: bool) -> None:
    """S_FALSE still counts and is balanced; RPC_E_CHANGED_MODE (already an STA) is not ours."""
    assert com_twins.com is not None
    com_twins.com.result = result
    with Capture(com_twins) as cap:
        cap.wait(lambda: cap.loud_frames() >= 5, "the call's audio")
    assert cap.source.wait(60)
    assert cap.errors == []
    [run] = com_twins.com.threads()
    assert run.count("uninit") == (1 if balanced_by_uninit else 0)
    assert com_twins.com.unbalanced == []


def test_com_refusing_the_thread_is_one_sentence_not_a_retry(com_twins: FakeSoundcard) -> None:
    assert com_twins.com is not None
    com_twins.com.result = E_OUTOFMEMORY
    with Capture(com_twins) as cap:
        assert cap.source.wait(60)  # the thread ended by itself
    assert cap.errors == ["Loopback capture cannot start: Windows refused COM to the capture "
                          "thread (HRESULT 0x8007000E); restart the app."]
    assert com_twins.com.threads() == [["init"]]  # no soundcard call, nothing to uninitialise


# --- soundcard 0.4.3–0.4.5 under numpy ≥ 2.3 -------------------------------------------------

def test_a_soundcard_too_old_for_numpy_says_so_once_and_stops_retrying(
        twins: FakeSoundcard, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every record() raises numpy's own ValueError; retrying could never help."""
    real_version = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: "0.4.5" if name == "soundcard" else real_version(name))
    twins.fromstring = True
    twins.speakers[0].playing = tone(440)
    with Capture(twins) as cap:
        assert cap.source.wait(60)  # the thread ended by itself
    assert cap.errors == [
        f"Loopback capture cannot work: soundcard 0.4.5 is too old for numpy {np.__version__} "
        f"(it reads audio with numpy.fromstring, which numpy 2.3 removed): update soundcard to "
        f"{loopback_windows.MIN_SOUNDCARD} or later."]
    assert twins.opened == [twins.speakers[0].id]  # tried once, not every second


def test_the_fake_old_soundcard_fails_as_the_real_one_does() -> None:
    """The fake's failure is numpy's own (numpy ≥ 2.3 here): what the user's soundcard meets."""
    with pytest.raises(ValueError, match="fromstring") as caught:
        np.fromstring(np.zeros(4, dtype=np.float32).tobytes(), dtype="float32")
    assert loopback_windows.soundcard_too_old(caught.value) is not None
    assert loopback_windows.soundcard_too_old(RuntimeError(AUDCLNT_E_DEVICE_INVALIDATED)) is None
