"""The macOS and Windows global-hotkey back-ends, driven on Linux through fake OS libraries.

Each fake is a :class:`tests.fake_dll.FakeLibrary`: the back-end declares its ctypes
prototypes on it as on the real library, every call is checked against the real
prototype (argument sizes) and goes through a real ctypes call, and the fake behaves as
the OS documents (Carbon Event Manager; user32 RegisterHotKey / message-only windows).
"""

from __future__ import annotations

import ctypes
import itertools
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.core.config import HotkeyConfig
from app.ui.hotkeys import HotkeyManager, macos, parse_hotkey
from app.ui.hotkeys.macos import MacBackend, to_carbon
from app.ui.hotkeys.windows import WindowsBackend, to_windows
from tests.fake_dll import CFunction, FakeLibrary, write_at

# --- macOS: a fake Carbon ---------------------------------------------------------------

c_void_p, c_uint32, c_int32, c_ulong = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int32, ctypes.c_ulong
OSStatus = c_int32
OSType = c_uint32
ItemCount = ByteCount = c_ulong  # unsigned long in MacTypes.h


def fourcc(code: str) -> int:
    return int.from_bytes(code.encode("ascii"), "big")


class EventHotKeyID(ctypes.Structure):
    _fields_ = [("signature", OSType), ("id", c_uint32)]


class EventTypeSpec(ctypes.Structure):
    _fields_ = [("eventClass", OSType), ("eventKind", c_uint32)]


EventHandlerProcPtr = ctypes.CFUNCTYPE(OSStatus, c_void_p, c_void_p, c_void_p)
eventParameterNotFoundErr = -9870
eventHotKeyExistsErr = -9878
errAEBufferTooSmall = -1741


@dataclass
class _CarbonEvent:
    """An EventRef: a hot-key press carries its EventHotKeyID as the direct object."""

    hotkey: EventHotKeyID
    cell: ctypes.c_int = field(default_factory=ctypes.c_int)  # gives the event an address


class FakeCarbon(FakeLibrary):
    """Carbon's Event Manager as far as hot keys go (CarbonEvents.h, Events.h)."""

    def __init__(self) -> None:
        self._target = ctypes.c_int()
        self.handlers: list[tuple[Any, list[tuple[int, int]], int | None]] = []
        self.hotkeys: dict[int, tuple[int, int, EventHotKeyID]] = {}
        """EventHotKeyRef -> (key code, modifiers, the id given at registration)."""
        self._refs = itertools.count(0x1000)
        self._events: dict[int, _CarbonEvent] = {}
        self.asked: list[tuple[str, str]] = []
        """(name, type) of every GetEventParameter call, as four-char codes."""
        super().__init__([
            CFunction("GetApplicationEventTarget", c_void_p, [], self._get_target),
            CFunction("InstallEventHandler", OSStatus,
                      [c_void_p, EventHandlerProcPtr, ItemCount, c_void_p, c_void_p, c_void_p],
                      self._install),
            CFunction("RegisterEventHotKey", OSStatus,
                      [c_uint32, c_uint32, EventHotKeyID, c_void_p, c_uint32, c_void_p],
                      self._register),
            CFunction("UnregisterEventHotKey", OSStatus, [c_void_p], self._unregister),
            CFunction("GetEventParameter", OSStatus,
                      [c_void_p, OSType, OSType, c_void_p, ByteCount, c_void_p, c_void_p],
                      self._get_parameter),
        ])

    @property
    def target(self) -> int:
        return ctypes.addressof(self._target)

    def _get_target(self) -> int:
        return self.target

    def _install(self, target: int, handler: Any, count: int, specs: int, user_data: int | None,
                 out_ref: int | None) -> int:
        assert target == self.target, "handler installed on another target"
        kinds = [(s.eventClass, s.eventKind) for s in (EventTypeSpec * count).from_address(specs)]
        self.handlers.append((handler, kinds, user_data))
        write_at(out_ref, c_void_p, 0x2000 + len(self.handlers))
        return 0

    def _register(self, code: int, mods: int, hk_id: EventHotKeyID, target: int, options: int,
                  out_ref: int | None) -> int:
        assert target == self.target
        if any((code, mods) == (c, m) for c, m, _ in self.hotkeys.values()):
            return eventHotKeyExistsErr
        ref = next(self._refs)
        self.hotkeys[ref] = (code, mods, EventHotKeyID(hk_id.signature, hk_id.id))
        write_at(out_ref, c_void_p, ref)
        return 0

    def _unregister(self, ref: int | None) -> int:
        return 0 if self.hotkeys.pop(ref or 0, None) is not None else -50  # paramErr

    def _get_parameter(self, event: int, name: int, kind: int, out_type: int | None,
                       size: int, out_size: int | None, out_data: int | None) -> int:
        self.asked.append((name.to_bytes(4, "big").decode(), kind.to_bytes(4, "big").decode()))
        hotkey = self._events[event].hotkey
        if name != fourcc("----") or kind != fourcc("hkid"):
            return eventParameterNotFoundErr
        if size < ctypes.sizeof(EventHotKeyID) or not out_data:
            return errAEBufferTooSmall
        ctypes.memmove(out_data, ctypes.addressof(hotkey), ctypes.sizeof(EventHotKeyID))
        write_at(out_type, OSType, fourcc("hkid"))
        write_at(out_size, ByteCount, ctypes.sizeof(EventHotKeyID))
        return 0

    def press(self, code: int, mods: int) -> list[int]:
        """The user presses a registered combination: each matching handler runs, as the
        event loop would call it, through its C function pointer; returns their OSStatus."""
        found = [hk for c, m, hk in self.hotkeys.values() if (c, m) == (code, mods)]
        assert found, "nothing registered for this combination"
        event = _CarbonEvent(found[0])
        address = ctypes.addressof(event.cell)
        self._events[address] = event
        try:
            return [EventHandlerProcPtr(ctypes.cast(h, c_void_p).value or 0)(0x3000, address, data)
                    for h, kinds, data in self.handlers if (fourcc("keyb"), 5) in kinds]
        finally:
            del self._events[address]


def test_a_carbon_hot_key_press_reaches_its_callback() -> None:
    carbon = FakeCarbon()
    backend = MacBackend(carbon=carbon)
    assert backend.unavailable() is None
    pressed: list[str] = []
    low_latency, answer_now = parse_hotkey("ctrl+alt+l"), parse_hotkey("cmd+shift+space")
    assert backend.register("toggle_low_latency", low_latency,
                            lambda: pressed.append("low")) is None
    assert backend.register("answer_now", answer_now, lambda: pressed.append("now")) is None

    assert carbon.press(*to_carbon(answer_now)) == [0]  # noErr: handled
    assert carbon.press(*to_carbon(low_latency)) == [0]
    assert pressed == ["now", "low"]
    assert set(carbon.asked) == {("----", "hkid")}  # the direct object, typed as a hot-key id


def test_the_old_parameter_name_never_fired(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake refuses a parameter named 'hkid', as Carbon does (what shipped before)."""
    monkeypatch.setattr(macos, "K_EVENT_PARAM_DIRECT_OBJECT", fourcc("hkid"))
    carbon = FakeCarbon()
    backend = MacBackend(carbon=carbon)
    pressed: list[str] = []
    hotkey = parse_hotkey("ctrl+alt+l")
    assert backend.register("toggle_low_latency", hotkey, lambda: pressed.append("low")) is None
    assert carbon.press(*to_carbon(hotkey)) == [macos.EVENT_NOT_HANDLED_ERR]
    assert pressed == []


def test_carbon_refusals_and_unregistering() -> None:
    carbon = FakeCarbon()
    other_app = MacBackend(carbon=carbon)
    hotkey = parse_hotkey("ctrl+alt+l")
    assert other_app.register("toggle_low_latency", hotkey, lambda: None) is None
    backend = MacBackend(carbon=carbon)
    error = backend.register("toggle_low_latency", hotkey, lambda: None)
    assert error is not None and "already used by another application" in error
    assert backend.register("answer_now", parse_hotkey("ctrl+shift+space"), lambda: None) is None
    assert len(carbon.hotkeys) == 2
    backend.unregister_all()
    other_app.unregister_all()
    assert carbon.hotkeys == {}


def test_a_press_that_is_not_ours_is_passed_on() -> None:
    """Another handler's hot key (another signature) returns eventNotHandledErr."""
    carbon = FakeCarbon()
    backend = MacBackend(carbon=carbon)
    fired: list[int] = []
    assert backend.register("answer_now", parse_hotkey("ctrl+alt+l"), lambda: fired.append(1)) is None
    ref = next(iter(carbon.hotkeys))
    code, mods, hk = carbon.hotkeys[ref]
    carbon.hotkeys[ref] = (code, mods, EventHotKeyID(fourcc("xxxx"), hk.id))
    assert carbon.press(code, mods) == [macos.EVENT_NOT_HANDLED_ERR]
    assert fired == []


# --- Windows: a fake user32 ---------------------------------------------------------------

BOOL, LONG, ATOM = ctypes.c_int32, ctypes.c_int32, ctypes.c_uint16
UINT = DWORD = ctypes.c_uint32
WPARAM, LPARAM, LRESULT = ctypes.c_size_t, ctypes.c_ssize_t, ctypes.c_ssize_t
HANDLE, LPCWSTR = ctypes.c_void_p, ctypes.c_wchar_p
WNDPROC = ctypes.CFUNCTYPE(LRESULT, HANDLE, UINT, WPARAM, LPARAM)
WM_NCCREATE, WM_DESTROY, WM_CLOSE, WM_QUIT, WM_HOTKEY = 0x0081, 0x0002, 0x0010, 0x0012, 0x0312
HWND_MESSAGE = ctypes.c_void_p(-3).value
ERROR_INVALID_WINDOW_HANDLE, ERROR_CANNOT_FIND_WND_CLASS = 1400, 1407
ERROR_WINDOW_OF_OTHER_THREAD, ERROR_HOTKEY_ALREADY_REGISTERED = 1408, 1409
ERROR_CLASS_HAS_WINDOWS, ERROR_HOTKEY_NOT_REGISTERED = 1412, 1419


class WNDCLASSW(ctypes.Structure):  # winuser.h
    _fields_ = [("style", UINT), ("lpfnWndProc", ctypes.c_void_p), ("cbClsExtra", ctypes.c_int),
                ("cbWndExtra", ctypes.c_int), ("hInstance", HANDLE), ("hIcon", HANDLE),
                ("hCursor", HANDLE), ("hbrBackground", HANDLE), ("lpszMenuName", LPCWSTR),
                ("lpszClassName", LPCWSTR)]


class POINT(ctypes.Structure):
    _fields_ = [("x", LONG), ("y", LONG)]


class MSG(ctypes.Structure):  # winuser.h
    _fields_ = [("hwnd", HANDLE), ("message", UINT), ("wParam", WPARAM), ("lParam", LPARAM),
                ("time", DWORD), ("pt", POINT)]


@dataclass
class _Window:
    thread: int
    wndproc: Any
    parent: int | None


class FakeWin32:
    """user32/kernel32 as far as a message-only hotkey window goes.  Per-thread message
    queues and GetLastError; WM_HOTKEY is *posted* to the queue of the thread that owns
    the registered window (or, for RegisterHotKey(NULL, ...), to the registering thread)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._queues: dict[int, queue.SimpleQueue[tuple[int | None, int, int, int]]] = {}
        self._errors: dict[int, int] = {}
        self.classes: dict[str, Any] = {}
        self.windows: dict[int, _Window] = {}
        self.hotkeys: dict[tuple[int | None, int], tuple[int, int, int]] = {}
        """(hwnd, id) -> (modifiers without MOD_NOREPEAT, virtual key, registering thread)."""
        self._handles = itertools.count(0x10010, 0x10)
        self.kernel32 = FakeLibrary([
            CFunction("GetModuleHandleW", HANDLE, [LPCWSTR], lambda name: 0x400000)])
        self.user32 = FakeLibrary([
            CFunction("RegisterClassW", ATOM, [ctypes.c_void_p], self._register_class),
            CFunction("UnregisterClassW", BOOL, [LPCWSTR, HANDLE], self._unregister_class),
            CFunction("CreateWindowExW", HANDLE, [DWORD, LPCWSTR, LPCWSTR, DWORD, ctypes.c_int,
                                                  ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                                  HANDLE, HANDLE, HANDLE, ctypes.c_void_p],
                      self._create_window),
            CFunction("DestroyWindow", BOOL, [HANDLE], self._destroy_window),
            CFunction("DefWindowProcW", LRESULT, [HANDLE, UINT, WPARAM, LPARAM], self._default),
            CFunction("GetMessageW", BOOL, [ctypes.c_void_p, HANDLE, UINT, UINT], self._get_message),
            CFunction("DispatchMessageW", LRESULT, [ctypes.c_void_p], self._dispatch),
            CFunction("PostMessageW", BOOL, [HANDLE, UINT, WPARAM, LPARAM], self._post),
            CFunction("PostQuitMessage", None, [ctypes.c_int], self._post_quit),
            CFunction("RegisterHotKey", BOOL, [HANDLE, ctypes.c_int, UINT, UINT], self._register),
            CFunction("UnregisterHotKey", BOOL, [HANDLE, ctypes.c_int], self._unregister),
        ])

    def last_error(self) -> int:
        return self._errors.get(threading.get_ident(), 0)

    def _fail(self, error: int) -> int:
        self._errors[threading.get_ident()] = error
        return 0

    def _queue(self, thread: int) -> queue.SimpleQueue[tuple[int | None, int, int, int]]:
        with self._lock:
            return self._queues.setdefault(thread, queue.SimpleQueue())

    def _register_class(self, address: int) -> int:
        wc = WNDCLASSW.from_address(address)
        assert wc.lpfnWndProc and wc.lpszClassName
        with self._lock:
            self.classes[wc.lpszClassName] = WNDPROC(wc.lpfnWndProc)
            return 0xC000 + len(self.classes)

    def _unregister_class(self, name: str, instance: int | None) -> int:
        with self._lock:
            if any(w.wndproc is self.classes.get(name) for w in self.windows.values()):
                return self._fail(ERROR_CLASS_HAS_WINDOWS)
            return 1 if self.classes.pop(name, None) is not None else self._fail(ERROR_CANNOT_FIND_WND_CLASS)

    def _create_window(self, ex_style: int, class_name: str, title: str, style: int, x: int,
                       y: int, w: int, h: int, parent: int | None, menu: int | None,
                       instance: int | None, param: int | None) -> int:
        wndproc = self.classes.get(class_name)
        if wndproc is None:
            return self._fail(ERROR_CANNOT_FIND_WND_CLASS)
        hwnd = next(self._handles)
        with self._lock:
            self.windows[hwnd] = _Window(threading.get_ident(), wndproc, parent)
        if not wndproc(hwnd, WM_NCCREATE, 0, 0):  # sent, not posted: the window procedure runs now
            del self.windows[hwnd]
            return 0
        return hwnd

    def _destroy_window(self, hwnd: int | None) -> int:
        window = self.windows.get(hwnd or 0)
        if window is None:
            return self._fail(ERROR_INVALID_WINDOW_HANDLE)
        if window.thread != threading.get_ident():
            return self._fail(5)  # ERROR_ACCESS_DENIED: only the owner destroys a window
        window.wndproc(hwnd, WM_DESTROY, 0, 0)
        with self._lock:
            del self.windows[hwnd or 0]
        return 1

    def _default(self, hwnd: int | None, message: int, wparam: int, lparam: int) -> int:
        if message == WM_NCCREATE:
            return 1
        if message == WM_CLOSE:
            self._destroy_window(hwnd)
        return 0

    def _get_message(self, address: int, hwnd: int | None, first: int, last: int) -> int:
        assert hwnd is None and first == last == 0, "a filtered loop never sees WM_QUIT"
        target, message, wparam, lparam = self._queue(threading.get_ident()).get()
        msg = MSG.from_address(address)
        msg.hwnd, msg.message, msg.wParam, msg.lParam = target, message, wparam, lparam
        return 0 if message == WM_QUIT else 1

    def _dispatch(self, address: int) -> int:
        msg = MSG.from_address(address)
        window = self.windows.get(msg.hwnd or 0)
        if window is None:
            return 0  # a thread message: no window procedure to call
        assert window.thread == threading.get_ident(), "dispatched on a thread that does not own it"
        return int(window.wndproc(msg.hwnd, msg.message, msg.wParam, msg.lParam))

    def _post(self, hwnd: int | None, message: int, wparam: int, lparam: int) -> int:
        window = self.windows.get(hwnd or 0)
        if window is None:
            return self._fail(ERROR_INVALID_WINDOW_HANDLE)
        self._queue(window.thread).put((hwnd, message, wparam, lparam))
        return 1

    def _post_quit(self, code: int) -> None:
        self._queue(threading.get_ident()).put((None, WM_QUIT, code, 0))

    def _register(self, hwnd: int | None, hotkey_id: int, mods: int, vk: int) -> int:
        if hwnd is not None:
            window = self.windows.get(hwnd)
            if window is None:
                return self._fail(ERROR_INVALID_WINDOW_HANDLE)
            if window.thread != threading.get_ident():
                return self._fail(ERROR_WINDOW_OF_OTHER_THREAD)
        with self._lock:
            if any((m, v) == (mods & ~0x4000, vk) for m, v, _ in self.hotkeys.values()):
                return self._fail(ERROR_HOTKEY_ALREADY_REGISTERED)
            self.hotkeys[(hwnd, hotkey_id)] = (mods & ~0x4000, vk, threading.get_ident())
        return 1

    def _unregister(self, hwnd: int | None, hotkey_id: int) -> int:
        if hwnd is not None and hwnd in self.windows and \
                self.windows[hwnd].thread != threading.get_ident():
            return self._fail(ERROR_WINDOW_OF_OTHER_THREAD)
        with self._lock:
            if self.hotkeys.pop((hwnd, hotkey_id), None) is None:
                return self._fail(ERROR_HOTKEY_NOT_REGISTERED)
        return 1

    def press(self, mods: int, vk: int) -> None:
        """The user presses a combination: WM_HOTKEY goes to the owner's queue."""
        with self._lock:
            (hwnd, hotkey_id), (_, _, thread) = next(
                (key, value) for key, value in self.hotkeys.items()
                if value[:2] == (mods & ~0x4000, vk))
        owner = self.windows[hwnd].thread if hwnd is not None else thread
        self._queue(owner).put((hwnd, WM_HOTKEY, hotkey_id, (vk << 16) | (mods & ~0x4000)))

    def modal_step(self) -> list[tuple[int | None, int, int, int]]:
        """One turn of what DefWindowProc runs on the calling (GUI) thread while a window is
        dragged or a menu is open: it takes what waits in this thread's queue and dispatches
        *window* messages; thread messages have no window and are lost (returned here)."""
        lost: list[tuple[int | None, int, int, int]] = []
        q = self._queue(threading.get_ident())
        while True:
            try:
                item = q.get_nowait()
            except queue.Empty:
                return lost
            window = self.windows.get(item[0] or 0)
            if window is None:
                lost.append(item)
            else:
                window.wndproc(*item)

    def modal_loop(self, until: threading.Event) -> None:
        """The modal loop runs until ``until`` (30 s only turn a hang into a failure)."""
        for _ in range(3000):
            self.modal_step()
            if until.wait(0.01):
                return


@pytest.fixture
def win32() -> Iterator[tuple[FakeWin32, WindowsBackend]]:
    fake = FakeWin32()
    backend = WindowsBackend(user32=fake.user32, kernel32=fake.kernel32, last_error=fake.last_error)
    yield fake, backend
    backend.close()


def test_windows_hotkeys_live_on_a_message_only_window_of_their_own_thread(
        win32: tuple[FakeWin32, WindowsBackend]) -> None:
    fake, backend = win32
    assert backend.unavailable() is None
    assert backend.register("answer_now", parse_hotkey("ctrl+shift+space"), lambda: None) is None
    assert backend.register("show_hide", parse_hotkey("ctrl+alt+h"), lambda: None) is None
    [(hwnd, window)] = fake.windows.items()
    assert window.parent == HWND_MESSAGE  # hidden, never shown, no broadcasts
    assert window.thread != threading.get_ident()  # not the GUI thread
    assert sorted(fake.hotkeys.values()) == sorted(
        [(2 | 4, 0x20, window.thread), (2 | 1, ord("H"), window.thread)])
    assert {h for h, _ in fake.hotkeys} == {hwnd}
    backend.unregister_all()
    assert fake.hotkeys == {}
    backend.close()
    assert fake.windows == {} and fake.classes == {}  # the window and its class are gone


def test_a_press_fires_while_the_gui_thread_is_in_a_modal_loop(
        win32: tuple[FakeWin32, WindowsBackend]) -> None:
    """The window is being dragged (or a menu is open): the GUI thread is inside a modal
    loop that drops thread messages.  The press still reaches the callback."""
    fake, backend = win32
    fired = threading.Event()
    threads: list[threading.Thread] = []
    hotkey = parse_hotkey("ctrl+alt+l")

    def on_press() -> None:
        threads.append(threading.current_thread())
        fired.set()

    assert backend.register("toggle_low_latency", hotkey, on_press) is None
    fake.press(*to_windows(hotkey))
    fake.modal_loop(until=fired)
    assert fired.is_set()
    assert [t.name for t in threads] == ["hotkeys-win32"]


def test_a_combination_another_app_owns_is_refused_by_name(
        win32: tuple[FakeWin32, WindowsBackend]) -> None:
    fake, backend = win32
    other = WindowsBackend(user32=fake.user32, kernel32=fake.kernel32, last_error=fake.last_error)
    try:
        hotkey = parse_hotkey("ctrl+alt+l")
        assert other.register("toggle_low_latency", hotkey, lambda: None) is None
        error = backend.register("toggle_low_latency", hotkey, lambda: None)
        assert error == f"{hotkey.display()} is already used by another application"
    finally:
        other.close()


def test_thread_messages_are_what_a_modal_loop_loses() -> None:
    """The fake is faithful where it matters: a hotkey registered with no window (what
    shipped before) arrives as a thread message, and the modal loop drops it."""
    fake = FakeWin32()
    fake.user32.RegisterHotKey.argtypes = [HANDLE, ctypes.c_int, UINT, UINT]
    fake.user32.RegisterHotKey.restype = BOOL
    assert fake.user32.RegisterHotKey(None, 1, 2 | 1, ord("L"))
    fake.press(2 | 1, ord("L"))
    assert fake.modal_step() == [(None, WM_HOTKEY, 1, (ord("L") << 16) | 3)]


def test_a_windows_press_reaches_the_manager_on_the_gui_thread(
        qtbot: QtBot, win32: tuple[FakeWin32, WindowsBackend]) -> None:
    """The whole path: hotkey thread -> HotkeyManager's queued signal -> ``triggered`` on
    the GUI thread, with the Settings defaults."""
    fake, backend = win32
    widget = QWidget()
    qtbot.addWidget(widget)
    manager = HotkeyManager(widget, backend)
    defaults = HotkeyConfig().model_dump()
    assert manager.apply(defaults, defaults) == []
    assert manager.summary().startswith("Hotkeys (global)")
    got: list[tuple[str, bool]] = []
    manager.triggered.connect(
        lambda action: got.append((action, threading.current_thread() is threading.main_thread())))
    fake.press(*to_windows(parse_hotkey(defaults["toggle_low_latency"])))
    qtbot.waitUntil(lambda: bool(got), timeout=30_000)
    assert got == [("toggle_low_latency", True)]
    manager.close()
    assert fake.hotkeys == {}


def test_a_carbon_press_reaches_the_manager(qtbot: QtBot) -> None:
    carbon = FakeCarbon()
    widget = QWidget()
    qtbot.addWidget(widget)
    manager = HotkeyManager(widget, MacBackend(carbon=carbon))
    defaults = HotkeyConfig().model_dump()
    assert manager.apply(defaults, defaults) == []
    got: list[str] = []
    manager.triggered.connect(got.append)
    assert carbon.press(*to_carbon(parse_hotkey(defaults["answer_now"]))) == [0]
    qtbot.waitUntil(lambda: bool(got), timeout=30_000)
    assert got == ["answer_now"]
    manager.close()
    assert carbon.hotkeys == {}
