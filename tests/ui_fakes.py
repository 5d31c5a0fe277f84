"""Test doubles for the window: a controller whose events come from a background thread,
an in-memory keyring, and hotkey backends that refuse or accept."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from app.core.events import Event
from app.ui.hotkeys import Hotkey
from devtools.scripted import ScriptedController
from tests.memory_keyring import MemoryKeyring

__all__ = ["MemoryKeyring"]


class FakeController(ScriptedController):
    """The Controller protocol with call recording, plus ``emit_from_thread``."""

    def emit_from_thread(self, events: Iterable[Event], gap: float = 0.0) -> threading.Thread:
        items = list(events)

        def run() -> None:
            for event in items:
                self.bus.emit(event)
                if gap:
                    time.sleep(gap)

        thread = threading.Thread(target=run, name="fake-stage", daemon=True)
        thread.start()
        return thread


class RefusingBackend:
    """An OS that says another application owns every combination."""

    name = "refusing"

    def __init__(self) -> None:
        self.attempts: list[str] = []

    def unavailable(self) -> str | None:
        return None

    def register(self, action: str, hotkey: Hotkey, callback: Callable[[], None]) -> str | None:
        self.attempts.append(action)
        return f"{hotkey.display()} is already used by another application"

    def unregister_all(self) -> None:
        return None


class AcceptingBackend:
    name = "accepting"

    def __init__(self) -> None:
        self.callbacks: dict[str, Callable[[], None]] = {}

    def unavailable(self) -> str | None:
        return None

    def register(self, action: str, hotkey: Hotkey, callback: Callable[[], None]) -> str | None:
        self.callbacks[action] = callback
        return None

    def unregister_all(self) -> None:
        self.callbacks.clear()
