"""A PortAudio stream that wedges never holds the session: the rules of ``DeviceSource``
when the sound server dies under it, with a fake ``sounddevice`` stream standing in for
the ALSA→PulseAudio one whose ``Pa_AbortStream`` never returns (seen on a busy machine).

The real daemon-killing path runs in ``tests/session/test_session.py``; these check the rules one by one
without PulseAudio: the loss is reported before the close is tried, a close that does not
return is abandoned, an open that does not return is retried, and silence seen while the
worker was not scheduled counts for little.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np
import pytest

import app.audio.device as device
from app.audio.device import DeviceInfo, DeviceSource, _Target
from app.audio.frames import AudioFrame
from app.core.clock import SessionClock

RATE = 16_000


class FakeStream:
    """What ``sd.InputStream`` gives the source, with the failure modes we need.

    ``dies_after`` blocks are delivered, then PortAudio reports the stream finished (the
    sound server is gone); ``abort``/``close`` block until ``release`` is set when
    ``wedged``, as PortAudio's do on a dead PulseAudio connection.
    """

    instances: ClassVar[list[FakeStream]] = []
    wedged = True
    release = threading.Event()

    def __init__(self, *, callback: Callable[..., None], finished_callback: Callable[[], None],
                 samplerate: int, channels: int, **_: Any) -> None:
        self.callback, self.finished = callback, finished_callback
        self.channels = channels
        self.active = False
        self.aborts = 0
        FakeStream.instances.append(self)

    def start(self) -> None:
        self.active = True
        status = type("Status", (), {"input_overflow": False})()
        block = np.zeros((RATE // 100, self.channels), dtype=np.float32)
        for _ in range(10):
            self.callback(block, len(block), None, status)
        self.finished()  # the server went away

    def abort(self) -> None:
        self.aborts += 1
        if FakeStream.wedged:
            FakeStream.release.wait()

    def close(self) -> None:
        self.abort()


@pytest.fixture
def fake_portaudio(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FakeStream]]:
    FakeStream.instances = []
    FakeStream.wedged = True
    FakeStream.release = threading.Event()
    info = DeviceInfo(index=0, name="Fake Mic", hostapi="ALSA", max_input_channels=1,
                      default_samplerate=RATE, is_default=True, is_loopback_candidate=False)
    monkeypatch.setattr(device, "_resolve", lambda spec: _Target(label="Fake Mic", name="Fake Mic",
                                                                 pulse_source=None))
    monkeypatch.setattr(DeviceSource, "_find", lambda self: info)
    monkeypatch.setattr(device.sd, "InputStream", FakeStream)
    monkeypatch.setattr(device, "_abandoned", [])
    monkeypatch.setattr(device, "CLOSE_DEADLINE", 0.2)
    yield FakeStream
    FakeStream.release.set()  # let the wedged threads go


def _capture(source: DeviceSource) -> tuple[list[AudioFrame], list[str], threading.Event]:
    frames: list[AudioFrame] = []
    errors: list[str] = []
    lost = threading.Event()

    def on_error(message: str) -> None:
        errors.append(message)
        lost.set()

    source.start(frames.append, on_error)
    return frames, errors, lost


def test_a_stream_that_will_not_close_is_abandoned_and_the_source_still_stops(
        fake_portaudio: type[FakeStream]) -> None:
    source = DeviceSource("Fake Mic", SessionClock())
    frames, errors, lost = _capture(source)
    assert lost.wait(30), "the loss was never reported"
    assert "was lost (the stream stopped)" in errors[0]
    source.stop()
    assert source.wait(30) and not source._thread.is_alive()  # type: ignore[union-attr]
    assert device.abandoned_streams() == 1
    assert fake_portaudio.instances[0].aborts == 1  # tried once, then never touched again
    assert frames, "what the stream delivered before it died was passed on"


def test_the_loss_is_reported_before_the_close_is_tried(fake_portaudio: type[FakeStream],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A session that ends on the loss must not wait for PortAudio to let go."""
    monkeypatch.setattr(device, "CLOSE_DEADLINE", 3600.0)  # a close that never ends
    source = DeviceSource("Fake Mic", SessionClock())
    _, _, lost = _capture(source)
    assert lost.wait(30), "the loss waited for the close"
    assert fake_portaudio.instances[0].aborts <= 1
    fake_portaudio.release.set()
    source.stop()


def test_a_healthy_close_abandons_nothing(fake_portaudio: type[FakeStream]) -> None:
    fake_portaudio.wedged = False
    source = DeviceSource("Fake Mic", SessionClock())
    _, _, lost = _capture(source)
    assert lost.wait(30)
    source.stop()
    assert device.abandoned_streams() == 0


def test_an_open_that_never_returns_is_a_failed_attempt() -> None:
    never = threading.Event()
    closed: list[str] = []
    handed_over = threading.Event()

    def hangs() -> str:
        never.wait()
        return "late stream"

    def close(stream: str) -> None:
        closed.append(stream)
        handed_over.set()

    with pytest.raises(device.PortAudioWedged):
        device._with_deadline(hangs, 0.2, "open", on_late=close)
    never.set()  # it returns after all: what it made is handed to on_late, not leaked
    assert handed_over.wait(30)
    assert closed == ["late stream"]


def test_a_call_within_its_deadline_returns_its_value_or_raises_its_error() -> None:
    assert device._with_deadline(lambda: 42, 30, "open") == 42

    def fails() -> None:
        raise ValueError("no such rate")

    with pytest.raises(ValueError, match="no such rate"):
        device._with_deadline(fails, 30, "open")


def test_silence_while_the_worker_was_not_scheduled_counts_as_one_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A busy machine (or a debugger) that keeps the worker off the CPU for 10 s adds at
    most AWAKE_STEP to "no audio for a while": only silence seen awake condemns a stream."""
    now = [100.0]
    monkeypatch.setattr(device.time, "monotonic", lambda: now[0])
    worker = device._Worker.__new__(device._Worker)
    worker.quiet, worker.last_step = 0.0, now[0]
    now[0] += 10.0
    assert worker._awake_step() == device.AWAKE_STEP
    now[0] += 0.1
    assert worker._awake_step() == pytest.approx(0.1)
