"""The session clock: seconds since the first audio sample, shared by every stage."""

from __future__ import annotations

import time


class Deadline:
    """One point in time that several waits share: each gets what is left of it, so a
    shutdown of five threads waits as long as its slowest, not as long as their sum."""

    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self._at - time.monotonic())


class SessionClock:
    """Monotonic time since the first audio sample, scaled by the replay speed.

    With a file replayed at ``speed`` N the audio advances N seconds per wall second;
    scaling the clock by the same factor keeps every stage's ``t`` comparable with the
    audio position (at N = 1 it *is* the position in the WAV).  Until the source starts,
    ``now()`` is 0.
    """

    def __init__(self) -> None:
        self._origin: float | None = None
        self._speed = 1.0

    def start(self, origin: float | None = None, speed: float = 1.0) -> None:
        """Set time zero to ``origin`` (a ``time.monotonic()`` value; default: now)."""
        self._origin = time.monotonic() if origin is None else origin
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
        return (time.monotonic() - self._origin) * self._speed

    def to_monotonic(self, t: float) -> float:
        """The ``time.monotonic()`` instant at which session time ``t`` happens."""
        origin = time.monotonic() if self._origin is None else self._origin
        return origin + t / self._speed
