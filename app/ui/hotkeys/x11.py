"""Linux/X11: pynput's XRecord listener observes key presses on a thread of its own.

It only observes (it does not grab), so the in-window shortcut may fire for the same key
press; the manager drops the second trigger.  Callbacks run on pynput's thread.
Wayland has no global hotkey API for ordinary clients; :func:`default_backend` never
builds this back-end there.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable
from typing import Any

from app.ui.hotkeys.keys import Hotkey

_PYNPUT_NAMES = {"pageup": "page_up", "pagedown": "page_down", "escape": "esc"}


def to_pynput(hotkey: Hotkey) -> str:
    """The ``<ctrl>+<alt>+l`` form ``pynput.keyboard.GlobalHotKeys`` takes."""
    parts = [f"<{m}>" for m, on in (("ctrl", hotkey.ctrl), ("alt", hotkey.alt),
                                    ("shift", hotkey.shift), ("cmd", hotkey.meta)) if on]
    key = hotkey.key if len(hotkey.key) == 1 else (
        f"<{_PYNPUT_NAMES.get(hotkey.key, hotkey.key)}>")
    return "+".join([*parts, key])


class PynputBackend:
    """X11 only: pynput's XRecord listener observes key presses on a thread of its own."""

    name = "pynput"

    def __init__(self) -> None:
        self._mapping: dict[str, Callable[[], None]] = {}
        self._listener: Any = None
        self._lock = threading.Lock()
        self._reason: str | None = None
        try:
            # imports fail without a usable X display
            self._keyboard: Any = importlib.import_module("pynput.keyboard")
        except Exception as exc:
            self._reason = f"pynput is unavailable ({type(exc).__name__}: {exc})"

    def unavailable(self) -> str | None:
        return self._reason

    def register(self, action: str, hotkey: Hotkey, callback: Callable[[], None]) -> str | None:
        if self._reason:
            return self._reason
        combo = to_pynput(hotkey)
        try:
            self._keyboard.HotKey.parse(combo)
        except ValueError as exc:
            return f"{hotkey.display()} cannot be watched on X11 ({exc})"
        with self._lock:
            self._mapping[combo] = callback
        return self._restart()

    def _restart(self) -> str | None:
        self._stop()
        try:
            listener = self._keyboard.GlobalHotKeys(dict(self._mapping))
            listener.daemon = True
            listener.start()
        except Exception as exc:
            self._reason = f"the X11 key listener failed ({type(exc).__name__}: {exc})"
            return self._reason
        self._listener = listener
        return None

    def _stop(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(Exception):  # stopping a dead listener
                self._listener.stop()
            self._listener = None

    def unregister_all(self) -> None:
        self._stop()
        with self._lock:
            self._mapping.clear()
