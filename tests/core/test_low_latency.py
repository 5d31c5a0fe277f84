"""Low-latency mode has one owner; whoever shows it or acts on it observes it."""

from __future__ import annotations

from app.core.low_latency import LowLatency


def test_observers_hear_each_change_once_and_stop_when_asked() -> None:
    mode = LowLatency(True)
    heard: list[bool] = []
    stop = mode.observe(heard.append)
    mode.set(True)  # no change: nothing to say
    mode.set(False)
    mode.set(True)
    stop()
    mode.set(False)
    assert heard == [False, True] and mode.on is False


def test_a_failing_observer_does_not_keep_the_others_from_hearing() -> None:
    mode = LowLatency(False)
    heard: list[bool] = []

    def broken(on: bool) -> None:
        raise RuntimeError("gone")

    mode.observe(broken)
    mode.observe(heard.append)
    mode.set(True)
    assert heard == [True]
