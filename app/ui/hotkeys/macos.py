"""macOS: Carbon ``RegisterEventHotKey`` via ctypes.

Chosen because it needs no Accessibility permission.  Never pynput here: it crashes
alongside PySide6.  Carbon calls the handler on the main (GUI) thread.  Importable on
every OS (the framework is loaded only when the back-end is built).

A press arrives as a ``kEventHotKeyPressed`` event whose *direct object*
(``kEventParamDirectObject``, ``'----'``) is the ``EventHotKeyID`` we registered, of
type ``typeEventHotKeyID`` (``'hkid'``).  Asking for a parameter *named* ``'hkid'``
returns ``eventParameterNotFoundErr`` on every press while registration still succeeds,
so nothing ever fired.  The library comes in through ``MacBackend(carbon=...)`` so that
``tests/ui/test_hotkeys_platform.py`` drives this code on Linux with a fake Carbon that
checks every argument type against the Carbon headers.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from app.ui.hotkeys.keys import Hotkey, key_code

_MAC_KEYCODE: dict[str, int] = {
    "a": 0, "s": 1, "d": 2, "f": 3, "h": 4, "g": 5, "z": 6, "x": 7, "c": 8, "v": 9, "b": 11,
    "q": 12, "w": 13, "e": 14, "r": 15, "y": 16, "t": 17, "1": 18, "2": 19, "3": 20, "4": 21,
    "6": 22, "5": 23, "=": 24, "9": 25, "7": 26, "-": 27, "8": 28, "0": 29, "]": 30, "o": 31,
    "u": 32, "[": 33, "i": 34, "p": 35, "enter": 36, "l": 37, "j": 38, "'": 39, "k": 40,
    ";": 41, "\\": 42, ",": 43, "/": 44, "n": 45, "m": 46, ".": 47, "tab": 48, "space": 49,
    "`": 50, "backspace": 51, "escape": 53, "f1": 122, "f2": 120, "f3": 99, "f4": 118,
    "f5": 96, "f6": 97, "f7": 98, "f8": 100, "f9": 101, "f10": 109, "f11": 103, "f12": 111,
    "f13": 105, "f14": 107, "f15": 113, "f16": 106, "f17": 64, "f18": 79, "f19": 80,
    "f20": 90, "home": 115, "pageup": 116, "delete": 117, "end": 119, "pagedown": 121,
    "left": 123, "right": 124, "down": 125, "up": 126,
}


CARBON_API = "macOS (Carbon hotkeys)"


def to_carbon(hotkey: Hotkey) -> tuple[int, int]:
    """(virtual key code, modifiers) for RegisterEventHotKey.

    The codes are key *positions* on an ANSI (US QWERTY) keyboard (``kVK_ANSI_A`` and so
    on in Events.h): on AZERTY or Dvorak the hotkey is the key where QWERTY's would be.
    Mac keyboards have no Insert and no F21-F24, and Carbon no codes for them:
    :class:`~app.ui.hotkeys.keys.UnmappableKey`.
    """
    mods = (0x100 if hotkey.meta else 0) | (0x200 if hotkey.shift else 0) | (
        0x800 if hotkey.alt else 0) | (0x1000 if hotkey.ctrl else 0)
    return key_code(_MAC_KEYCODE, hotkey, CARBON_API), mods


def _fourcc(code: str) -> int:
    return int.from_bytes(code.encode("ascii"), "big")


CARBON_PATH = "/System/Library/Frameworks/Carbon.framework/Carbon"
K_EVENT_CLASS_KEYBOARD = _fourcc("keyb")
K_EVENT_HOT_KEY_PRESSED = 5
K_EVENT_PARAM_DIRECT_OBJECT = _fourcc("----")
TYPE_EVENT_HOT_KEY_ID = _fourcc("hkid")
SIGNATURE = _fourcc("icop")
"""Our EventHotKeyID.signature: marks the presses that are ours."""
EVENT_NOT_HANDLED_ERR = -9874
EVENT_HOT_KEY_EXISTS_ERR = -9878


class MacBackend:
    """Carbon RegisterEventHotKey: system-wide, no Accessibility prompt."""

    name = "carbon"
    _HANDLER = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)

    class _HotKeyID(ctypes.Structure):
        _fields_ = [("signature", ctypes.c_uint32), ("id", ctypes.c_uint32)]

    class _EventTypeSpec(ctypes.Structure):
        _fields_ = [("eventClass", ctypes.c_uint32), ("eventKind", ctypes.c_uint32)]

    def __init__(self, carbon: Any = None) -> None:
        """``carbon``: the loaded framework (a fake in tests); None loads the real one."""
        if carbon is None:
            carbon = ctypes.CDLL(CARBON_PATH)
        self._carbon = carbon
        # ItemCount and ByteCount are unsigned long (64-bit); OSType and UInt32 are 32-bit.
        carbon.GetApplicationEventTarget.argtypes = []
        carbon.GetApplicationEventTarget.restype = ctypes.c_void_p
        carbon.InstallEventHandler.argtypes = [ctypes.c_void_p, self._HANDLER, ctypes.c_ulong,
                                               ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        carbon.InstallEventHandler.restype = ctypes.c_int32
        carbon.RegisterEventHotKey.argtypes = [ctypes.c_uint32, ctypes.c_uint32, self._HotKeyID,
                                               ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p]
        carbon.RegisterEventHotKey.restype = ctypes.c_int32
        carbon.UnregisterEventHotKey.argtypes = [ctypes.c_void_p]
        carbon.UnregisterEventHotKey.restype = ctypes.c_int32
        carbon.GetEventParameter.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32,
                                             ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p,
                                             ctypes.c_void_p]
        carbon.GetEventParameter.restype = ctypes.c_int32
        self._target = carbon.GetApplicationEventTarget()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._refs: list[ctypes.c_void_p] = []
        self._next = 1
        self._handler = self._HANDLER(self._on_event)  # keep a reference: C holds a pointer
        spec = self._EventTypeSpec(K_EVENT_CLASS_KEYBOARD, K_EVENT_HOT_KEY_PRESSED)
        self._install_status = carbon.InstallEventHandler(
            self._target, self._handler, 1, ctypes.byref(spec), None, None)

    def unavailable(self) -> str | None:
        if self._install_status != 0:
            return f"macOS refused the hotkey handler (OSStatus {self._install_status})"
        return None

    def register(self, action: str, hotkey: Hotkey, callback: Callable[[], None]) -> str | None:
        keycode, mods = to_carbon(hotkey)  # UnmappableKey before any Carbon call
        ref = ctypes.c_void_p()
        hk_id = self._HotKeyID(SIGNATURE, self._next)
        status = self._carbon.RegisterEventHotKey(keycode, mods, hk_id, self._target, 0,
                                                  ctypes.byref(ref))
        if status != 0:
            if status == EVENT_HOT_KEY_EXISTS_ERR:
                return f"{hotkey.display()} is already used by another application"
            return f"macOS refused {hotkey.display()} (OSStatus {status})"
        self._callbacks[self._next] = callback
        self._refs.append(ref)
        self._next += 1
        return None

    def unregister_all(self) -> None:
        for ref in self._refs:
            self._carbon.UnregisterEventHotKey(ref)
        self._refs.clear()
        self._callbacks.clear()

    def _on_event(self, _call: int | None, event: int | None, _data: int | None) -> int:
        hk_id = self._HotKeyID()
        status = self._carbon.GetEventParameter(
            event, K_EVENT_PARAM_DIRECT_OBJECT, TYPE_EVENT_HOT_KEY_ID, None,
            ctypes.sizeof(hk_id), None, ctypes.byref(hk_id))
        callback = self._callbacks.get(hk_id.id) if hk_id.signature == SIGNATURE else None
        if status != 0 or callback is None:
            return EVENT_NOT_HANDLED_ERR  # not ours: let other handlers see it
        callback()
        return 0
