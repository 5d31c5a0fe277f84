"""The command line from the installed Windows app: a windowed executable has no streams.

``interview-copilot.exe`` is a GUI program, so Python starts it with ``sys.stdout`` and
``sys.stderr`` None.  Its commands must still say what they found: on the console of the
terminal they were typed into (``AttachConsole(ATTACH_PARENT_PROCESS)``, faked here with a
kernel32 that has the real prototype and a file standing in for ``CONOUT$``), else nowhere,
with an exit code that tells.  Redirected to a file, their text is UTF-8 whatever the
locale (a cp1252 stream here).  The bundle ships the console twin ``interview-copilot-cli.exe``
(the spec, run with fakes) and the installer can put it on the user's PATH (the .iss).
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import logging
import os
import re
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import platformdirs
import pytest

from app.frontends import console, parent_console
from app.frontends.cli import main
from tests.fake_dll import CFunction, FakeLibrary

ROOT = Path(__file__).resolve().parents[2]
QUESTION = ROOT / "tests" / "data" / "rate-limiter.wav"
DEAD = ["--base-url", "http://127.0.0.1:9/v1", "--api-key", "x", "--model", "m"]
CHINESE = "进程和线程有什么区别？"


def fake_kernel32(*, has_parent_console: bool) -> FakeLibrary:
    """kernel32 with ``BOOL AttachConsole(DWORD dwProcessId)`` (the real prototype): the
    shell's console when we were typed into one, none from the Start menu."""
    def attach(process_id: int) -> int:
        assert process_id == 0xFFFFFFFF, "ATTACH_PARENT_PROCESS is (DWORD)-1"
        return int(has_parent_console)

    return FakeLibrary([CFunction("AttachConsole", ctypes.c_int32, [ctypes.c_uint32], attach)])


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user settings, key or endpoint of this machine; sessions saved under tmp_path
    (platformdirs reads no variable for that on Windows)."""
    for key in list(os.environ):
        if key.startswith(("OPENAI_", "COPILOT_")) or key == "INTERVIEW_COPILOT_API_KEY":
            monkeypatch.delenv(key)
    monkeypatch.setenv("INTERVIEW_COPILOT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda *_a, **_k: str(tmp_path / "data"))
    return tmp_path


def windowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a windowed executable starts with: no stdout, no stderr.  Called in the test's
    body (pytest puts its capture back between setup and call).  The root logger's handlers
    are this test's own (``main`` adds one on the stream it gets)."""
    monkeypatch.setattr(sys, "stdout", None)
    monkeypatch.setattr(sys, "stderr", None)
    monkeypatch.setattr(logging.root, "handlers", [])


def typed_into_a_terminal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The parent's console: AttachConsole succeeds and ``CONOUT$`` is this file."""
    screen = tmp_path / "console.txt"
    monkeypatch.setattr(parent_console, "_kernel32", lambda: fake_kernel32(has_parent_console=True))
    monkeypatch.setattr(parent_console, "CONSOLE_OUTPUT", str(screen))
    return screen


def started_from_the_start_menu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parent_console, "_kernel32", lambda: fake_kernel32(has_parent_console=False))
    monkeypatch.setattr(parent_console, "CONSOLE_OUTPUT", os.devnull + "-never-opened")


# --- attaching to the console of the terminal ---------------------------------------------------


def test_the_parent_console_is_opened_on_a_fresh_line(tmp_path: Path) -> None:
    screen = tmp_path / "console.txt"
    stream = parent_console.attach_parent_console(fake_kernel32(has_parent_console=True), str(screen))
    assert stream is not None
    with stream:
        stream.write(f"{CHINESE}\n")
    assert screen.read_text(encoding="utf-8") == f"\n{CHINESE}\n"  # the prompt came first


def test_with_no_parent_console_there_is_none(tmp_path: Path) -> None:
    screen = tmp_path / "console.txt"
    assert parent_console.attach_parent_console(fake_kernel32(has_parent_console=False), str(screen)) is None
    assert not screen.exists()


def test_a_console_that_cannot_be_opened_is_none(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "console.txt"
    assert parent_console.attach_parent_console(fake_kernel32(has_parent_console=True), str(missing)) is None


@pytest.mark.skipif(sys.platform == "win32", reason="the real kernel32 is there")
def test_off_windows_nothing_is_attached() -> None:
    assert parent_console.attach_parent_console() is None


# --- the README's commands from a windowed executable -------------------------------------------


@pytest.mark.usefixtures("home")
def test_the_self_test_reports_on_the_terminal_it_was_typed_into(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    windowed(monkeypatch)
    screen = typed_into_a_terminal(monkeypatch, tmp_path)
    assert main(["self-test", "--only", "vad"]) == 0
    shown = screen.read_text(encoding="utf-8")
    assert "self-test" in shown.splitlines()[1] and "PASS vad" in shown
    assert "self-test: all checks passed" in shown
    assert sys.stdout is None and sys.stderr is None  # as they were, once the command is over


@pytest.mark.usefixtures("home")
def test_the_device_list_reaches_the_terminal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    windowed(monkeypatch)
    screen = typed_into_a_terminal(monkeypatch, tmp_path)
    assert main(["--list-devices"]) == 0
    assert "Audio inputs" in screen.read_text(encoding="utf-8")


@pytest.mark.usefixtures("home")
def test_with_no_terminal_a_usage_error_still_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    windowed(monkeypatch)
    started_from_the_start_menu(monkeypatch)
    with pytest.raises(SystemExit) as exit_:
        main(["self-test", "--bogus"])
    assert exit_.value.code == 2
    assert main(["--list-devices"]) == 0


@pytest.mark.slow  # the whole pipeline, in process
def test_headless_with_no_terminal_says_what_happened_by_its_exit_code(
        monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """The question is heard, the dead endpoint answers nothing: exit 3, the session saved."""
    windowed(monkeypatch)
    started_from_the_start_menu(monkeypatch)
    assert main(["listen", "--headless", "--audio", str(QUESTION), "--speed", "2", *DEAD]) == 3
    saved = list((home / "data").rglob("session-*.jsonl"))
    assert len(saved) == 1 and '"final"' in saved[0].read_text(encoding="utf-8")


def test_headless_typed_into_a_terminal_shows_the_error_and_exits_2(
        monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    windowed(monkeypatch)
    screen = typed_into_a_terminal(monkeypatch, home)
    missing = home / "missing.wav"
    assert main(["listen", "--headless", "--audio", str(missing), *DEAD]) == 2
    shown = screen.read_text(encoding="utf-8")
    assert f"error: {missing}: audio file not found" in shown and "session saved: " in shown


@pytest.mark.skipif(sys.platform == "win32", reason="closes POSIX file descriptors")
def test_a_process_started_without_stdout_and_stderr_exits_with_its_code(home: Path) -> None:
    """The real thing on Linux: with descriptors 1 and 2 closed, Python starts with both
    streams None, as a windowed Windows executable does."""
    missing = home / "missing.wav"
    script = 'exec "$0" "$@" >&- 2>&-'
    env = {**os.environ, "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config")}
    run = subprocess.run(["sh", "-c", script, sys.executable, "-m", "app", "listen", "--headless",
                          "--audio", str(missing), *DEAD], cwd=ROOT, env=env, timeout=300)
    assert run.returncode == 2
    assert list((home / "data").rglob("session-*.jsonl"))  # saved, though nothing could be said


# --- UTF-8 whatever the locale ------------------------------------------------------------------


def cp1252_stream() -> io.TextIOWrapper:
    """What Python opens for a redirected stdout on a Western-European Windows."""
    return io.TextIOWrapper(io.BytesIO(), encoding="cp1252")


def written(stream: io.TextIOWrapper) -> str:
    """The bytes that reached the file, read as UTF-8 (a cp1252 byte would not decode)."""
    stream.flush()
    raw = stream.buffer
    assert isinstance(raw, io.BytesIO)
    return raw.getvalue().decode("utf-8")


def test_chinese_reaches_a_cp1252_stream_as_utf8(monkeypatch: pytest.MonkeyPatch) -> None:
    out, err = cp1252_stream(), cp1252_stream()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    with console.terminal_output():
        print(f"Q: {CHINESE}")
        print("[asr] 面试", file=sys.stderr)
    assert written(out) == f"Q: {CHINESE}\n"
    assert written(err) == "[asr] 面试\n"
    assert (out.encoding, out.errors) == ("cp1252", "strict")  # then as it was


def test_the_live_transcript_prints_chinese_to_a_cp1252_file(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.core.events import FinalEvent

    out = cp1252_stream()
    monkeypatch.setattr(sys, "stdout", out)
    with console.terminal_output():
        transcript = console.LiveTranscript(sys.stdout)
        transcript(FinalEvent(t=1.0, turn=1, text=CHINESE, audio_end=1.0))
    assert written(out) == f"Q: {CHINESE}\n"


@pytest.mark.usefixtures("home")
def test_a_chinese_file_name_in_an_error_reaches_a_redirected_stderr(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out, err = cp1252_stream(), cp1252_stream()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(logging.root, "handlers", [])
    missing = tmp_path / "面试-问题.wav"
    assert main(["listen", "--headless", "--audio", str(missing), *DEAD]) == 2
    assert f"error: {missing}: audio file not found" in written(err)


# --- what the bundle and the installer ship -------------------------------------------------------


class Built:
    """One PyInstaller target the spec made (EXE, COLLECT, BUNDLE): its arguments."""

    def __init__(self, kind: str, *args: Any, **kwargs: Any) -> None:
        self.kind, self.args, self.kwargs = kind, args, kwargs


@contextlib.contextmanager
def pyinstaller_fakes(monkeypatch: pytest.MonkeyPatch, platform: str) -> Iterator[dict[str, list[Built]]]:
    """PyInstaller's spec globals and helpers, recording instead of building; ``sys.platform``
    is ``platform`` while the spec runs."""
    built: dict[str, list[Built]] = {"EXE": [], "COLLECT": [], "BUNDLE": []}
    hooks = types.ModuleType("PyInstaller.utils.hooks")
    for name in ("collect_data_files", "collect_dynamic_libs", "collect_submodules", "copy_metadata"):
        setattr(hooks, name, lambda *a, **k: [])
    versioninfo = types.ModuleType("PyInstaller.utils.win32.versioninfo")
    for name in ("FixedFileInfo", "StringFileInfo", "StringStruct", "StringTable", "VarFileInfo",
                 "VarStruct", "VSVersionInfo"):
        setattr(versioninfo, name, lambda *a, **k: None)
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "PyInstaller.utils.hooks", hooks)
        m.setitem(sys.modules, "PyInstaller.utils.win32.versioninfo", versioninfo)
        m.setattr(sys, "platform", platform)
        yield built


def run_spec(monkeypatch: pytest.MonkeyPatch, platform: str, tmp_path: Path) -> dict[str, list[Built]]:
    spec = ROOT / "packaging" / "interview-copilot.spec"

    def recorder(kind: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> Built:
            target = Built(kind, *args, **kwargs)
            built.setdefault(kind, []).append(target)
            return target
        return record

    with pyinstaller_fakes(monkeypatch, platform) as built:
        analysis = types.SimpleNamespace(binaries=[], datas=[], scripts=[], pure=[])
        spec_globals = {"__name__": "__main__", "SPECPATH": str(spec.parent), "workpath": str(tmp_path),
                        "Analysis": lambda *a, **k: analysis, "PYZ": lambda *a, **k: object(),
                        "EXE": recorder("EXE"), "COLLECT": recorder("COLLECT"), "BUNDLE": recorder("BUNDLE")}
        exec(compile(spec.read_text(encoding="utf-8"), str(spec), "exec"), spec_globals)
    return built


def test_the_windows_bundle_has_a_console_twin_in_the_same_folder(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    built = run_spec(monkeypatch, "win32", tmp_path)
    exes = {e.kwargs["name"]: e for e in built["EXE"]}
    assert set(exes) == {"interview-copilot", "interview-copilot-cli"}
    assert exes["interview-copilot"].kwargs["console"] is False  # no console flashes with the window
    assert exes["interview-copilot-cli"].kwargs["console"] is True
    [collect] = built["COLLECT"]
    # one folder, one _internal: both executables go to the same COLLECT
    assert [a for a in collect.args if isinstance(a, Built)] == list(exes.values())
    assert collect.kwargs["name"] == "interview-copilot"


def test_the_macos_bundle_has_one_windowed_executable(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    built = run_spec(monkeypatch, "darwin", tmp_path)
    assert [(e.kwargs["name"], e.kwargs["console"]) for e in built["EXE"]] == [("interview-copilot", False)]
    assert len(built["COLLECT"]) == 1 and len(built["BUNDLE"]) == 1


def iss_section(name: str) -> str:
    text = (ROOT / "packaging" / "windows" / "interview-copilot.iss").read_text(encoding="utf-8")
    match = re.search(rf"^\[{name}\]\n(.*?)(?=^\[|\Z)", text, re.MULTILINE | re.DOTALL)
    assert match is not None, f"no [{name}] section"
    return match.group(1)


def test_the_installer_puts_the_command_line_on_the_users_path_and_takes_it_off() -> None:
    """A task, on unless unticked (the README's commands name interview-copilot-cli); the
    user's PATH, not the machine's (a per-user install has no administrator rights); each
    entry compared without case or trailing backslash, the others kept as they are."""
    [task] = [line for line in iss_section("Tasks").splitlines() if line.startswith('Name: "addtopath"')]
    assert "interview-copilot-cli" in task and "unchecked" not in task
    setup = iss_section("Setup")
    assert re.search(r"^ChangesEnvironment=yes$", setup, re.MULTILINE)  # new terminals see it
    assert re.search(r"^PrivilegesRequired=lowest$", setup, re.MULTILINE)
    code = iss_section("Code")
    assert "HKEY_LOCAL_MACHINE" not in code and "HKLM" not in code
    assert re.search(r"ssPostInstall\) and WizardIsTaskSelected\('addtopath'\)\s+then\s+AddToUserPath", code)
    assert re.search(r"CurUninstallStep = usPostUninstall then\s+RemoveFromUserPath", code)
    assert code.count("RegWriteExpandStringValue(HKEY_CURRENT_USER, 'Environment', 'Path'") == 2
    assert "StringSplit(Paths, [';'], stExcludeEmpty)" in code
    assert "CompareText(RemoveBackslashUnlessRoot(Trim(Entry)), RemoveBackslashUnlessRoot(Dir)) = 0" in code
