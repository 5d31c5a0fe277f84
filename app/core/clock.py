"""The session clock: seconds since the first audio sample, shared by every stage.

Two clocks, each for what it is good at:

- **Event times** (every event's ``t``, audio arrival stamps, latencies) are read from
  ``time.perf_counter()``: monotonic, and with sub-microsecond resolution on every OS.
  ``time.monotonic()`` on Windows under Python 3.11 and 3.12 is GetTickCount64, which
  moves in 15.6 ms steps (CPython gh-88494, fixed in 3.13): two events a millisecond
  apart would share a stamp, and every latency figure would be rounded to that step.
- **Deadlines and timeouts** (:class:`Deadline`, retry intervals, flush intervals) stay on
  ``time.monotonic()``: they are tenths of a second to seconds long, so its step costs
  them nothing, and it is the clock ``threading``'s waits time out on.
"""

from __future__ import annotations

import time


class Deadline:
    """One point in time that several waits share: each gets what is left of it, so a
    shutdown of five threads waits as long as its slowest, not as long as their sum.

    On ``time.monotonic()`` (see the module's docstring): what is left is handed to
    ``join``/``wait`` timeouts, which count on that clock, and a step of 15.6 ms in a
    shutdown's seconds does not matter."""

    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self._at - time.monotonic())


class SessionClock:
    """High-resolution time since the first audio sample, scaled by the replay speed.

    With a file replayed at ``speed`` N the audio advances N seconds per wall second;
    scaling the clock by the same factor keeps every stage's ``t`` comparable with the
    audio position (at N = 1 it *is* the position in the WAV).  Until the source starts,
    ``now()`` is 0.  Instants are ``time.perf_counter()`` values (see the module's
    docstring): a source that stamps audio arrivals stamps them on that clock too.
    """

    def __init__(self) -> None:
        self._origin: float | None = None
        self._speed = 1.0

    def start(self, origin: float | None = None, speed: float = 1.0) -> None:
        """Set time zero to ``origin`` (a ``time.perf_counter()`` value; default: now)."""
        self._origin = time.perf_counter() if origin is None else origin
        self._speed = speed

    @property
    def started(self) -> bool:
        return self._origin is not None

    @property
    def speed(self) -> float:
        return self._speed

    def now(self) -> float:
        if self._origin is None:
            return 0.0
        return (time.perf_counter() - self._origin) * self._speed

    def to_counter(self, t: float) -> float:
        """The ``time.perf_counter()`` instant at which session time ``t`` happens."""
        origin = time.perf_counter() if self._origin is None else self._origin
        return origin + t / self._speed
