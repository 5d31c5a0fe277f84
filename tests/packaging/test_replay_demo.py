"""packaging/replay_demo.py (CI's end-to-end run of a built bundle) and tests/platform_marks.py
(which tests the Windows and macOS jobs leave out).

The replay is run once for real through the source tree's CLI, standing in for the bundle's
executable: the same command line, the same stripped environment, the embedded model.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.llm.local_server import llama_cpp_available

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("replay_demo", ROOT / "packaging" / "replay_demo.py")
assert _spec is not None and _spec.loader is not None
replay_demo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(replay_demo)


def good_events() -> list[dict[str, Any]]:
    return [
        {"event": "session", "t": 0.0, "state": "listening"},
        {"event": "status", "t": 0.1, "stage": "llm",
         "message": "answers from SmolLM2-135M-Instruct at http://127.0.0.1:40123/v1"},
        {"event": "final", "t": 3.0, "turn": 1, "text": "Why are you interested in this role?",
         "audio_end": 2.9, "speaker": "interviewer"},
        {"event": "answer_done", "t": 4.0, "turn": 1, "request": 1, "text": "I like the team.",
         "error": None},
        {"event": "session", "t": 9.0, "state": "idle"},
    ]


def test_a_good_replay_has_no_problems() -> None:
    assert replay_demo.verdict(good_events()) == []


@pytest.mark.parametrize(("drop", "expected"), [
    ("final", "no final transcript"),
    ("answer_done", "no answer streamed"),
    ("status", "did not come from the embedded server"),
    ("session", "never returned to idle"),
])
def test_each_missing_piece_is_named(drop: str, expected: str) -> None:
    events = [e for e in good_events() if e["event"] != drop]
    assert any(expected in p for p in replay_demo.verdict(events))


def test_an_answer_from_a_remote_endpoint_or_a_failed_one_does_not_pass() -> None:
    events = good_events()
    events[1] = {**events[1], "message": "answers from gpt-4o-mini at https://api.openai.com/v1"}
    assert any("embedded server" in p for p in replay_demo.verdict(events))
    events = good_events()
    events[3] = {**events[3], "text": "", "error": "server: exited"}
    assert any("server: exited" in p for p in replay_demo.verdict(events))
    events = [*good_events(), {"event": "error", "t": 5.0, "stage": "llm", "message": "boom"}]
    assert replay_demo.verdict(events) == ["error (llm): boom"]


def test_a_wrong_transcript_fails() -> None:
    events = good_events()
    events[2] = {**events[2], "text": "Tell me about yourself."}
    assert any("Tell me about yourself." in p for p in replay_demo.verdict(events))


def test_the_bundle_executable_per_system(tmp_path: Path) -> None:
    assert replay_demo.bundle_executable(tmp_path, "win32").name == "interview-copilot-cli.exe"
    assert "Contents/MacOS" in replay_demo.bundle_executable(tmp_path, "darwin").as_posix()
    linux = replay_demo.bundle_executable(tmp_path, "linux")
    assert linux == tmp_path / "interview-copilot" / "interview-copilot"


def test_the_environment_carries_no_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://example.invalid/v1")
    env = replay_demo.clean_env(tmp_path)
    assert "OPENAI_API_KEY" not in env and "OPENAI_BASE_URL" not in env
    assert env["INTERVIEW_COPILOT_CONFIG_DIR"] == str(tmp_path)


@pytest.mark.slow
@pytest.mark.local_llm
@pytest.mark.skipif(not llama_cpp_available(), reason="the [local] extra (llama-cpp-python) is not installed")
@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for the bundle")
def test_the_replay_passes_through_the_real_cli(tmp_path: Path) -> None:
    exe = tmp_path / "interview-copilot"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} -m app \"$@\"\n")
    exe.chmod(0o755)
    proc = subprocess.run([sys.executable, str(ROOT / "packaging" / "replay_demo.py"), "--exe", str(exe),
                           "--speed", "4"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "answer streamed locally" in proc.stdout


# --- tests/platform_marks.py ----------------------------------------------------------------------


def collected(*args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "tests.platform_marks", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert proc.returncode in (0, 5), proc.stdout + proc.stderr  # 5: everything deselected
    return {line.split("::")[0] for line in proc.stdout.splitlines() if "::" in line}


def test_the_windows_and_macos_selection_leaves_out_what_needs_linux_services() -> None:
    modules = ["tests/session/test_listener.py", "tests/llm/test_relay.py", "tests/core/test_config.py",
               "tests/packaging/test_macos_minos.py", "tests/asr/test_tiny_en.py"]
    kept = collected(*modules, "-m", "not linux_services")
    assert kept == {"tests/core/test_config.py", "tests/packaging/test_macos_minos.py"}
    assert collected(*modules, "-m", "linux_services") == {
        "tests/session/test_listener.py", "tests/llm/test_relay.py", "tests/asr/test_tiny_en.py"}

