"""No orphan server: the embedded llama.cpp server dies with the app (app/llm/child_guard.py).

On Linux for real: ``kill -9`` of a headless run that started the embedded model leaves no
server process; the macOS-style parent watch (polling) ends a child whose parent was killed;
every server is forked from the one long-lived spawner thread.  Windows' Job object is
checked against a fake kernel32 (the structure it is given, the flag, the handle).
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from app.llm import child_guard
from app.llm.local_server import llama_cpp_available
from tests.patience import NEVER_S

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "assets" / "demo.wav"
needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads /proc (Linux)")


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper has ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_until(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds  # a bound on waiting, not on speed: usually well under 1 s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text(encoding="ascii")
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def quiet_env(tmp: Path) -> dict[str, str]:
    ours = ("OPENAI_", "COPILOT_", "INTERVIEW_COPILOT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    env.update(HOME=str(tmp), XDG_CONFIG_HOME=str(tmp / "config"), XDG_DATA_HOME=str(tmp / "data"),
               PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    return env


@pytest.mark.slow
@pytest.mark.local_llm
@needs_proc
@pytest.mark.skipif(not llama_cpp_available(), reason="the embedded LLM (llama-cpp-python) is not installed")
def test_kill_9_of_a_headless_run_leaves_no_server(tmp_path: Path) -> None:
    app = subprocess.Popen([sys.executable, "-m", "app", "listen", "--headless", "--audio", str(DEMO)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=quiet_env(tmp_path))
    try:
        servers: list[int] = []

        def server_started() -> bool:
            assert app.poll() is None, "the run ended before its server was found"
            servers[:] = [p for p in children(app.pid) if "app.llm.bundle_server" in cmdline(p)]
            return bool(servers)

        wait_until(server_started, 120, "the headless run never started the embedded server")
        server = servers[0]
        assert "--model" in cmdline(server)
        os.kill(app.pid, signal.SIGKILL)
        app.wait(10)
        wait_until(lambda: not alive(server), 30, f"server {server} outlived the killed app")
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(10)


def _watching_child(how: str) -> str:
    """Python code for a process that watches its parent, says so, then waits forever."""
    return ("import os, sys, time\n"
            "from app.llm import child_guard as g\n"
            f"g.watch_parent(os.getppid()) if {how == 'prctl'!r} else "
            "__import__('threading').Thread(target=g._wait_for_exit, args=(os.getppid(), os._exit), "
            "daemon=True).start()\n"
            "print('watching', flush=True)\n"
            "time.sleep(300)\n")


@needs_proc
@pytest.mark.parametrize("how", ["prctl", "poll"])
def test_a_child_ends_when_its_parent_is_killed(how: str) -> None:
    """``prctl``: Linux's parent-death signal; ``poll``: the macOS watch's fallback (kqueue
    cannot run here), both around a middle process that is killed with SIGKILL."""
    middle_code = ("import subprocess, sys\n"
                   f"child = subprocess.Popen([sys.executable, '-c', {_watching_child(how)!r}], "
                   "stdout=subprocess.PIPE, text=True)\n"
                   "assert child.stdout.readline().strip() == 'watching'\n"
                   "print(child.pid, flush=True)\n"
                   "import time; time.sleep(300)\n")
    middle = subprocess.Popen([sys.executable, "-c", middle_code], stdout=subprocess.PIPE, text=True,
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert middle.stdout is not None
        grandchild = int(middle.stdout.readline())
        assert alive(grandchild)
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait(10)
        wait_until(lambda: not alive(grandchild), 30, f"{how}: the child outlived its killed parent")
    finally:
        if middle.poll() is None:
            middle.kill()
            middle.wait(10)


def test_no_parent_named_means_no_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(child_guard.PARENT_ENV, raising=False)
    assert child_guard.watch_parent() == ""


@pytest.mark.skipif(sys.platform == "win32", reason="Windows ties the child with a job object instead")
def test_every_child_is_forked_by_the_one_long_lived_spawner_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linux sends the parent-death signal when the *thread* that forked exits: a server asked
    for from a short-lived thread must still be forked by the spawner, which never exits."""
    forked_on: list[threading.Thread] = []
    real_popen = subprocess.Popen

    def recording_popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        forked_on.append(threading.current_thread())
        assert kwargs["env"][child_guard.PARENT_ENV] == str(os.getpid())
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(child_guard.subprocess, "Popen", recording_popen)
    procs: list[subprocess.Popen[bytes]] = []

    def ask() -> None:
        procs.append(child_guard.spawn([sys.executable, "-c", "pass"]))

    for _ in range(2):
        asker = threading.Thread(target=ask)
        asker.start()
        asker.join()
    for proc in procs:
        assert proc.wait(30) == 0
    assert len(forked_on) == 2 and forked_on[0] is forked_on[1]
    assert forked_on[0].name == "server-spawner" and forked_on[0].is_alive()


def test_a_spawn_failure_reaches_the_caller() -> None:
    with pytest.raises(FileNotFoundError):
        child_guard.spawn(["/nonexistent/interview-copilot-server"])


class _Credential(str):
    """A key that says when the last reference to it went."""

    freed = threading.Event()

    def __del__(self) -> None:
        _Credential.freed.set()


def test_once_the_child_started_the_app_keeps_no_copy_of_its_environment() -> None:
    """The run's credential goes to the child in its environment; the parent's copies of
    that environment (the spawner thread's included) go once the child started."""
    _Credential.freed.clear()
    key = _Credential("the-runs-credential-" + os.urandom(8).hex())
    proc = child_guard.spawn([sys.executable, "-c", "pass"], env={**os.environ, "SERVER_KEY": key})
    proc.wait(NEVER_S)
    del key
    gc.collect()
    assert _Credential.freed.is_set(), "the parent still holds the environment it gave the child"


# --- Windows: a Job object that kills on close, against a fake kernel32 ------------------------------


class FakeKernel32:
    def __init__(self, *, fail: str = "") -> None:
        self.fail = fail
        self.limits: child_guard.ExtendedLimits | None = None
        self.size = 0
        self.kind = 0
        self.assigned: list[tuple[object, object]] = []

    def CreateJobObjectW(self, attributes: object, name: object) -> int:
        assert attributes is None and name is None
        return 0 if self.fail == "create" else 0x1234

    def SetInformationJobObject(self, job: object, kind: int, info: Any, size: int) -> int:
        assert job == 0x1234
        self.kind, self.size = kind, size
        self.limits = ctypes.cast(info, ctypes.POINTER(child_guard.ExtendedLimits)).contents
        return 0 if self.fail == "set" else 1

    def AssignProcessToJobObject(self, job: object, process: object) -> int:
        self.assigned.append((job, process))
        return 0 if self.fail == "assign" else 1

    def GetLastError(self) -> int:
        return 5  # ERROR_ACCESS_DENIED


def test_the_job_kills_its_processes_when_the_app_closes_its_handle() -> None:
    kernel32 = FakeKernel32()
    job = child_guard.KillOnCloseJob(kernel32)
    assert kernel32.kind == 9  # JobObjectExtendedLimitInformation
    assert kernel32.limits is not None
    assert kernel32.limits.BasicLimitInformation.LimitFlags == 0x2000  # JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
    assert kernel32.size == ctypes.sizeof(child_guard.ExtendedLimits)
    if ctypes.sizeof(ctypes.c_void_p) == 8:
        assert kernel32.size == 144  # the Windows SDK's size on 64-bit
    job.assign(0xBEEF)
    assert kernel32.assigned == [(0x1234, 0xBEEF)]


@pytest.mark.parametrize("step", ["create", "set", "assign"])
def test_a_refused_job_step_is_an_oserror_with_the_windows_error(step: str) -> None:
    kernel32 = FakeKernel32(fail=step)
    with pytest.raises(OSError, match="error 5"):
        child_guard.KillOnCloseJob(kernel32).assign(0xBEEF)


class FakePopen:
    def __init__(self, cmd: list[str], **kwargs: Any) -> None:
        self.cmd, self.kwargs = cmd, kwargs
        self._handle = 77


@pytest.mark.parametrize("refused", [False, True])
def test_on_windows_every_server_goes_into_the_kill_on_close_job(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, refused: bool) -> None:
    kernel32 = FakeKernel32(fail="assign" if refused else "")
    monkeypatch.setattr(child_guard, "_job", child_guard.KillOnCloseJob(kernel32))
    monkeypatch.setattr(child_guard.subprocess, "Popen", FakePopen)
    monkeypatch.setattr(sys, "platform", "win32")
    proc: Any = child_guard.spawn(["server.exe", "--port", "1"], stdout=None)
    assert proc.cmd == ["server.exe", "--port", "1"]
    assert proc.kwargs["creationflags"] & child_guard.CREATE_NEW_PROCESS_GROUP
    assert "start_new_session" not in proc.kwargs  # meaningless on Windows
    assert proc.kwargs["env"][child_guard.PARENT_ENV] == str(os.getpid())
    assert kernel32.assigned == [(0x1234, 77)]
    # A job Windows refuses (nesting not allowed) leaves a server that a normal exit still stops.
    assert ("not tied to the app's life" in caplog.text) is refused
