"""Windows: ``RegisterHotKey`` on a message-only window owned by a thread of our own.

Design notes: decision 0039.
"""

from __future__ import annotations

import contextlib
import ctypes
import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from app.ui.hotkeys.keys import Hotkey, key_code

_WIN_VK: dict[str, int] = {
    **{c: ord(c.upper()) for c in "abcdefghijklmnopqrstuvwxyz0123456789"},
    **{f"f{i}": 0x6F + i for i in range(1, 25)},
    "space": 0x20, "tab": 0x09, "enter": 0x0D, "escape": 0x1B, "backspace": 0x08,
    "delete": 0x2E, "insert": 0x2D, "home": 0x24, "end": 0x23, "pageup": 0x21,
    "pagedown": 0x22, "left": 0x25, "up": 0x26, "right": 0x27, "down": 0x28,
    ";": 0xBA, "=": 0xBB, ",": 0xBC, "-": 0xBD, ".": 0xBE, "/": 0xBF, "`": 0xC0,
    "[": 0xDB, "\\": 0xDC, "]": 0xDD, "'": 0xDE,
}

MOD_NOREPEAT = 0x4000
WM_DESTROY = 0x0002
WM_CLOSE = 0x0010
WM_HOTKEY = 0x0312
WM_APP_CALL = 0x8000 + 1  # WM_APP + 1: "run the queued calls"
HWND_MESSAGE = -3
ERROR_HOTKEY_ALREADY_REGISTERED = 1409
_T = TypeVar("_T")
CALL_TIMEOUT_S = 5.0
"""The hotkey thread answers in microseconds; this only keeps a hung thread from
freezing the GUI thread that waits for it."""

# Windows types with their Windows sizes on every OS (ctypes.wintypes.DWORD is 8 bytes on
# Linux), so the structures below have the same layout here as in user32.
BOOL = ctypes.c_int32
UINT = ctypes.c_uint32
DWORD = ctypes.c_uint32
LONG = ctypes.c_int32
ATOM = ctypes.c_uint16
WPARAM = ctypes.c_size_t
LPARAM = ctypes.c_ssize_t
LRESULT = ctypes.c_ssize_t
HANDLE = ctypes.c_void_p  # HWND, HINSTANCE, HMENU, HICON, ...

if sys.platform == "win32":
    _FUNCTYPE = ctypes.WINFUNCTYPE
else:  # the one calling convention of 64-bit Windows, so the fake user32 runs here too
    _FUNCTYPE = ctypes.CFUNCTYPE

WNDPROC = _FUNCTYPE(LRESULT, HANDLE, UINT, WPARAM, LPARAM)


class WNDCLASSW(ctypes.Structure):
    _fields_ = [("style", UINT), ("lpfnWndProc", WNDPROC), ("cbClsExtra", ctypes.c_int),
                ("cbWndExtra", ctypes.c_int), ("hInstance", HANDLE), ("hIcon", HANDLE),
                ("hCursor", HANDLE), ("hbrBackground", HANDLE),
                ("lpszMenuName", ctypes.c_wchar_p), ("lpszClassName", ctypes.c_wchar_p)]


class POINT(ctypes.Structure):
    _fields_ = [("x", LONG), ("y", LONG)]


class MSG(ctypes.Structure):
    _fields_ = [("hwnd", HANDLE), ("message", UINT), ("wParam", WPARAM), ("lParam", LPARAM),
                ("time", DWORD), ("pt", POINT)]


def to_windows(hotkey: Hotkey) -> tuple[int, int]:
    """(modifiers, virtual key) for RegisterHotKey."""
    mods = (1 if hotkey.alt else 0) | (2 if hotkey.ctrl else 0) | (4 if hotkey.shift else 0) | (
        8 if hotkey.meta else 0)
    return mods | MOD_NOREPEAT, key_code(_WIN_VK, hotkey, "Windows (RegisterHotKey)")


def _declare(user32: Any, kernel32: Any) -> None:
    """Full prototypes: without them ctypes passes and returns C ints, which truncates
    64-bit handles and LRESULTs."""
    p = ctypes.POINTER
    kernel32.GetModuleHandleW.argtypes = [ctypes.c_wchar_p]
    kernel32.GetModuleHandleW.restype = HANDLE
    for name, restype, argtypes in (
        ("RegisterClassW", ATOM, [p(WNDCLASSW)]),
        ("UnregisterClassW", BOOL, [ctypes.c_wchar_p, HANDLE]),
        ("CreateWindowExW", HANDLE, [DWORD, ctypes.c_wchar_p, ctypes.c_wchar_p, DWORD,
                                     ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                     HANDLE, HANDLE, HANDLE, ctypes.c_void_p]),
        ("DestroyWindow", BOOL, [HANDLE]),
        ("DefWindowProcW", LRESULT, [HANDLE, UINT, WPARAM, LPARAM]),
        ("GetMessageW", BOOL, [p(MSG), HANDLE, UINT, UINT]),
        ("DispatchMessageW", LRESULT, [p(MSG)]),
        ("PostMessageW", BOOL, [HANDLE, UINT, WPARAM, LPARAM]),
        ("PostQuitMessage", None, [ctypes.c_int]),
        ("RegisterHotKey", BOOL, [HANDLE, ctypes.c_int, UINT, UINT]),
        ("UnregisterHotKey", BOOL, [HANDLE, ctypes.c_int]),
    ):
        function = getattr(user32, name)
        function.argtypes = argtypes
        function.restype = restype


def _load() -> tuple[Any, Any, Callable[[], int]]:
    if sys.platform != "win32":
        raise OSError("user32 exists only on Windows")
    return (ctypes.WinDLL("user32", use_last_error=True),
            ctypes.WinDLL("kernel32", use_last_error=True), ctypes.get_last_error)


class WindowsBackend:
    """RegisterHotKey for a message-only window pumped by its own thread."""

    name = "windows"

    def __init__(self, user32: Any = None, kernel32: Any = None,
                 last_error: Callable[[], int] | None = None) -> None:
        """The libraries (fakes in tests); None loads the real ones.  ``last_error`` reads
        the calling thread's GetLastError as saved by ctypes."""
        if user32 is None or kernel32 is None or last_error is None:
            user32, kernel32, last_error = _load()
        _declare(user32, kernel32)
        self._user32 = user32
        self._kernel32 = kernel32
        self._last_error = last_error
        self._wndproc = WNDPROC(self._window_procedure)  # C holds a pointer: keep it alive
        self._class_name = f"InterviewCopilotHotkeys{id(self):x}"
        self._hwnd: int | None = None
        self._reason: str | None = None
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._ids: dict[int, Callable[[], None]] = {}
        """Hotkey id -> callback; read and written on the hotkey thread only."""
        self._next = 1  # applications use ids 0x0000-0xBFFF
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="hotkeys-win32",
                                        daemon=True)
        self._thread.start()
        if not ready.wait(CALL_TIMEOUT_S):
            self._reason = "the hotkey thread did not start"

    # --- called from the GUI thread ------------------------------------------------------

    def unavailable(self) -> str | None:
        return self._reason

    def register(self, action: str, hotkey: Hotkey, callback: Callable[[], None]) -> str | None:
        if self._reason:
            return self._reason
        mods, vk = to_windows(hotkey)  # UnmappableKey before the hotkey thread is asked
        hotkey_id = self._next
        self._next += 1
        try:
            error = self._call(lambda: self._register_here(hotkey_id, mods, vk, callback))
        except OSError as exc:
            return f"Windows refused {hotkey.display()} ({exc})"
        if not error:
            return None
        if error == ERROR_HOTKEY_ALREADY_REGISTERED:
            return f"{hotkey.display()} is already used by another application"
        return f"Windows refused {hotkey.display()} (error {error})"

    def unregister_all(self) -> None:
        if self._hwnd is not None and self._thread.is_alive():
            with contextlib.suppress(OSError):  # a hung thread: the process exit frees them
                self._call(self._unregister_here)

    def close(self) -> None:
        """Unregister everything and end the thread (its window and class go with it)."""
        self.unregister_all()
        if self._hwnd is not None and self._thread.is_alive():
            self._user32.PostMessageW(self._hwnd, WM_CLOSE, 0, 0)
            self._thread.join(CALL_TIMEOUT_S)

    def _call(self, work: Callable[[], _T]) -> _T:
        """Run ``work`` on the hotkey thread and return its result (OSError if it cannot)."""
        done: Future[_T] = Future()
        self._calls.put((work, done))
        if not self._user32.PostMessageW(self._hwnd, WM_APP_CALL, 0, 0):
            raise OSError(f"error {self._last_error()} reaching the hotkey thread")
        try:
            return done.result(CALL_TIMEOUT_S)
        except TimeoutError:
            raise OSError("the hotkey thread did not answer") from None

    # --- the hotkey thread ---------------------------------------------------------------

    def _run(self, ready: threading.Event) -> None:
        user32 = self._user32
        instance = self._kernel32.GetModuleHandleW(None)
        window_class = WNDCLASSW(lpfnWndProc=self._wndproc, hInstance=instance,
                                 lpszClassName=self._class_name)
        if not user32.RegisterClassW(ctypes.byref(window_class)):
            self._reason = f"Windows refused the hotkey window class (error {self._last_error()})"
            ready.set()
            return
        hwnd = user32.CreateWindowExW(0, self._class_name, "Interview Copilot hotkeys", 0,
                                      0, 0, 0, 0, HWND_MESSAGE, None, instance, None)
        if not hwnd:
            self._reason = f"Windows refused the hotkey window (error {self._last_error()})"
            user32.UnregisterClassW(self._class_name, instance)
            ready.set()
            return
        self._hwnd = hwnd
        ready.set()
        msg = MSG()
        # The filter must be NULL: a loop filtered on our window would never see WM_QUIT.
        while user32.GetMessageW(ctypes.byref(msg), None, 0, 0) > 0:
            user32.DispatchMessageW(ctypes.byref(msg))
        self._hwnd = None
        user32.UnregisterClassW(self._class_name, instance)
        self._run_calls()  # a call that raced with closing still gets its answer

    def _window_procedure(self, hwnd: int | None, message: int, wparam: int, lparam: int) -> int:
        if message == WM_HOTKEY:
            callback = self._ids.get(wparam)
            if callback is not None:
                callback()
            return 0
        if message == WM_APP_CALL:
            self._run_calls()
            return 0
        if message == WM_DESTROY:
            self._user32.PostQuitMessage(0)
            return 0
        return int(self._user32.DefWindowProcW(hwnd, message, wparam, lparam))

    def _run_calls(self) -> None:
        while True:
            try:
                work, done = self._calls.get_nowait()
            except queue.Empty:
                return
            try:
                done.set_result(work())
            except Exception as exc:
                done.set_exception(exc)

    def _register_here(self, hotkey_id: int, mods: int, vk: int,
                       callback: Callable[[], None]) -> int:
        """0, or the Windows error code."""
        if not self._user32.RegisterHotKey(self._hwnd, hotkey_id, mods, vk):
            return self._last_error() or -1
        self._ids[hotkey_id] = callback
        return 0

    def _unregister_here(self) -> None:
        for hotkey_id in list(self._ids):
            self._user32.UnregisterHotKey(self._hwnd, hotkey_id)
        self._ids.clear()
