"""The OS priorities asked for the listening work (:mod:`app.platform.priority`): on Windows
and macOS the real calls, made on stand-ins of kernel32/avrt and libSystem with the real
prototypes (:mod:`tests.fake_dll`); on Linux the nice values a user may set, as far as
``RLIMIT_NICE`` allows.  Whatever fails is swallowed: priority is never worth a session."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import sys
import threading
from typing import Any

import pytest

from app.platform import priority
from app.platform.priority import (
    ABOVE_NORMAL_PRIORITY_CLASS,
    MMCSS_TASK,
    QOS_CLASS_USER_INTERACTIVE,
    QOS_CLASS_UTILITY,
    THREAD_PRIORITY_ABOVE_NORMAL,
    THREAD_PRIORITY_BELOW_NORMAL,
    Linux,
    MacOS,
    Windows,
    for_thread,
    lower_this_thread,
    raise_process,
)
from tests.fake_dll import CFunction, FakeLibrary

PROCESS, THREAD, TASK = 0x7FF0, 0x7FF1, 0x4242
"""Pseudo-handles the fakes hand out, and the MMCSS task handle."""
HANDLE, DWORD, BOOL = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int


class FakeWindows:
    """kernel32 and avrt as far as priorities go; every call logged as (name, args)."""

    def __init__(self, *, refuse: bool = False, thread_priority: int = 0) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.refuse = refuse
        self.thread_priority = thread_priority

        def log(name: str, result: Any) -> Any:
            return lambda *args: (self.calls.append((name, args)), result(*args))[1]

        def set_thread_priority(thread: int, value: int) -> int:
            if self.refuse:
                return 0
            self.thread_priority = value
            return 1

        def set_task(name: str, index: Any) -> int | None:
            if self.refuse:
                return None
            index.contents.value = 7
            return TASK

        self.kernel32 = FakeLibrary([
            CFunction("GetCurrentProcess", HANDLE, [], log("GetCurrentProcess", lambda: PROCESS)),
            CFunction("GetCurrentThread", HANDLE, [], log("GetCurrentThread", lambda: THREAD)),
            CFunction("SetPriorityClass", BOOL, [HANDLE, DWORD],
                      log("SetPriorityClass", lambda h, c: 0 if self.refuse else 1)),
            CFunction("GetThreadPriority", ctypes.c_int, [HANDLE],
                      log("GetThreadPriority", lambda h: self.thread_priority)),
            CFunction("SetThreadPriority", BOOL, [HANDLE, ctypes.c_int],
                      log("SetThreadPriority", set_thread_priority)),
        ])
        self.avrt = FakeLibrary([
            CFunction("AvSetMmThreadCharacteristicsW", HANDLE, [ctypes.c_wchar_p, ctypes.POINTER(DWORD)],
                      log("AvSetMmThreadCharacteristicsW", set_task)),
            CFunction("AvRevertMmThreadCharacteristics", BOOL, [HANDLE],
                      log("AvRevertMmThreadCharacteristics", lambda h: 1)),
        ])

    def api(self) -> Windows:
        return Windows(kernel32=self.kernel32, avrt=self.avrt)

    def named(self, name: str) -> list[tuple[Any, ...]]:
        return [args for called, args in self.calls if called == name]


class FakeLibSystem:
    """libSystem's QoS calls on one thread: its class, and every class set."""

    def __init__(self, *, refuse: bool = False, qos: int = 0x15) -> None:  # QOS_CLASS_DEFAULT
        self.qos, self.set_to = qos, list[int]()

        def set_qos(qos: int, relative: int) -> int:
            assert relative == 0
            if refuse:
                return errno.EPERM
            self.qos = qos
            self.set_to.append(qos)
            return 0

        self.lib = FakeLibrary([
            CFunction("qos_class_self", ctypes.c_uint, [], lambda: self.qos),
            CFunction("pthread_set_qos_class_self_np", ctypes.c_int, [ctypes.c_uint, ctypes.c_int], set_qos),
        ])


def test_windows_puts_the_process_above_normal() -> None:
    fake = FakeWindows()
    raise_process(api=fake.api())
    assert fake.named("SetPriorityClass") == [(PROCESS, ABOVE_NORMAL_PRIORITY_CLASS)]


def test_windows_puts_the_audio_thread_in_the_pro_audio_task_for_as_long_as_it_runs() -> None:
    fake = FakeWindows()
    with for_thread("audio", api=fake.api()):
        assert fake.named("AvSetMmThreadCharacteristicsW")[0][0] == MMCSS_TASK
        assert fake.named("AvRevertMmThreadCharacteristics") == []
    assert fake.named("AvRevertMmThreadCharacteristics") == [(TASK,)]
    assert fake.named("SetThreadPriority") == []  # MMCSS sets the audio thread's priority


def test_windows_puts_the_decoding_thread_above_normal_then_back() -> None:
    fake = FakeWindows(thread_priority=0)
    with for_thread("decode", api=fake.api()):
        assert fake.thread_priority == THREAD_PRIORITY_ABOVE_NORMAL
    assert fake.named("SetThreadPriority") == [(THREAD, THREAD_PRIORITY_ABOVE_NORMAL), (THREAD, 0)]


def test_macos_runs_both_threads_user_interactive_then_puts_them_back() -> None:
    for kind in ("audio", "decode"):
        fake = FakeLibSystem(qos=0x15)
        with for_thread(kind, api=MacOS(libsystem=fake.lib)):
            assert fake.qos == QOS_CLASS_USER_INTERACTIVE
        assert fake.set_to == [QOS_CLASS_USER_INTERACTIVE, 0x15]


def test_macos_leaves_the_process_alone() -> None:
    fake = FakeLibSystem()
    raise_process(api=MacOS(libsystem=fake.lib))
    assert fake.set_to == []


def test_a_refused_call_is_swallowed_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    priority._said.clear()
    caplog.set_level(logging.DEBUG, logger="app.platform.priority")
    windows = FakeWindows(refuse=True)
    for _ in range(2):
        raise_process(api=windows.api())
        with for_thread("audio", api=windows.api()), for_thread("decode", api=windows.api()):
            pass
    mac = FakeLibSystem(refuse=True)
    with for_thread("decode", api=MacOS(libsystem=mac.lib)):
        pass
    assert windows.named("AvRevertMmThreadCharacteristics") == []  # no task was joined
    assert len(windows.named("SetThreadPriority")) == 2  # tried twice, nothing to restore
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 4 and all(r.levelno == logging.DEBUG for r in caplog.records), said
    assert any("SetPriorityClass" in s for s in said) and any("AvSetMm" in s for s in said)
    assert any("pthread_set_qos_class_self_np" in s for s in said)


def test_a_missing_library_is_swallowed() -> None:
    """avrt.dll absent (it is never loaded off Windows): the audio thread runs anyway."""
    ran = False
    with for_thread("audio", api=Windows(kernel32=FakeWindows().kernel32, avrt=None)):
        ran = True
    assert ran


def test_linux_goes_below_its_nice_value_only_as_far_as_allowed() -> None:
    nice = {1: 0}
    api = Linux(nice_limit=lambda: -3, get_nice=lambda tid: nice[tid],
                set_nice=lambda tid, value: nice.__setitem__(tid, value), thread_id=lambda: 1)
    with for_thread("decode", api=api):
        assert nice[1] == -3
    assert nice[1] == 0
    generous = Linux(nice_limit=lambda: -20, get_nice=lambda tid: nice[tid],
                     set_nice=lambda tid, value: nice.__setitem__(tid, value), thread_id=lambda: 1)
    with for_thread("audio", api=generous):
        assert nice[1] == -priority.LINUX_NICE_STEPS
    assert nice[1] == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's nice values")
def test_on_linux_with_no_nice_allowance_a_thread_keeps_its_nice_value() -> None:
    """The real calls, on a real thread: RLIMIT_NICE 0 (the usual) lets no user go lower,
    and the app asks for no more than it allows (even as root, which could)."""
    import resource

    if resource.getrlimit(resource.RLIMIT_NICE)[0] != 0:
        pytest.skip("this machine lets users raise priorities")
    seen: list[tuple[int, int, int]] = []

    def run() -> None:
        tid = threading.get_native_id()
        with contextlib.suppress(PermissionError):
            os.setpriority(os.PRIO_PROCESS, tid, 19 - 2)  # room below it, for root
        before = os.getpriority(os.PRIO_PROCESS, tid)
        with for_thread("decode"):
            during = os.getpriority(os.PRIO_PROCESS, tid)
        seen.append((before, during, os.getpriority(os.PRIO_PROCESS, tid)))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    [(before, during, after)] = seen
    assert during == after == before


def test_a_background_worker_goes_below_normal_on_each_os() -> None:
    windows = FakeWindows(thread_priority=0)
    lower_this_thread(api=windows.api())
    assert windows.named("SetThreadPriority") == [(THREAD, THREAD_PRIORITY_BELOW_NORMAL)]
    mac = FakeLibSystem(qos=0x15)
    lower_this_thread(api=MacOS(libsystem=mac.lib))
    assert mac.set_to == [QOS_CLASS_UTILITY]
    nice = {1: 0, 2: 17}
    linux = Linux(nice_limit=lambda: 0, get_nice=lambda tid: nice[tid],
                  set_nice=lambda tid, value: nice.__setitem__(tid, value), thread_id=lambda: 1)
    lower_this_thread(api=linux)
    assert nice[1] == priority.LINUX_NICE_STEPS
    lower_this_thread(api=Linux(get_nice=lambda tid: nice[tid], thread_id=lambda: 2,
                                set_nice=lambda tid, value: nice.__setitem__(tid, value)))
    assert nice[2] == 19  # no further than the weakest nice value


def test_a_refused_background_call_is_swallowed() -> None:
    lower_this_thread(api=FakeWindows(refuse=True).api())
    lower_this_thread(api=MacOS(libsystem=FakeLibSystem(refuse=True).lib))
