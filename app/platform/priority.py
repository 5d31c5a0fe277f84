"""Ask the OS to run the app's listening work ahead of a video call on the same cores.

Users run the app beside the call, which takes most of a core on a laptop; with equal
priorities the scheduler shares the cores evenly, and the pass at the pause, the words
model's verdict and the audio thread wait their turn behind the call's bursts.  Each OS
offers an ordinary (unprivileged) application a way to say which of its threads the user
is waiting on (Windows, macOS; Linux within ``RLIMIT_NICE``).  Design notes: decision
0038.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

log = logging.getLogger(__name__)

Kind = Literal["audio", "decode"]
"""``audio``: the thread that cuts frames and runs the VAD (``audio:<source>``); ``decode``:
the recogniser's ``asr-worker``."""

# Windows (winbase.h, processthreadsapi.h)
ABOVE_NORMAL_PRIORITY_CLASS = 0x00008000
THREAD_PRIORITY_ABOVE_NORMAL = 1
THREAD_PRIORITY_BELOW_NORMAL = -1
MMCSS_TASK = "Pro Audio"
"""The MMCSS task of low-latency audio applications (its highest scheduling category)."""

# macOS (sys/qos.h)
QOS_CLASS_USER_INTERACTIVE = 0x21
QOS_CLASS_UTILITY = 0x11
LIBSYSTEM = "/usr/lib/libSystem.B.dylib"

LINUX_NICE_STEPS = 5
"""How far below its nice value a thread goes where ``RLIMIT_NICE`` allows: each step is
~1.25x the CPU weight, so 5 is ~3x a normal process's (a video call's) share when they
contend, short of starving the desktop."""

_said: set[str] = set()
_said_lock = threading.Lock()


def _failed(what: str, exc: object) -> None:
    """Log a failed call once per kind of failure, at debug level (never raised)."""
    with _said_lock:
        if what in _said:
            return
        _said.add(what)
    log.debug("priority: %s failed: %s", what, exc)


# --- the OS functions, each a seam ---------------------------------------------------


@dataclass
class Windows:
    """kernel32 and avrt (loaded on first use on Windows)."""

    kernel32: Any = None
    avrt: Any = None

    def __post_init__(self) -> None:
        if sys.platform == "win32" and self.kernel32 is None:
            self.kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        if self.kernel32 is not None:
            k = self.kernel32
            _declare(k.GetCurrentProcess, ctypes.c_void_p, [])
            _declare(k.GetCurrentThread, ctypes.c_void_p, [])
            _declare(k.SetPriorityClass, ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint32])
            _declare(k.GetThreadPriority, ctypes.c_int, [ctypes.c_void_p])
            _declare(k.SetThreadPriority, ctypes.c_int, [ctypes.c_void_p, ctypes.c_int])

    def load_avrt(self) -> Any:
        """avrt.dll (MMCSS), loaded the first time an audio thread asks."""
        if sys.platform == "win32" and self.avrt is None:
            self.avrt = ctypes.WinDLL("avrt", use_last_error=True)
        if self.avrt is not None:
            _declare(self.avrt.AvSetMmThreadCharacteristicsW, ctypes.c_void_p,
                     [ctypes.c_wchar_p, ctypes.POINTER(ctypes.c_uint32)])
            _declare(self.avrt.AvRevertMmThreadCharacteristics, ctypes.c_int, [ctypes.c_void_p])
        return self.avrt


@dataclass
class MacOS:
    """libSystem's QoS calls (loaded on first use on macOS)."""

    libsystem: Any = None

    def __post_init__(self) -> None:
        if sys.platform == "darwin" and self.libsystem is None:
            self.libsystem = ctypes.CDLL(LIBSYSTEM)
        if self.libsystem is not None:
            _declare(self.libsystem.qos_class_self, ctypes.c_uint, [])
            _declare(self.libsystem.pthread_set_qos_class_self_np, ctypes.c_int,
                     [ctypes.c_uint, ctypes.c_int])


@dataclass
class Linux:
    """The calls a user may make about their own threads' nice values."""

    nice_limit: Callable[[], int] = lambda: _nice_floor()
    get_nice: Callable[[int], int] = lambda tid: _get_nice(tid)
    set_nice: Callable[[int, int], None] = lambda tid, value: _set_nice(tid, value)
    thread_id: Callable[[], int] = threading.get_native_id


def _declare(function: Any, restype: Any, argtypes: list[Any]) -> None:
    function.restype, function.argtypes = restype, argtypes


def _nice_floor() -> int:
    """The lowest nice value ``RLIMIT_NICE`` lets this user set (its ceiling is 20 - limit)."""
    if sys.platform == "win32" or sys.platform == "darwin":
        raise OSError("RLIMIT_NICE is Linux's")
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NICE)
    return -20 if soft == resource.RLIM_INFINITY else 20 - soft


def _get_nice(tid: int) -> int:
    if sys.platform == "win32":
        raise OSError("no nice values on Windows")
    return os.getpriority(os.PRIO_PROCESS, tid)


def _set_nice(tid: int, value: int) -> None:
    if sys.platform == "win32":
        raise OSError("no nice values on Windows")
    os.setpriority(os.PRIO_PROCESS, tid, value)


def _last_error() -> int:
    """Windows' last error of a ctypes call (0 elsewhere: the fakes set none)."""
    if sys.platform == "win32":
        return ctypes.get_last_error()
    return 0


Api = Windows | MacOS | Linux


def _default_api(platform: str) -> Api | None:
    if platform == "win32":
        return Windows()
    if platform == "darwin":
        return MacOS()
    if platform.startswith("linux"):
        return Linux()
    return None


# --- the calls the app makes ---------------------------------------------------------


def raise_process(*, platform: str | None = None, api: Api | None = None) -> None:
    """At start-up: the whole process a step ahead of normal applications (Windows); on
    Linux the calling thread, and the threads it starts afterwards, as far as allowed."""
    try:
        api = api if api is not None else _default_api(platform or sys.platform)
        if isinstance(api, Windows):
            k = api.kernel32
            if not k.SetPriorityClass(k.GetCurrentProcess(), ABOVE_NORMAL_PRIORITY_CLASS):
                _failed("SetPriorityClass", _last_error())
        elif isinstance(api, Linux):
            _renice(api)
    except Exception as exc:
        _failed("raise_process", exc)


@contextlib.contextmanager
def for_thread(kind: Kind, *, platform: str | None = None, api: Api | None = None) -> Iterator[None]:
    """Run the block on this thread ahead of a video call (see the module), then put the
    thread back as it was."""
    undo: Callable[[], None] | None = None
    try:
        api = api if api is not None else _default_api(platform or sys.platform)
        if isinstance(api, Windows):
            undo = _windows_thread(api, kind)
        elif isinstance(api, MacOS):
            undo = _macos_thread(api)
        elif isinstance(api, Linux):
            undo = _renice(api)
    except Exception as exc:
        _failed(f"{kind} thread", exc)
    try:
        yield
    finally:
        if undo is not None:
            try:
                undo()
            except Exception as exc:
                _failed(f"{kind} thread's undo", exc)


def _windows_thread(api: Windows, kind: Kind) -> Callable[[], None] | None:
    if kind == "audio":
        avrt = api.load_avrt()
        task_index = ctypes.c_uint32(0)
        handle = avrt.AvSetMmThreadCharacteristicsW(MMCSS_TASK, ctypes.byref(task_index))
        if not handle:
            _failed("AvSetMmThreadCharacteristicsW", _last_error())
            return None

        def leave_task() -> None:
            if not avrt.AvRevertMmThreadCharacteristics(handle):
                _failed("AvRevertMmThreadCharacteristics", _last_error())

        return leave_task
    k = api.kernel32
    before = k.GetThreadPriority(k.GetCurrentThread())
    if not k.SetThreadPriority(k.GetCurrentThread(), THREAD_PRIORITY_ABOVE_NORMAL):
        _failed("SetThreadPriority", _last_error())
        return None

    def restore() -> None:
        if not k.SetThreadPriority(k.GetCurrentThread(), before):
            _failed("SetThreadPriority (restore)", _last_error())

    return restore


def _macos_thread(api: MacOS) -> Callable[[], None] | None:
    lib = api.libsystem
    before = lib.qos_class_self()
    error = lib.pthread_set_qos_class_self_np(QOS_CLASS_USER_INTERACTIVE, 0)
    if error:
        _failed("pthread_set_qos_class_self_np", os.strerror(error))
        return None
    def restore() -> None:
        error = lib.pthread_set_qos_class_self_np(before, 0)
        if error:
            _failed("pthread_set_qos_class_self_np (restore)", os.strerror(error))

    return restore


def _renice(api: Linux) -> Callable[[], None] | None:
    """This thread up to ``LINUX_NICE_STEPS`` nice steps, as far as ``RLIMIT_NICE`` allows."""
    tid = api.thread_id()
    before = api.get_nice(tid)
    target = max(api.nice_limit(), before - LINUX_NICE_STEPS)
    if target >= before:
        return None  # the usual case: a user may not go below where they are
    api.set_nice(tid, target)
    return lambda: api.set_nice(tid, before)  # going back up is always allowed


def lower_this_thread(*, platform: str | None = None, api: Api | None = None) -> None:
    """This thread behind the listening work for the rest of its life: for a worker the
    app owns (the screen reader's), whose work may wait while a question is being heard.

    Windows: below normal; macOS: the utility QoS class; Linux: ``LINUX_NICE_STEPS`` nice
    steps up (always allowed, and never undone: a user may not come back down).
    """
    try:
        api = api if api is not None else _default_api(platform or sys.platform)
        if isinstance(api, Windows):
            k = api.kernel32
            if not k.SetThreadPriority(k.GetCurrentThread(), THREAD_PRIORITY_BELOW_NORMAL):
                _failed("SetThreadPriority (below normal)", _last_error())
        elif isinstance(api, MacOS):
            error = api.libsystem.pthread_set_qos_class_self_np(QOS_CLASS_UTILITY, 0)
            if error:
                _failed("pthread_set_qos_class_self_np (utility)", os.strerror(error))
        elif isinstance(api, Linux):
            tid = api.thread_id()
            api.set_nice(tid, min(19, api.get_nice(tid) + LINUX_NICE_STEPS))
    except Exception as exc:
        _failed("lower_this_thread", exc)


def in_thread(kind: Kind, target: Callable[..., None]) -> Callable[..., None]:
    """``target`` run under :func:`for_thread` (``kind``): a thread's target, wrapped where
    the thread is started."""

    def run(*args: Any, **kwargs: Any) -> None:
        with for_thread(kind):
            target(*args, **kwargs)

    return run
