"""The embedded server dies with the app, however the app ends (crash, ``kill -9``, Task Manager).

A child process outlives its parent by default: a killed app left ``llama_cpp.server``
running, holding its port and ~200 MB.  Each OS needs its own tie, and both ends take
part.  Design notes: decision 0039.
"""

from __future__ import annotations

import ctypes
import logging
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Protocol, cast

log = logging.getLogger(__name__)

PARENT_ENV = "INTERVIEW_COPILOT_PARENT_PID"
PR_SET_PDEATHSIG = 1
POLL_S = 0.5
"""How often a child without kqueue or prctl checks its parent: half a second of an orphan
costs nothing, and the check is one system call."""

JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS = 9
CREATE_NEW_PROCESS_GROUP = 0x200
"""Windows: Ctrl+C in the app's console reaches the app, which stops the server itself."""


# --- the parent's side -----------------------------------------------------------------------------


class _IoCounters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "ReadOperationCount", "WriteOperationCount", "OtherOperationCount",
        "ReadTransferCount", "WriteTransferCount", "OtherTransferCount")]


class _BasicLimits(ctypes.Structure):
    _fields_ = [
        ("PerProcessUserTimeLimit", ctypes.c_int64),
        ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", ctypes.c_uint32),
        ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t),
        ("ActiveProcessLimit", ctypes.c_uint32),
        ("Affinity", ctypes.c_size_t),
        ("PriorityClass", ctypes.c_uint32),
        ("SchedulingClass", ctypes.c_uint32),
    ]


class ExtendedLimits(ctypes.Structure):
    """``JOBOBJECT_EXTENDED_LIMIT_INFORMATION`` (144 bytes on 64-bit Windows)."""

    _fields_ = [
        ("BasicLimitInformation", _BasicLimits),
        ("IoInfo", _IoCounters),
        ("ProcessMemoryLimit", ctypes.c_size_t),
        ("JobMemoryLimit", ctypes.c_size_t),
        ("PeakProcessMemoryUsed", ctypes.c_size_t),
        ("PeakJobMemoryUsed", ctypes.c_size_t),
    ]


class Kernel32(Protocol):
    """The four kernel32 functions the job needs (a fake in tests)."""

    def CreateJobObjectW(self, attributes: Any, name: Any) -> Any: ...
    def SetInformationJobObject(self, job: Any, kind: int, info: Any, size: int) -> Any: ...
    def AssignProcessToJobObject(self, job: Any, process: Any) -> Any: ...
    def GetLastError(self) -> int: ...


def _load_kernel32() -> Kernel32:
    if sys.platform != "win32":
        raise OSError("kernel32 exists only on Windows")
    from ctypes import wintypes

    k = ctypes.WinDLL("kernel32", use_last_error=True)
    k.CreateJobObjectW.restype = wintypes.HANDLE  # a handle is pointer-sized: never the default int
    k.CreateJobObjectW.argtypes = [ctypes.c_void_p, wintypes.LPCWSTR]
    k.SetInformationJobObject.restype = wintypes.BOOL
    k.SetInformationJobObject.argtypes = [wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD]
    k.AssignProcessToJobObject.restype = wintypes.BOOL
    k.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
    k.GetLastError.restype = wintypes.DWORD
    return cast(Kernel32, k)


class KillOnCloseJob:
    """A Windows Job object that kills its processes when its last handle closes — that is,
    when this app ends, whichever way.  One per app; its handle is deliberately never closed."""

    def __init__(self, kernel32: Kernel32 | None = None) -> None:
        self._k = kernel32 if kernel32 is not None else _load_kernel32()
        handle = self._k.CreateJobObjectW(None, None)
        if not handle:
            raise OSError(f"CreateJobObjectW failed (error {self._k.GetLastError()})")
        limits = ExtendedLimits()
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
        if not self._k.SetInformationJobObject(handle, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS,
                                               ctypes.byref(limits), ctypes.sizeof(limits)):
            raise OSError(f"SetInformationJobObject failed (error {self._k.GetLastError()})")
        self.handle = handle

    def assign(self, process_handle: int) -> None:
        if not self._k.AssignProcessToJobObject(self.handle, process_handle):
            raise OSError(f"AssignProcessToJobObject failed (error {self._k.GetLastError()})")


_job: KillOnCloseJob | None = None
_job_lock = threading.Lock()


def _windows_job() -> KillOnCloseJob:
    global _job
    with _job_lock:
        if _job is None:
            _job = KillOnCloseJob()
        return _job


class _Spawner:
    """One thread, alive as long as the process, that forks every server child (Linux's
    parent-death signal follows the forking thread; see the module's docstring)."""

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[Callable[[], subprocess.Popen[bytes]],
                                                Future[subprocess.Popen[bytes]]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def run(self, start: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="server-spawner", daemon=True)
                self._thread.start()
        done: Future[subprocess.Popen[bytes]] = Future()
        self._requests.put((start, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            self._run(*self._requests.get())

    @staticmethod
    def _run(start: Callable[[], subprocess.Popen[bytes]], done: Future[subprocess.Popen[bytes]]) -> None:
        """One request, in a frame of its own: once the child started, this thread keeps no
        reference to its environment (the run's credential is in it)."""
        try:
            done.set_result(start())
        except BaseException as exc:  # handed to the caller, which raises it
            done.set_exception(exc)


_spawner = _Spawner()


def spawn(cmd: Sequence[str], *, env: dict[str, str] | None = None, **popen: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(cmd, **popen)``, tied to this process's life (see the module's
    docstring); the child finds this process's PID in :data:`PARENT_ENV`."""
    child_env = dict(os.environ if env is None else env)
    child_env[PARENT_ENV] = str(os.getpid())
    if sys.platform == "win32":
        popen["creationflags"] = popen.get("creationflags", 0) | CREATE_NEW_PROCESS_GROUP
        proc: subprocess.Popen[bytes] = subprocess.Popen(list(cmd), env=child_env, **popen)
        try:
            _windows_job().assign(int(getattr(proc, "_handle")))  # noqa: B009 - Popen's process handle
        except OSError as exc:  # a job we may not nest in: a normal exit still stops the server
            log.warning("the local LLM server is not tied to the app's life: %s", exc)
        return proc
    popen.setdefault("start_new_session", True)  # Ctrl+C in a terminal reaches the app, which stops us
    return _spawner.run(lambda: subprocess.Popen(list(cmd), env=child_env, **popen))


# --- the child's side -----------------------------------------------------------------------------


def watch_parent(parent: int | None = None, *, on_orphan: Callable[[int], object] = os._exit) -> str:
    """In the child: end this process when the parent named in :data:`PARENT_ENV` ends.
    Returns how it watches ("" when no parent was named); ``on_orphan(0)`` ends it."""
    if parent is None:
        value = os.environ.get(PARENT_ENV, "")
        if not value.isdigit():
            return ""
        parent = int(value)
    if sys.platform == "win32":
        return "job object"  # the parent's job kills us (KillOnCloseJob)
    if sys.platform == "linux" and _set_parent_death_signal():
        if os.getppid() != parent:  # it died before the signal was armed
            on_orphan(0)
        return "prctl"
    how = "kqueue" if sys.platform == "darwin" else "poll"
    watcher = threading.Thread(target=_wait_for_exit, args=(parent, on_orphan), name="parent-watch",
                               daemon=True)
    watcher.start()
    return how


def _set_parent_death_signal() -> bool:
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _wait_for_exit(parent: int, on_orphan: Callable[[int], object]) -> None:
    if sys.platform == "darwin":
        try:
            kq = select.kqueue()
            event = select.kevent(parent, filter=select.KQ_FILTER_PROC,
                                  flags=select.KQ_EV_ADD | select.KQ_EV_ONESHOT, fflags=select.KQ_NOTE_EXIT)
            kq.control([event], 0)
            if os.getppid() == parent:  # registered while it lived: wait for its exit
                kq.control(None, 1, None)
        except ProcessLookupError:
            pass  # already gone
        except OSError:
            _poll(parent)
    else:
        _poll(parent)
    on_orphan(0)


def _poll(parent: int) -> None:
    """Return once ``parent`` is no longer this process's parent (it died: we were re-parented)."""
    while os.getppid() == parent:
        time.sleep(POLL_S)
