"""Global hotkeys (low-latency toggle, answer now, show/hide) through each OS's own API.

* Windows: ``RegisterHotKey`` via ctypes; ``WM_HOTKEY`` is caught by a
  ``QAbstractNativeEventFilter`` on the GUI thread (the thread that registered).
* macOS: Carbon ``RegisterEventHotKey`` via ctypes: needs no Accessibility permission.
  Never pynput there: it crashes alongside PySide6.
* Linux/X11: pynput (XRecord) on its own thread.  Wayland offers no global hotkey API to
  ordinary clients, so there we say so and rely on the in-window shortcuts.

In-window ``QShortcut``\\ s are always installed as well, so every action keeps working
while the window has focus even when the OS refuses a combination (another app owns it).
Where both fire for one key press (pynput only observes, it does not grab), the second
trigger within :data:`DEDUP_S` is dropped.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from PySide6.QtCore import QAbstractNativeEventFilter, QCoreApplication, QObject, Qt, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import QWidget

ACTIONS: dict[str, str] = {
    "toggle_low_latency": "Toggle low-latency mode",
    "answer_now": "Answer now",
    "show_hide": "Show/hide window",
}
DEDUP_S = 0.35
IS_MAC = sys.platform == "darwin"


class HotkeyError(ValueError):
    """A hotkey string that cannot be parsed; ``str()`` says what is wrong."""


_MODIFIERS: dict[str, str] = {
    "ctrl": "ctrl", "control": "ctrl", "ctl": "ctrl", "⌃": "ctrl", "^": "ctrl",
    "alt": "alt", "option": "alt", "opt": "alt", "⌥": "alt",
    "shift": "shift", "⇧": "shift",
    "cmd": "meta", "command": "meta", "meta": "meta", "super": "meta", "win": "meta",
    "windows": "meta", "⌘": "meta",
}
_NAMED: dict[str, str] = {
    "space": "space", "spc": "space", "tab": "tab", "enter": "enter", "return": "enter",
    "esc": "escape", "escape": "escape", "backspace": "backspace", "delete": "delete",
    "del": "delete", "insert": "insert", "ins": "insert", "home": "home", "end": "end",
    "pageup": "pageup", "pgup": "pageup", "page_up": "pageup", "pagedown": "pagedown",
    "pgdn": "pagedown", "page_down": "pagedown", "up": "up", "down": "down", "left": "left",
    "right": "right", "comma": ",", "period": ".", "dot": ".", "slash": "/",
    "semicolon": ";", "quote": "'", "apostrophe": "'", "backslash": "\\", "minus": "-",
    "equal": "=", "equals": "=", "grave": "`", "backtick": "`", "bracketleft": "[",
    "bracketright": "]", "plus": "=",
}
_PUNCT = set(",./;'[]\\-=`")


@dataclass(frozen=True)
class Hotkey:
    """A parsed combination.  ``ctrl`` is the Control key on every OS (⌃ on macOS);
    ``meta`` is Cmd on macOS and the Windows/Super key elsewhere."""

    key: str
    """Lower-case: a letter, a digit, punctuation, ``f1``…``f24`` or a name from _NAMED."""
    ctrl: bool = False
    alt: bool = False
    shift: bool = False
    meta: bool = False

    def __str__(self) -> str:
        return self.display()

    def canonical(self) -> str:
        mods = [m for m, on in (("ctrl", self.ctrl), ("alt", self.alt), ("shift", self.shift),
                                ("meta", self.meta)) if on]
        return "+".join([*mods, self.key])

    def display(self, mac: bool = IS_MAC) -> str:
        key = self.key.upper() if len(self.key) == 1 or self.key.startswith("f") else (
            self.key.capitalize())
        if mac:
            syms = "".join(s for s, on in (("⌃", self.ctrl), ("⌥", self.alt),
                                            ("⇧", self.shift), ("⌘", self.meta)) if on)
            return syms + key
        mods = [m for m, on in (("Ctrl", self.ctrl), ("Alt", self.alt), ("Shift", self.shift),
                                ("Meta", self.meta)) if on]
        return "+".join([*mods, key])

    def to_qt(self) -> QKeySequence:
        """For QShortcut; on macOS Qt's "Ctrl" is Cmd, so the physical keys are swapped."""
        parts: list[str] = []
        ctrl_name, meta_name = ("Meta", "Ctrl") if IS_MAC else ("Ctrl", "Meta")
        if self.ctrl:
            parts.append(ctrl_name)
        if self.alt:
            parts.append("Alt")
        if self.shift:
            parts.append("Shift")
        if self.meta:
            parts.append(meta_name)
        qt_names = {"pageup": "PgUp", "pagedown": "PgDown", "delete": "Del", "insert": "Ins",
                    "escape": "Esc", "enter": "Return"}
        key = qt_names.get(self.key, self.key.upper() if len(self.key) <= 3 else
                           self.key.capitalize())
        return QKeySequence("+".join([*parts, key]))

    def to_pynput(self) -> str:
        parts = [f"<{m}>" for m, on in (("ctrl", self.ctrl), ("alt", self.alt),
                                        ("shift", self.shift), ("cmd", self.meta)) if on]
        names = {"pageup": "page_up", "pagedown": "page_down", "escape": "esc"}
        key = self.key if len(self.key) == 1 else f"<{names.get(self.key, self.key)}>"
        return "+".join([*parts, key])

    def to_windows(self) -> tuple[int, int]:
        """(modifiers, virtual key) for RegisterHotKey."""
        mods = (1 if self.alt else 0) | (2 if self.ctrl else 0) | (4 if self.shift else 0) | (
            8 if self.meta else 0)
        return mods | 0x4000, _WIN_VK[self.key]  # MOD_NOREPEAT

    def to_carbon(self) -> tuple[int, int]:
        """(virtual key code, modifiers) for RegisterEventHotKey."""
        mods = (0x100 if self.meta else 0) | (0x200 if self.shift else 0) | (
            0x800 if self.alt else 0) | (0x1000 if self.ctrl else 0)
        return _MAC_KEYCODE[self.key], mods


def parse_hotkey(text: str) -> Hotkey:
    """Parse "ctrl+alt+l", "Ctrl+Shift+F5", "⌃⌥L", "cmd + option + space"…

    At least one of ctrl/alt/meta is required (except for F-keys): a global hotkey on a
    bare letter would eat that letter in every other application.
    """
    raw = (text or "").strip()
    if not raw:
        raise HotkeyError("the hotkey is empty")
    # macOS symbol prefixes ("⌃⌥L") become "+"-separated tokens
    for sym in "⌃⌥⇧⌘":
        raw = raw.replace(sym, f"{sym}+")
    tokens = [t.strip().lower() for t in raw.replace(" + ", "+").split("+")]
    if raw.endswith("++"):  # "ctrl++" means the plus key
        tokens = [*tokens[:-2], "plus"]
    tokens = [t for t in tokens if t]
    if not tokens:
        raise HotkeyError(f"{text!r} has no key")
    mods: set[str] = set()
    key: str | None = None
    for token in tokens:
        if token in _MODIFIERS:
            mod = _MODIFIERS[token]
            if mod in mods:
                raise HotkeyError(f"{text!r} names {mod} twice")
            mods.add(mod)
            continue
        name = _key_name(token)
        if name is None:
            raise HotkeyError(f"{text!r}: unknown key {token!r}")
        if key is not None:
            raise HotkeyError(f"{text!r} has two keys ({key!r} and {name!r}); use one key "
                              "with modifiers")
        key = name
    if key is None:
        raise HotkeyError(f"{text!r} has only modifiers; add a key, e.g. {text.strip()}+l")
    is_fkey = key.startswith("f") and key[1:].isdigit()
    if not (mods & {"ctrl", "alt", "meta"}) and not is_fkey:
        raise HotkeyError(f"{text!r} needs ctrl, alt or cmd: a bare key would be taken from "
                          "every other application")
    return Hotkey(key=key, ctrl="ctrl" in mods, alt="alt" in mods, shift="shift" in mods,
                  meta="meta" in mods)


def _key_name(token: str) -> str | None:
    if len(token) == 1 and ((token.isascii() and token.isalnum()) or token in _PUNCT):
        return token
    if token[0] == "f" and token[1:].isdigit() and 1 <= int(token[1:]) <= 24:
        return token
    return _NAMED.get(token)


_WIN_VK: dict[str, int] = {
    **{c: ord(c.upper()) for c in "abcdefghijklmnopqrstuvwxyz0123456789"},
    **{f"f{i}": 0x6F + i for i in range(1, 25)},
    "space": 0x20, "tab": 0x09, "enter": 0x0D, "escape": 0x1B, "backspace": 0x08,
    "delete": 0x2E, "insert": 0x2D, "home": 0x24, "end": 0x23, "pageup": 0x21,
    "pagedown": 0x22, "left": 0x25, "up": 0x26, "right": 0x27, "down": 0x28,
    ";": 0xBA, "=": 0xBB, ",": 0xBC, "-": 0xBD, ".": 0xBE, "/": 0xBF, "`": 0xC0,
    "[": 0xDB, "\\": 0xDC, "]": 0xDD, "'": 0xDE,
}
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


# --- OS backends --------------------------------------------------------------------------


class GlobalBackend(Protocol):
    """Registers system-wide hotkeys; callbacks may run on any thread."""

    name: str

    def unavailable(self) -> str | None:
        """Why this platform refuses global hotkeys altogether, or None."""

    def register(self, action: str, hotkey: Hotkey, callback: Callable[[], None]) -> str | None:
        """Register; returns None on success or a sentence saying why not."""

    def unregister_all(self) -> None: ...


class NullBackend:
    """No global hotkeys here; ``reason`` is shown to the user."""

    name = "none"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def unavailable(self) -> str | None:
        return self.reason

    def register(self, action: str, hotkey: Hotkey, callback: Callable[[], None]) -> str | None:
        return self.reason

    def unregister_all(self) -> None:
        return None


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
        mods, vk = hotkey.to_windows()
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


class MacBackend:
    """Carbon RegisterEventHotKey: system-wide, no Accessibility prompt."""

    name = "carbon"
    _HANDLER = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)

    class _HotKeyID(ctypes.Structure):
        _fields_ = [("signature", ctypes.c_uint32), ("id", ctypes.c_uint32)]

    class _EventTypeSpec(ctypes.Structure):
        _fields_ = [("eventClass", ctypes.c_uint32), ("eventKind", ctypes.c_uint32)]

    def __init__(self) -> None:
        carbon: Any = ctypes.CDLL("/System/Library/Frameworks/Carbon.framework/Carbon")
        self._carbon = carbon
        carbon.GetApplicationEventTarget.restype = ctypes.c_void_p
        carbon.InstallEventHandler.argtypes = [ctypes.c_void_p, self._HANDLER, ctypes.c_uint32,
                                               ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        carbon.RegisterEventHotKey.argtypes = [ctypes.c_uint32, ctypes.c_uint32, self._HotKeyID,
                                               ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p]
        carbon.UnregisterEventHotKey.argtypes = [ctypes.c_void_p]
        carbon.GetEventParameter.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32,
                                             ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                             ctypes.c_void_p]
        self._target = carbon.GetApplicationEventTarget()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._refs: list[ctypes.c_void_p] = []
        self._next = 1
        self._handler = self._HANDLER(self._on_event)  # keep a reference: C holds a pointer
        spec = self._EventTypeSpec(_fourcc("keyb"), 5)  # kEventHotKeyPressed
        self._install_status = carbon.InstallEventHandler(
            self._target, self._handler, 1, ctypes.byref(spec), None, None)

    def unavailable(self) -> str | None:
        if self._install_status != 0:
            return f"macOS refused the hotkey handler (OSStatus {self._install_status})"
        return None

    def register(self, action: str, hotkey: Hotkey, callback: Callable[[], None]) -> str | None:
        keycode, mods = hotkey.to_carbon()
        ref = ctypes.c_void_p()
        hk_id = self._HotKeyID(_fourcc("icop"), self._next)
        status = self._carbon.RegisterEventHotKey(keycode, mods, hk_id, self._target, 0,
                                                  ctypes.byref(ref))
        if status != 0:
            if status == -9878:  # eventHotKeyExistsErr
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
            event, _fourcc("hkid"), _fourcc("hkid"), None, ctypes.sizeof(hk_id), None,
            ctypes.byref(hk_id))
        if status == 0 and hk_id.id in self._callbacks:
            self._callbacks[hk_id.id]()
            return 0
        return -9874  # eventNotHandledErr


def _fourcc(code: str) -> int:
    return int.from_bytes(code.encode("ascii"), "big")


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
        combo = hotkey.to_pynput()
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


def default_backend() -> GlobalBackend:
    """The backend for this OS and Qt platform, or a NullBackend saying why there is none."""
    platform = QGuiApplication.platformName()
    try:
        if sys.platform == "win32":
            return WindowsBackend()
        if sys.platform == "darwin":
            return MacBackend()
    except Exception as exc:  # ctypes load failure: keep the in-window shortcuts
        return NullBackend(f"the OS hotkey API could not be loaded ({exc})")
    if platform == "wayland" or (os.environ.get("WAYLAND_DISPLAY") and platform != "xcb"):
        return NullBackend("Wayland does not let applications register global hotkeys")
    if platform != "xcb" or not os.environ.get("DISPLAY"):
        return NullBackend(f"no X11 display (Qt platform {platform!r})")
    return PynputBackend()


# --- manager ------------------------------------------------------------------------------


class HotkeyManager(QObject):
    """Owns the in-window shortcuts and the global registrations for the three actions.

    ``triggered(action)`` is always delivered on the GUI thread (backends call from their
    own threads; the signal is queued).  ``problems`` lists what the user should be told.
    """

    triggered = Signal(str)
    _fire = Signal(str)

    def __init__(self, window: QWidget, backend: GlobalBackend | None = None) -> None:
        super().__init__(window)
        self._window = window
        self._backend = backend
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
            error = self._backend.register(action, hotkey,
                                           functools.partial(self._fire.emit, action))
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
