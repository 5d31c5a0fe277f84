"""Low-latency mode: one owner, observed by everything that acts on it or shows it.

With the mode on, a guess at the question is asked before the turn is confirmed and its
answer held ready (decision 0032).  The session owns the one :class:`LowLatency` (made
from ``[answer] low_latency``); the answer engine, the interviewer's listener, the window
and its status line observe it instead of each keeping a copy.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

Observer = Callable[[bool], None]


class LowLatency:
    """Whether low-latency mode is on; observers hear each change on the setter's thread."""

    def __init__(self, on: bool) -> None:
        self._on = on
        self._lock = threading.Lock()
        self._observers: list[Observer] = []

    @property
    def on(self) -> bool:
        return self._on

    def set(self, on: bool) -> None:
        """Turn the mode on or off; the observers are told (outside the lock) if it changed."""
        with self._lock:
            if on == self._on:
                return
            self._on = on
            observers = list(self._observers)
        for observer in observers:
            try:
                observer(on)
            except Exception:  # one observer's bug must not keep the others from hearing it
                log.exception("a low-latency observer failed")

    def observe(self, observer: Observer) -> Callable[[], None]:
        """Tell ``observer`` every change from now on; returns what stops that."""
        with self._lock:
            self._observers.append(observer)

        def stop() -> None:
            with self._lock:
                if observer in self._observers:
                    self._observers.remove(observer)

        return stop
