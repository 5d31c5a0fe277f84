"""Windows: ``RegisterHotKey`` via ctypes, with no window of our own.

``WM_HOTKEY`` lands in the queue of the thread that registered (the GUI thread), where a
``QAbstractNativeEventFilter`` picks it up, so callbacks run on the GUI thread.
Importable on every OS (the DLL is loaded only when the back-end is built), so the key
code table can be tested anywhere.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QAbstractNativeEventFilter, QCoreApplication

from app.ui.hotkeys.keys import Hotkey

_WIN_VK: dict[str, int] = {
    **{c: ord(c.upper()) for c in "abcdefghijklmnopqrstuvwxyz0123456789"},
    **{f"f{i}": 0x6F + i for i in range(1, 25)},
    "space": 0x20, "tab": 0x09, "enter": 0x0D, "escape": 0x1B, "backspace": 0x08,
    "delete": 0x2E, "insert": 0x2D, "home": 0x24, "end": 0x23, "pageup": 0x21,
    "pagedown": 0x22, "left": 0x25, "up": 0x26, "right": 0x27, "down": 0x28,
    ";": 0xBA, "=": 0xBB, ",": 0xBC, "-": 0xBD, ".": 0xBE, "/": 0xBF, "`": 0xC0,
    "[": 0xDB, "\\": 0xDC, "]": 0xDD, "'": 0xDE,
}


def to_windows(hotkey: Hotkey) -> tuple[int, int]:
    """(modifiers, virtual key) for RegisterHotKey."""
    mods = (1 if hotkey.alt else 0) | (2 if hotkey.ctrl else 0) | (4 if hotkey.shift else 0) | (
        8 if hotkey.meta else 0)
    return mods | 0x4000, _WIN_VK[hotkey.key]  # MOD_NOREPEAT


class _WinFilter(QAbstractNativeEventFilter):
    def __init__(self, on_hotkey: Callable[[int], None]) -> None:
        super().__init__()
        self._on_hotkey = on_hotkey

    def nativeEventFilter(self, eventType: Any, message: int) -> object:
        if bytes(eventType) == b"windows_generic_MSG":
            from ctypes import wintypes

            msg = wintypes.MSG.from_address(int(message))
            if msg.message == 0x0312:  # WM_HOTKEY
                self._on_hotkey(int(msg.wParam))
                return True, 0
        return False, 0


class WindowsBackend:
    """RegisterHotKey with no window: WM_HOTKEY lands in the GUI thread's queue."""

    name = "windows"

    def __init__(self) -> None:
        self._user32: Any = ctypes.WinDLL("user32", use_last_error=True)  # type: ignore[attr-defined]
        self._ids: dict[int, Callable[[], None]] = {}
        self._next = 0xB000
        self._filter = _WinFilter(self._dispatch)
        app = QCoreApplication.instance()
        if app is not None:
            app.installNativeEventFilter(self._filter)

    def unavailable(self) -> str | None:
        return None

    def register(self, action: str, hotkey: Hotkey, callback: Callable[[], None]) -> str | None:
        mods, vk = to_windows(hotkey)
        hotkey_id = self._next
        self._next += 1
        if not self._user32.RegisterHotKey(None, hotkey_id, mods, vk):
            err = ctypes.get_last_error()  # type: ignore[attr-defined]
            if err == 1409:  # ERROR_HOTKEY_ALREADY_REGISTERED
                return f"{hotkey.display()} is already used by another application"
            return f"Windows refused {hotkey.display()} (error {err})"
        self._ids[hotkey_id] = callback
        return None

    def unregister_all(self) -> None:
        for hotkey_id in list(self._ids):
            self._user32.UnregisterHotKey(None, hotkey_id)
        self._ids.clear()

    def _dispatch(self, hotkey_id: int) -> None:
        callback = self._ids.get(hotkey_id)
        if callback is not None:
            callback()
