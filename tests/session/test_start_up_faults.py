"""A start-up step that raises ends that start with one sentence and exit code 2, never a
traceback from ``session-start`` and a session left "starting" for ever (issue 43, item 11).

Through the real command line, in a child whose ``import sounddevice`` fails as it does on
a Debian without ``libportaudio2`` (a ``sounddevice.py`` earlier on PYTHONPATH raising
sounddevice's own OSError), and in process for the session's side of it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.asr.decoder import WhisperDecoder
from app.audio import portaudio_missing
from app.core.config import Settings
from app.core.events import ErrorEvent, Event
from app.session import start_up
from app.session.session import Session, SessionOptions
from tests.frontends.test_cli_faults import env_for
from tests.patience import NEVER_S

ROOT = Path(__file__).resolve().parents[2]
NO_PORTAUDIO = "raise OSError('PortAudio library not found')\n"
"""What sounddevice 0.5 raises when ctypes finds no PortAudio library (sounddevice.py)."""
EXIT_S = 60.0
"""How long the failing command may take to exit: a hang never does; a healthy failure
takes a second or two (most of it Python starting)."""


def run_without_portaudio(args: list[str], home: Path,
                          shim: str = NO_PORTAUDIO) -> subprocess.CompletedProcess[str]:
    """``python -m app ARGS`` with ``import sounddevice`` running ``shim`` instead."""
    folder = home / "shim"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sounddevice.py").write_text(shim, encoding="utf-8")
    env = env_for(home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), env.get("PYTHONPATH")) if p)
    try:
        return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True,
                              timeout=EXIT_S, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"still running after {EXIT_S:g} s (the start-up failure hangs): {exc.stderr!r}")


def lines_naming(text: str, words: str) -> list[str]:
    return [line for line in text.splitlines() if words in line]


def test_listening_without_the_portaudio_library_names_the_package_and_exits_2(tmp_path: Path) -> None:
    out = run_without_portaudio(["listen", "--headless", "--device", "X"], tmp_path)
    assert "Traceback" not in out.stdout + out.stderr, out.stderr
    assert out.returncode == 2, out.stderr
    said = lines_naming(out.stderr, "libportaudio2")
    assert len(said) == 1, out.stderr
    assert said[0].startswith("error: ") and "sudo apt-get install libportaudio2" in said[0]


def test_listing_devices_without_the_portaudio_library_names_the_package_and_exits_2(tmp_path: Path) -> None:
    out = run_without_portaudio(["--list-devices"], tmp_path)
    assert "Traceback" not in out.stdout + out.stderr, out.stderr
    assert out.returncode == 2 and out.stdout == ""
    assert len(lines_naming(out.stderr, "libportaudio2")) == 1, out.stderr


def test_anything_else_a_start_up_step_raises_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    """Not every failure is foreseen: one that is not an AudioError still ends the start."""
    out = run_without_portaudio(["listen", "--headless", "--device", "X"], tmp_path,
                                shim="raise RuntimeError('the sound system is haunted')\n")
    assert "Traceback" not in out.stdout + out.stderr, out.stderr
    assert out.returncode == 2, out.stderr
    said = lines_naming(out.stderr, "haunted")
    assert said == ["error: could not start: RuntimeError: the sound system is haunted"], out.stderr


def test_only_linux_is_told_to_install_portaudio_elsewhere_it_ships_with_the_app() -> None:
    linux = portaudio_missing(OSError("PortAudio library not found"), platform="linux")
    assert "sudo apt-get install libportaudio2" in linux and "PortAudio library not found" in linux
    for other in ("win32", "darwin"):
        text = portaudio_missing(OSError("PortAudio library not found"), platform=other)
        assert "reinstall" in text and "apt-get" not in text


def test_a_step_that_raises_fails_the_session_at_once_with_its_first_line(
        decoder: WhisperDecoder, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise ValueError("no such thing\n  (details a user need not read)")

    monkeypatch.setattr(start_up, "source_from_config", broken)
    session = Session(Settings(), options=SessionOptions(answers=False), decoder=decoder)
    errors: list[str] = []
    session.bus.subscribe(lambda e: errors.append(e.message) if isinstance(e, ErrorEvent) else None)
    seen: list[Event] = []
    session.bus.subscribe(seen.append)
    try:
        session.start()
        assert session.wait(NEVER_S) == "failed", [e.name for e in seen]
    finally:
        session.shutdown()
    assert session.failure == ("start", "could not start: ValueError: no such thing")
    assert errors == ["could not start: ValueError: no such thing"]
