"""Global hotkeys (low-latency toggle, answer now, show/hide, read a screen region, again)
through each OS's own API.

One interface, :class:`GlobalBackend`, one module per OS behind it, and the factory
:func:`default_backend` that picks one:

* ``windows``: ``RegisterHotKey`` via ctypes, for a hidden message-only window pumped by a
  thread of its own (so presses arrive while the GUI thread sits in a move/menu loop).
* ``macos``: Carbon ``RegisterEventHotKey`` via ctypes: needs no Accessibility permission.
  Never pynput there: it crashes alongside PySide6.
* ``x11``: pynput (XRecord) on its own thread.  Wayland offers no global hotkey API to
  ordinary clients, so there (and without a display) :class:`NullBackend` says why.

Design notes: decision 0039.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable
from typing import Protocol

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QGuiApplication, QShortcut
from PySide6.QtWidgets import QWidget

from app.ui.hotkeys.keys import (
    IS_MAC,
    Hotkey,
    HotkeyError,
    UnmappableKey,
    parse_hotkey,
    types_characters,
)

__all__ = ["ACTIONS", "DEDUP_S", "IS_MAC", "GlobalBackend", "Hotkey", "HotkeyError",
           "HotkeyManager", "NullBackend", "UnmappableKey", "default_backend", "parse_hotkey",
           "platform_warning", "types_characters"]

ACTIONS: dict[str, str] = {
    "toggle_low_latency": "Toggle low-latency mode",
    "answer_now": "Answer now",
    "show_hide": "Show/hide window",
    "capture_region": "Read a screen region",
    "capture_again": "Read the last region again",
}
DEDUP_S = 0.35


class GlobalBackend(Protocol):
    """Registers system-wide hotkeys; callbacks may run on any thread."""

    name: str

    def unavailable(self) -> str | None:
        """Why this platform refuses global hotkeys altogether, or None."""

    def register(self, action: str, hotkey: Hotkey, callback: Callable[[], None]) -> str | None:
        """Register; returns None on success or a sentence saying why not.  Raises
        :class:`UnmappableKey` for a key this OS's API has no code for."""

    def unregister_all(self) -> None: ...


class NullBackend:
    """No global hotkeys here (Wayland, no display, a native API that failed to load);
    ``reason`` is shown to the user and the in-window shortcuts carry on alone."""

    name = "none"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def unavailable(self) -> str | None:
        return self.reason

    def register(self, action: str, hotkey: Hotkey, callback: Callable[[], None]) -> str | None:
        return self.reason

    def unregister_all(self) -> None:
        return None


def platform_warning(hotkey: Hotkey, platform: str = sys.platform) -> str | None:
    """What the user should know about a combination that parses, on this OS: a key the
    OS's hotkey API cannot register, or a combination that types characters; or None.

    For the Settings dialog, as the user types: the manager says the same when it applies.
    """
    if platform == "darwin":
        from app.ui.hotkeys.macos import to_carbon  # pure Python: no framework is loaded

        try:
            to_carbon(hotkey)
        except UnmappableKey as exc:
            return f"{exc}: this key cannot be a hotkey here"
    return types_characters(hotkey, platform)


def default_backend() -> GlobalBackend:
    """The backend for this OS and Qt platform, or a NullBackend saying why there is none.

    Each OS module is imported only here, so a platform never loads another's code.
    """
    platform = QGuiApplication.platformName()
    try:
        if sys.platform == "win32":
            from app.ui.hotkeys.windows import WindowsBackend

            return WindowsBackend()
        if sys.platform == "darwin":
            from app.ui.hotkeys.macos import MacBackend

            return MacBackend()
    except Exception as exc:  # ctypes load failure: keep the in-window shortcuts
        return NullBackend(f"the OS hotkey API could not be loaded ({exc})")
    if platform == "wayland" or (os.environ.get("WAYLAND_DISPLAY") and platform != "xcb"):
        return NullBackend("Wayland does not let applications register global hotkeys")
    if platform != "xcb" or not os.environ.get("DISPLAY"):
        return NullBackend(f"no X11 display (Qt platform {platform!r})")
    from app.ui.hotkeys.x11 import PynputBackend

    return PynputBackend()


class HotkeyManager(QObject):
    """Owns the in-window shortcuts and the global registrations for the three actions.

    ``triggered(action)`` is always delivered on the GUI thread (backends call from their
    own threads; the signal is queued).  ``problems`` lists what the user should be told.
    """

    triggered = Signal(str)
    _fire = Signal(str)

    def __init__(self, window: QWidget, backend: GlobalBackend | None = None,
                 platform: str = sys.platform) -> None:
        """``platform``: whose keyboard rules the warnings follow (another OS's in tests)."""
        super().__init__(window)
        self._window = window
        self._backend = backend
        self._platform = platform
        self._shortcuts: dict[str, QShortcut] = {}
        self._last: dict[str, float] = {}
        self.bindings: dict[str, Hotkey] = {}
        self.global_ok: dict[str, bool] = {}
        self.problems: list[str] = []
        self._fire.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    @property
    def shortcuts(self) -> dict[str, QShortcut]:
        return dict(self._shortcuts)

    def apply(self, config: dict[str, str], defaults: dict[str, str]) -> list[str]:
        """(Re)bind every action; an unparsable string keeps the default and is reported."""
        self.problems = []
        if self._backend is None:
            self._backend = default_backend()
        self._backend.unregister_all()
        for shortcut in self._shortcuts.values():
            shortcut.setEnabled(False)
            shortcut.deleteLater()
        self._shortcuts.clear()
        self.bindings.clear()
        self.global_ok.clear()
        for action, label in ACTIONS.items():
            text = config.get(action, defaults[action])
            try:
                hotkey = parse_hotkey(text)
            except HotkeyError as exc:
                self.problems.append(f"{label}: {exc}; using {defaults[action]}")
                hotkey = parse_hotkey(defaults[action])
            typing = types_characters(hotkey, self._platform)
            if typing:  # the user's choice (an old default, perhaps): kept, but said
                self.problems.append(f"{label} ({hotkey.display()}): {typing}. Choose another "
                                     f"combination in Settings → Hotkeys ([hotkeys] {action}).")
            taken = next((a for a, h in self.bindings.items() if h == hotkey), None)
            if taken is not None:  # one key, two actions: the first keeps it
                self.problems.append(f"{label} ({hotkey.display()}) is already {ACTIONS[taken]}: choose "
                                     f"another combination in Settings → Hotkeys ([hotkeys] {action}).")
                continue
            self.bindings[action] = hotkey
            shortcut = QShortcut(hotkey.to_qt(), self._window)
            shortcut.setContext(Qt.ShortcutContext.ApplicationShortcut)
            shortcut.activated.connect(functools.partial(self._deliver, action))
            self._shortcuts[action] = shortcut
        reason = self._backend.unavailable()
        if reason:
            self.problems.append(f"Global hotkeys unavailable: {reason}. The shortcuts work "
                                 "while this window is focused.")
            return self.problems
        for action, hotkey in self.bindings.items():
            try:
                error = self._backend.register(action, hotkey,
                                               functools.partial(self._fire.emit, action))
            except UnmappableKey as exc:
                self.global_ok[action] = False
                self.problems.append(f"{ACTIONS[action]} ({hotkey.display()}) cannot be a global "
                                     f"hotkey: {exc}. Choose another key in Settings → Hotkeys "
                                     f"([hotkeys] {action}).")
                continue
            self.global_ok[action] = error is None
            if error:
                self.problems.append(f"{ACTIONS[action]} ({hotkey.display()}): {error}; it "
                                     "works only while this window is focused. Choose another "
                                     "combination in Settings → Hotkeys.")
        return self.problems

    def summary(self) -> str:
        if not self.bindings:
            return ""
        scope = "global" if self.global_ok and all(self.global_ok.values()) else "in-window"
        keys = ", ".join(f"{self.bindings[a].display()} {ACTIONS[a].lower()}"
                         for a in ACTIONS if a in self.bindings)
        return f"Hotkeys ({scope}): {keys}"

    def close(self) -> None:
        if self._backend is not None:
            self._backend.unregister_all()

    def _deliver(self, action: str) -> None:
        now = time.monotonic()
        if now - self._last.get(action, -1e9) < DEDUP_S:
            return
        self._last[action] = now
        self.triggered.emit(action)
