"""Event times have real resolution where ``time.monotonic()`` has none: on Windows under
Python 3.11/3.12 it moves in 15.6 ms steps (CPython gh-88494).  One fake timeline stands in
for the machine: ``time.monotonic`` reads it in those steps, ``time.perf_counter`` exactly,
as on Windows; the session clock and the audio arrival stamps must follow it to the
millisecond."""

from __future__ import annotations

import math
import queue

import numpy as np
import pytest

import app.audio.device as device
from app.core.clock import SessionClock

WINDOWS_TICK_S = 0.015625
"""GetTickCount64's step: the default timer interrupt, 64 per second."""


class WindowsTime:
    """The true time ``t``, read as Windows reads it: monotonic in ticks, perf_counter exactly."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, t: float = 1000.0) -> None:
        self.t = t
        monkeypatch.setattr("time.monotonic", self.monotonic)
        monkeypatch.setattr("time.perf_counter", self.perf_counter)

    def monotonic(self) -> float:
        return math.floor(self.t / WINDOWS_TICK_S) * WINDOWS_TICK_S

    def perf_counter(self) -> float:
        return self.t


def test_two_events_a_millisecond_apart_get_distinct_stamps(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = WindowsTime(monkeypatch)
    clock = SessionClock()
    clock.start()
    machine.t += 0.002
    first = clock.now()
    machine.t += 0.001
    second = clock.now()
    assert machine.monotonic() == 1000.0  # the monotonic clock has not moved at all
    assert second - first == pytest.approx(0.001, abs=1e-9)
    assert first == pytest.approx(0.002, abs=1e-9)


def test_a_replay_clock_scales_the_fine_steps_too(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = WindowsTime(monkeypatch)
    clock = SessionClock()
    clock.start(speed=4.0)
    machine.t += 0.001
    assert clock.now() == pytest.approx(0.004, abs=1e-9)
    assert clock.to_counter(0.004) == pytest.approx(machine.t, abs=1e-9)


def test_audio_blocks_a_millisecond_apart_arrive_at_distinct_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """The PortAudio callback stamps each block's arrival on the session clock's base: the
    first block's stamp places the stream on the session clock."""
    machine = WindowsTime(monkeypatch)
    source = device.DeviceSource.__new__(device.DeviceSource)
    source._queue = queue.SimpleQueue()
    source._overflows = 0
    on_block, _ = source._callbacks(1)
    status = type("Status", (), {"input_overflow": False})()
    block = np.zeros((16, 1), dtype=np.float32)
    on_block(block, len(block), None, status)
    machine.t += 0.001
    on_block(block, len(block), None, status)
    first, second = source._queue.get_nowait()[1], source._queue.get_nowait()[1]
    assert second - first == pytest.approx(0.001, abs=1e-9)

