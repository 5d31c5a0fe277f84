"""The macOS process-tap source (app/audio/process_tap.py), driven on any OS through a fake
Core Audio behind the source's seam (``TapBackend``).

The fake behaves as a tap does: an IO thread of its own calls the IOProc with 10 ms blocks
of 48 kHz float32 interleaved stereo, laid out in a real ctypes ``AudioBufferList`` and read
back by the same ``block_of`` the Mac uses; it keeps delivering (zeros would do) for as long
as it runs; it can refuse a step with the OSStatus Core Audio answers, and it records the
calls it gets.  What only a Mac can show (pyobjc's calls, the permission prompt) is the
macOS CI job's ``python -m app.audio.process_tap``.
"""

from __future__ import annotations

import ctypes
import platform
import plistlib
import re
import sys
import threading
import time
import wave
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from app.audio import AudioError, FileSource, process_tap, source_from_config
from app.audio.core_audio import NOPE, AudioBuffer, AudioBufferList, BlockHandler, TapError, block_of
from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE, AudioFrame, AudioSource
from app.audio.process_tap import Fallback, ProcessTapSource, failure_sentence, speakers_source, supported
from app.core.clock import SessionClock
from app.core.config import AudioConfig

ROOT = Path(__file__).resolve().parents[2]
TAP_RATE = 48_000
TONE_HZ = 440.0


def one_sentence(text: str) -> bool:
    return text.endswith(".") and len(re.findall(r"[.!?](?:\s|$)", text)) == 1


class FakeTap:
    """Core Audio as the seam sees it (see the module's docstring).

    ``refuse``: the step that fails, with ``status`` (every time it is tried); ``lives``:
    seconds of audio each start delivers before its IO goes quiet (None: until stopped);
    ``switch_to``: (after seconds, rate): the default output changes, and with it the rate
    the tap delivers at, as a Bluetooth headset does when a call opens its microphone.
    """

    def __init__(self, refuse: str | None = None, status: int = NOPE,
                 lives: list[float | None] | None = None,
                 switch_to: tuple[float, int] | None = None) -> None:
        self.refuse = refuse
        self.status = status
        self.lives = list(lives) if lives is not None else []
        self.switch_to = switch_to
        self.rate = TAP_RATE
        self.rates: list[int] = []
        """The rate each aggregate device was made at."""
        self.calls: list[str] = []
        self._seconds = 0.0  # played, across lives: the sine stays continuous
        self._quit = threading.Event()
        self._io: threading.Thread | None = None

    def _step(self, name: str) -> None:
        self.calls.append(name)
        if self.refuse == name:
            raise TapError(name.replace("_", " "), self.status)

    def create_tap(self) -> None:
        self._step("create_tap")

    def create_aggregate(self) -> int:
        self._step("create_aggregate")
        self.rates.append(self.rate)
        return self.rate

    def current_rate(self) -> int:
        return self.rate

    def start(self, callback: BlockHandler) -> None:
        self._step("start")
        life = self.lives.pop(0) if self.lives else None
        self._quit.clear()
        self._io = threading.Thread(target=self._play, args=(callback, life),
                                    name="fake-coreaudio-io", daemon=True)
        self._io.start()

    def stop(self) -> None:
        self.calls.append("stop")
        self._quit.set()
        if self._io is not None:
            self._io.join(5)
            self._io = None

    def destroy(self) -> None:
        self.calls.append("destroy")

    def _play(self, callback: BlockHandler, life: float | None) -> None:
        """The IO thread: one 10 ms block per 10 ms, interleaved L = 0.6 sin, R = 0.4 sin,
        at the tap's rate of the moment."""
        sent = 0.0
        while not self._quit.wait(0.01):
            if life is not None and sent >= life:
                continue  # the device's clock is gone: no more IO cycles
            if self.switch_to is not None and self._seconds >= self.switch_to[0]:
                self.rate, self.switch_to = self.switch_to[1], None
            count = self.rate // 100
            n = self._seconds + np.arange(count) / self.rate
            tone = np.sin(2 * np.pi * TONE_HZ * n)
            interleaved = np.column_stack([0.6 * tone, 0.4 * tone]).astype(np.float32).ravel()
            block = block_of(ctypes.pointer(_buffer_list([(2, interleaved)])))
            assert block is not None
            callback(block)
            self._seconds += 0.01
            sent += 0.01


def _buffer_list(buffers: list[tuple[int, np.ndarray]]) -> AudioBufferList:
    """A C AudioBufferList over ``buffers`` ((channels, float32 samples) each); the arrays
    must outlive it (the caller keeps them)."""

    class Sized(ctypes.Structure):
        _fields_ = [("mNumberBuffers", ctypes.c_uint32), ("mBuffers", AudioBuffer * len(buffers))]

    sized = Sized()
    sized.mNumberBuffers = len(buffers)
    for i, (channels, samples) in enumerate(buffers):
        sized.mBuffers[i] = AudioBuffer(channels, samples.nbytes, samples.ctypes.data)
    sized._keep = buffers
    return ctypes.cast(ctypes.pointer(sized), ctypes.POINTER(AudioBufferList)).contents


def _collect(source: AudioSource, until: Callable[[list[AudioFrame], list[str]], bool],
             timeout: float = 30.0) -> tuple[list[AudioFrame], list[str], list[str]]:
    frames: list[AudioFrame] = []
    errors: list[str] = []
    warnings: list[str] = []
    source.start(frames.append, errors.append, warnings.append)
    deadline = time.monotonic() + timeout
    while not until(frames, errors) and time.monotonic() < deadline:
        time.sleep(0.02)
    source.stop()
    return frames, errors, warnings


@pytest.fixture
def quick_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_tap, "RETRY_INTERVAL", 0.05)


def test_a_tap_of_48k_stereo_float_comes_out_as_16k_mono_frames() -> None:
    fake = FakeTap()
    source = ProcessTapSource(SessionClock(), fake, stall_s=30)
    source.open()
    frames, errors, _ = _collect(source, lambda f, e: len(f) >= 40)  # 1.2 s

    assert errors == []
    assert len(frames) >= 40
    assert all(len(f.samples) == FRAME_SAMPLES and f.samples.dtype == np.int16 for f in frames)
    assert [round(f.t / 0.03) for f in frames] == list(range(len(frames)))  # no gaps, from 0
    audio = np.concatenate([f.samples for f in frames[4:34]]).astype(np.float64) / 32768
    spectrum = np.abs(np.fft.rfft(audio * np.hanning(len(audio))))
    peak_hz = np.argmax(spectrum) * SAMPLE_RATE / len(audio)
    assert abs(peak_hz - TONE_HZ) < 2 * SAMPLE_RATE / len(audio)
    rms = float(np.sqrt(np.mean(audio**2)))
    assert rms == pytest.approx(0.5 / np.sqrt(2), rel=0.05)  # (0.6 + 0.4) / 2: both channels
    assert fake.calls == ["create_tap", "create_aggregate", "start", "stop", "destroy"]


@pytest.mark.parametrize(("version", "tap"), [
    ("14.2", True), ("14.2.1", True), ("14.10", True), ("15.0", True), ("26.1", True),
    ("14.1.2", False), ("14.0", False), ("14", False), ("13.6.9", False), ("10.16", False),
    ("", False),
])
def test_process_taps_are_macos_14_2_and_later(version: str, tap: bool) -> None:
    assert supported(version) is tap


@pytest.fixture
def mac(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], FakeTap]:
    """This process as a Mac of a given version with BlackHole installed (its device list
    faked: PortAudio is not asked) and the fake Core Audio."""
    from app.audio import device
    from app.audio.device import DeviceInfo

    blackhole = DeviceInfo(index=3, name="BlackHole 2ch", hostapi="Core Audio",
                           max_input_channels=2, default_samplerate=48000.0, is_default=False,
                           is_loopback_candidate=True)
    monkeypatch.setattr(device, "list_devices", lambda: [blackhole])
    monkeypatch.setattr(sys, "platform", "darwin")
    fake = FakeTap()
    monkeypatch.setattr(process_tap, "make_backend", lambda: fake)

    def on(version: str) -> FakeTap:
        monkeypatch.setattr(platform, "mac_ver", lambda: (version, ("", "", ""), "arm64"))
        return fake

    return on


def test_the_interviewer_on_macos_14_2_is_the_tap_and_below_it_blackhole(
        mac: Callable[[str], FakeTap]) -> None:
    speakers = AudioConfig(source="loopback")

    fake = mac("14.2")
    source = source_from_config(speakers, SessionClock())
    assert isinstance(source, ProcessTapSource)
    assert fake.calls == ["create_tap", "create_aggregate"]
    source.stop()  # never started: the tap is still given back
    assert fake.calls[-2:] == ["stop", "destroy"]

    fake.calls.clear()
    mac("14.1")
    source = source_from_config(speakers, SessionClock())
    assert source.name == "BlackHole 2ch"
    assert fake.calls == []


def test_a_user_who_chose_blackhole_keeps_it_on_14_2(mac: Callable[[str], FakeTap]) -> None:
    fake = mac("15.3")
    source = source_from_config(AudioConfig(source="loopback", device="BlackHole"), SessionClock())
    assert source.name == "BlackHole 2ch"
    assert fake.calls == []


def test_a_refused_permission_is_one_sentence_and_blackhole_takes_over_when_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTap(refuse="create_tap")
    monkeypatch.setattr(process_tap, "make_backend", lambda: fake)
    clock = SessionClock()

    def no_blackhole() -> AudioSource:
        raise AudioError("No loopback input found: install BlackHole.")

    with pytest.raises(AudioError) as refused:
        speakers_source(clock, no_blackhole, version="14.4")
    recording = tmp_path / "blackhole.wav"
    _write_wav(recording, seconds=0.5)
    source = speakers_source(clock, lambda: FileSource(recording, clock, speed=20.0),
                             version="14.4")

    message = str(refused.value)
    assert one_sentence(message), message
    assert "Privacy & Security" in message and "BlackHole" in message
    assert fake.calls == ["create_tap", "stop", "destroy"] * 2  # undone at once, each time

    assert isinstance(source, Fallback)
    frames, errors, warnings = _collect(source, lambda f, e: source.wait(0))
    assert len(warnings) == 1 and one_sentence(warnings[0]), warnings
    assert "Privacy & Security" in warnings[0] and "blackhole.wav" in warnings[0]
    assert errors == [] and len(frames) >= 16  # the stand-in's audio flows


def test_a_start_that_macos_refuses_is_said_once_and_stop_destroy_always_follow(
        quick_retry: None) -> None:
    fake = FakeTap(refuse="start")
    source = ProcessTapSource(SessionClock(), fake)
    source.open()
    frames, errors, _ = _collect(source, lambda f, e: fake.calls.count("start") >= 3)

    assert frames == []
    assert len(errors) == 1 and one_sentence(errors[0]), errors
    assert "Privacy & Security" in errors[0] and "trying again" in errors[0]
    life = ["create_tap", "create_aggregate", "start", "stop", "destroy"]
    assert len(fake.calls) >= 3 * len(life)
    assert fake.calls == life * (len(fake.calls) // len(life))


def test_a_binding_surprise_is_one_sentence_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pyobjc call that raises (a changed signature, a missing symbol) is not a traceback."""

    class Broken(FakeTap):
        def create_aggregate(self) -> int:
            self.calls.append("create_aggregate")
            raise TypeError("depythonifying 'pointer', got 'dict'")

    fake = Broken()
    monkeypatch.setattr(process_tap, "make_backend", lambda: fake)

    def no_blackhole() -> AudioSource:
        raise AudioError("No loopback input found: install BlackHole.")

    with pytest.raises(AudioError) as failed:
        speakers_source(SessionClock(), no_blackhole, version="14.2")
    assert one_sentence(str(failed.value)) and "TypeError" in str(failed.value)
    assert fake.calls == ["create_tap", "create_aggregate", "stop", "destroy"]


def test_another_refusal_names_the_step_and_the_status() -> None:
    message = failure_sentence(TapError("create the aggregate device", -50))
    assert one_sentence(message), message
    assert "create the aggregate device" in message and "error -50" in message
    assert "Privacy" not in message
    assert TapError("start recording", NOPE).denied
    assert "error 'nope'" in str(TapError("start recording", NOPE))


def test_a_tap_that_goes_quiet_is_said_once_then_rebuilt_and_time_jumps(
        quick_retry: None) -> None:
    fake = FakeTap(lives=[0.3, None])
    source = ProcessTapSource(SessionClock(), fake, stall_s=0.3)
    source.open()
    frames, errors, _ = _collect(
        source, lambda f, e: source.reconnects == 1 and len(f) >= 25)

    assert len(errors) == 1 and one_sentence(errors[0]), errors
    assert "no audio for 0.3 s" in errors[0]
    assert source.reconnects == 1
    times = [f.t for f in frames]
    assert times == sorted(set(times))
    steps = np.diff(times)
    assert steps.max() > 0.3  # the outage is a gap in time, not audio pretended
    assert fake.calls[:10] == ["create_tap", "create_aggregate", "start", "stop", "destroy"] * 2


def test_a_new_output_rate_rebuilds_the_tap_and_keeps_the_pitch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Bluetooth headset entering a call: the tap's rate drops from 48 to 24 kHz."""
    monkeypatch.setattr(process_tap, "RATE_CHECK_S", 0.1)
    fake = FakeTap(switch_to=(0.4, 24_000))
    source = ProcessTapSource(SessionClock(), fake, stall_s=30)
    source.open()
    frames, errors, _ = _collect(source, lambda f, e: len(fake.rates) == 2 and len(f) >= 60)

    assert errors == []
    assert fake.rates == [TAP_RATE, 24_000]
    assert fake.calls[:6] == ["create_tap", "create_aggregate", "start", "stop", "destroy",
                              "create_tap"]
    after = np.concatenate([f.samples for f in frames[-25:]]).astype(np.float64) / 32768
    spectrum = np.abs(np.fft.rfft(after * np.hanning(len(after))))
    peak_hz = np.argmax(spectrum) * SAMPLE_RATE / len(after)
    assert abs(peak_hz - TONE_HZ) < 2 * SAMPLE_RATE / len(after)  # 24 kHz read as 24 kHz


def test_block_of_reads_interleaved_and_per_channel_buffer_lists() -> None:
    left = np.arange(6, dtype=np.float32)
    right = -left
    interleaved = np.column_stack([left, right]).ravel()
    block = block_of(ctypes.pointer(_buffer_list([(2, interleaved)])))
    assert block is not None and block.dtype == np.float32
    np.testing.assert_array_equal(block, np.column_stack([left, right]))

    block = block_of(ctypes.pointer(_buffer_list([(1, left), (1, right)])))
    assert block is not None
    np.testing.assert_array_equal(block, np.column_stack([left, right]))

    assert block_of(ctypes.POINTER(AudioBufferList)()) is None  # no input this cycle


def test_the_mac_app_asks_for_system_audio_recording() -> None:
    """Without NSAudioCaptureUsageDescription macOS refuses the tap without asking."""
    with open(ROOT / "packaging" / "macos" / "Info.plist", "rb") as f:
        info = plistlib.load(f)
    assert "interviewer" in info["NSAudioCaptureUsageDescription"]


def _write_wav(path: Path, seconds: float) -> None:
    n = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    samples = (0.3 * np.sin(2 * np.pi * TONE_HZ * n) * 32767).astype(np.int16)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        out.writeframes(samples.tobytes())

