"""The command line under a hostile user: clear messages, exit codes that say what
happened, the session saved, never a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core.config import LlmConfig
from app.frontends.cli import main
from app.ui import platform_check
from tests.speech import synth

DEAD = ["--base-url", "http://127.0.0.1:9/v1", "--api-key", "x"]
PLAYS_ON_S = 300.0
"""Silence after the question in the interrupted runs: a run that ignored the signal would
replay it (at speed 1) for this long."""
EXIT_S = 60.0
"""How long an interrupted run may take to exit: far below PLAYS_ON_S (the wrong behaviour),
far above a busy machine's flush and save."""
READ_TIMEOUT_S = LlmConfig().timeout_s
"""The read time-out a hanging relay would cost per request if nothing cut it short."""


def env_for(home: Path) -> dict[str, str]:
    ours = ("OPENAI_", "COPILOT_", "INTERVIEW_COPILOT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"),
               PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    return env


def listen(args: list[str], home: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", "listen", "--headless", *args],
                          capture_output=True, text=True, timeout=timeout, env=env_for(home))


@pytest.mark.parametrize("speed", ["-1", "nan", "0", "fast"])
def test_a_bad_speed_is_a_usage_error(speed: str, tmp_path: Path) -> None:
    out = listen(["--audio", str(synth("Hello.")), f"--speed={speed}"], tmp_path)
    assert out.returncode == 2 and "replay speed" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("channels", ["1", "1,1", "0,1", "left,right"])
def test_bad_audio_channels_are_a_usage_error(channels: str, tmp_path: Path) -> None:
    out = listen(["--audio", str(synth("Hello.")), f"--audio-channels={channels}"], tmp_path)
    assert out.returncode == 2 and "two channels" in out.stderr and "Traceback" not in out.stderr


def test_a_channel_the_recording_lacks_is_said(tmp_path: Path) -> None:
    out = listen(["--audio", str(synth("Hello.")), "--audio-channels=1,2"], tmp_path)
    assert out.returncode == 2 and "channel" in out.stderr and "Traceback" not in out.stderr


def test_events_in_a_missing_folder(tmp_path: Path) -> None:
    target = tmp_path / "nope" / "events.jsonl"
    out = listen(["--audio", str(synth("Hello.")), "--events", str(target), *DEAD], tmp_path)
    assert out.returncode == 2 and str(target) in out.stderr and "Traceback" not in out.stderr


def test_a_data_folder_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a folder")
    out = listen(["--audio", str(synth("Hello.")), *DEAD], tmp_path)
    assert out.returncode == 2 and "cannot save the session" in out.stderr and "Traceback" not in out.stderr


def _ctrl_c_as_in_a_terminal() -> None:
    """In the child before it starts: Ctrl+C's default action.  A test run started in the
    background of a shell inherits SIGINT *ignored*, and Python then installs no
    KeyboardInterrupt at all: the app would never see the interrupt this test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_two_runs_never_share_an_events_file(tmp_path: Path) -> None:
    target = tmp_path / "events.jsonl"
    clip = synth("Why are you interested in this role?", tail_s=8.0)
    first = subprocess.Popen([sys.executable, "-m", "app", "listen", "--headless", "--audio", str(clip),
                              "--events", str(target), *DEAD], env=env_for(tmp_path),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             preexec_fn=_ctrl_c_as_in_a_terminal)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not target.exists() or target.stat().st_size == 0):
            time.sleep(0.05)
        second = listen(["--audio", str(clip), "--events", str(target), *DEAD], tmp_path)
        assert second.returncode == 2 and "another interview-copilot" in second.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(30)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupted_runs_exit_with_their_code_and_save_the_session(sig: int, code: int,
                                                                    tmp_path: Path) -> None:
    clip = synth("Why are you interested in this role?", tail_s=PLAYS_ON_S)
    child = subprocess.Popen([sys.executable, "-m", "app", "listen", "--headless", "--audio", str(clip),
                              *DEAD], env=env_for(tmp_path), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_as_in_a_terminal)
    assert child.stdout is not None
    for line in child.stdout:  # the question is on screen: now interrupt
        if line.startswith("Q: "):
            break
    child.send_signal(sig)
    _, err = child.communicate(timeout=EXIT_S)  # not the PLAYS_ON_S left of the replay
    assert child.returncode == code, err
    assert "session saved" in err and "Traceback" not in err
    saved = next((tmp_path / "data").rglob("session-*.jsonl")).read_text(encoding="utf-8")
    assert '"final"' in saved


def test_missing_qt_libraries_are_named_and_the_run_goes_on_headless(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in env_for(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.setattr(platform_check, "missing_packages", lambda: ["libxcb-icccm4", "libxcb-keysyms1"])
    code = main(["--audio", str(synth("Why are you interested in this role?")), "--speed", "2", *DEAD])
    err = capsys.readouterr().err
    assert "sudo apt install libxcb-icccm4 libxcb-keysyms1" in err and "headless" in err
    assert code == 3 and "session saved" in err  # ran headless; the dead endpoint answered nothing


def test_the_library_probe_names_the_packages() -> None:
    def load(name: str) -> object:
        if "icccm" in name or "keysyms" in name:
            raise OSError(name)
        return object()

    assert platform_check.missing_packages(load) == ["libxcb-icccm4", "libxcb-keysyms1"]


def test_a_hanging_endpoint_never_delays_the_captions(tmp_path: Path) -> None:
    """The question is on screen before the answer is given up (while the relay hangs), and
    the relay's request (and at most one hedge) is closed at the client's first-token
    deadline, not after a read time-out: the server's own record of it says so, so the
    app's start-up on a busy machine does not count."""
    from devtools.fake_server import FakeServer, Profile

    clip = synth("Why are you interested in this role?")
    # The test server is on loopback, where the hedge is off by default: it stands for a remote relay here.
    config = tmp_path / "remote.toml"
    config.write_text('[llm]\nhedge = "on"\n')
    with FakeServer(Profile(hang=True)) as server:
        child = subprocess.Popen([sys.executable, "-m", "app", "--config", str(config), "listen",
                                  "--headless", "--audio", str(clip), "--base-url", server.start(),
                                  "--api-key", "sk-x"],
                                 env=env_for(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        out, err = child.communicate(timeout=2 * READ_TIMEOUT_S)
        # (the server sees the closes on its own thread, maybe just after the exit)
        assert server.wait_for(lambda s: all(r.ended is not None for r in s.chat_requests()),
                               READ_TIMEOUT_S)
        chats = server.chat_requests()
    lines = out.splitlines()
    shown = next(i for i, line in enumerate(lines) if line.startswith("Q: "))
    given_up = next(i for i, line in enumerate(lines) if "not answering" in line)
    assert shown < given_up, out
    assert "Traceback" not in err and child.returncode == 3
    assert 1 <= len(chats) <= 2 and all(r.fault == "hang" and r.ended is not None for r in chats)
    assert max(r.ended or 0 for r in chats) - chats[0].started < READ_TIMEOUT_S  # the wrong behaviour's least


def test_credentials_in_the_base_url_reach_no_output_and_no_file(tmp_path: Path) -> None:
    from devtools.fake_server import FakeServer, Profile

    clip = synth("Why are you interested in this role?")
    events = tmp_path / "events.jsonl"
    with FakeServer(Profile(answer_tokens=8)) as server:
        url = server.start().replace("http://", "http://alice:pa55w0rd-XYZ@") + "?token=tok-SECRET-42"
        out = listen(["--audio", str(clip), "--base-url", url, "--api-key", "sk-live-abcdef123456",
                      "--events", str(events)], tmp_path)
    assert out.returncode in (0, 3), out.stderr  # whether the relay takes ?token= is its business
    written = [out.stdout, out.stderr, events.read_text(encoding="utf-8"),
               *(p.read_text(encoding="utf-8") for p in (tmp_path / "data").rglob("*.jsonl"))]
    for text in written:
        for secret in ("pa55w0rd-XYZ", "tok-SECRET-42", "sk-live-abcdef123456"):
            assert secret not in text
    assert '"final"' in written[2] and "Traceback" not in out.stderr
