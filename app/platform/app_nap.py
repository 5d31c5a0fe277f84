"""Keep macOS from napping the app while a session listens (App Nap).

Once the window is hidden (Control+Shift+H) or the call's window covers it, macOS may put
the app into App Nap: its timers are coalesced and its threads lose priority, so audio
piles up, captions lag and answers come seconds late.  An activity held through
``NSProcessInfo`` (user-initiated and latency-critical) tells macOS the app is doing work
the user asked for and waits on; it is held from Start until the session is idle or has
failed again, so a window left open between interviews can still nap.

:class:`ListeningActivity` follows the session's ``session`` events on the bus (the
Session subscribes one), so every way a session ends — Stop, a failed start, shutdown
— ends the activity.  pyobjc's Foundation is imported lazily and only on macOS; without
it (a source checkout without ``pyobjc-framework-Cocoa``) the activity is a no-op, said
once in the log.  Elsewhere nothing is done: Windows and Linux have no App Nap.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

from app.core.events import Event, SessionStateEvent

log = logging.getLogger(__name__)

# NSActivityOptions, from Foundation's NSProcessInfo.h.
NS_ACTIVITY_USER_INITIATED = 0x00FFFFFF
"""``NSActivityUserInitiated``: the user asked for this work (also keeps idle system sleep
away: a long answer is read without touching the keyboard)."""
NS_ACTIVITY_LATENCY_CRITICAL = 0xFF00000000
"""``NSActivityLatencyCritical``: timers keep their precision (audio every few ms)."""
OPTIONS = NS_ACTIVITY_USER_INITIATED | NS_ACTIVITY_LATENCY_CRITICAL
REASON = "Listening to an interview"

HOLDING_STATES = frozenset({"starting", "listening", "stopping"})
"""While the session is in one of these, the activity is held; ``idle`` and ``failed`` end it."""


def foundation_process_info() -> Any:
    """``NSProcessInfo.processInfo()`` through pyobjc (raises ImportError without it)."""
    foundation = importlib.import_module("Foundation")
    return foundation.NSProcessInfo.processInfo()


class ListeningActivity:
    """One ``beginActivityWithOptions:reason:`` per listening session, ended when it is over.

    ``process_info`` makes the ``NSProcessInfo`` (default: pyobjc's, loaded on the first
    begin); ``platform`` is ``sys.platform`` unless given.  Safe from any thread: the
    session's state events come from the session thread, a failed local model's from
    another.
    """

    def __init__(self, *, platform: str | None = None,
                 process_info: Callable[[], Any] | None = None) -> None:
        self._enabled = (platform or sys.platform) == "darwin"
        self._load = process_info or foundation_process_info
        self._info: Any = None
        self._token: Any = None
        self._lock = threading.Lock()

    @property
    def held(self) -> bool:
        return self._token is not None

    def __call__(self, event: Event) -> None:
        """The bus listener: hold while the session starts, listens or stops; end after."""
        if isinstance(event, SessionStateEvent):
            if event.state in HOLDING_STATES:
                self.begin()
            else:
                self.end()

    def begin(self) -> None:
        """Hold the activity (once: holding it already changes nothing)."""
        with self._lock:
            if self._token is not None or not self._enabled:
                return
            try:
                if self._info is None:
                    self._info = self._load()
                self._token = self._info.beginActivityWithOptions_reason_(OPTIONS, REASON)
            except Exception as exc:  # App Nap is never worth a session: say it once, go on
                self._enabled = False
                log.warning("cannot keep macOS from slowing the app while its window is hidden "
                            "(App Nap): %s%s", exc, " (pyobjc-framework-Cocoa is not installed)"
                            if isinstance(exc, ImportError) else "")

    def end(self) -> None:
        """Let macOS nap the app again (nothing if the activity is not held)."""
        with self._lock:
            token, self._token = self._token, None
            if token is None:
                return
            try:
                self._info.endActivity_(token)
            except Exception as exc:
                log.warning("could not end the App Nap activity: %s", exc)
