"""This run's API key without the process list (issue 54, item 4): ``--api-key-file PATH``,
``--api-key -`` (standard input), and a warning, once, for a key on the command line."""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.frontends import key_flags
from app.frontends.cli import _parser
from app.frontends.doctor.command import _parser as doctor_parser
from app.frontends.key_flags import VISIBLE_WARNING, KeyFlagError, key_from_flags

KEY = "sk-from-a-file-0123456789"
ROOT = Path(__file__).resolve().parents[2]


def _args(api_key: str | None = None, api_key_file: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(api_key=api_key, api_key_file=api_key_file)


@pytest.fixture(autouse=True)
def _fresh_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_flags, "_warned", False)


def test_the_key_is_read_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text(f"  {KEY}\n# a comment line after it\n")
    path.chmod(0o600)
    warned: list[str] = []
    assert key_from_flags(_args(api_key_file=str(path)), warn=warned.append) == KEY
    assert warned == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_a_key_file_others_can_read_is_named(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text(KEY)
    path.chmod(0o644)
    warned: list[str] = []
    assert key_from_flags(_args(api_key_file=str(path)), warn=warned.append) == KEY
    assert len(warned) == 1 and "other users" in warned[0] and KEY not in warned[0]


def test_the_key_is_read_from_standard_input() -> None:
    assert key_from_flags(_args(api_key="-"), stdin=io.StringIO(f"{KEY}\n")) == KEY


@pytest.mark.parametrize(("args", "why"), [
    (_args(api_key="x", api_key_file="/dev/null"), "not both"),
    (_args(api_key_file="/nonexistent/key"), "cannot read"),
    (_args(api_key_file=os.devnull), "holds no API key"),
])
def test_a_key_that_cannot_be_read_as_asked_is_a_clear_error(args: argparse.Namespace, why: str) -> None:
    with pytest.raises(KeyFlagError, match=why):
        key_from_flags(args)


def test_an_endless_input_is_not_read_into_memory() -> None:
    with pytest.raises(KeyFlagError, match="more than"):
        key_from_flags(_args(api_key="-"), stdin=io.StringIO("k" * 10_000_000))


def test_a_key_on_the_command_line_warns_once() -> None:
    warned: list[str] = []
    assert key_from_flags(_args(api_key=KEY), warn=warned.append) == KEY
    assert key_from_flags(_args(api_key=KEY), warn=warned.append) == KEY
    assert warned == [VISIBLE_WARNING] and KEY not in VISIBLE_WARNING
    assert key_from_flags(_args(), warn=warned.append) is None


def test_every_command_that_takes_a_key_offers_the_file_and_stdin() -> None:
    for argv in (["listen", "--api-key-file", "k"], ["--api-key-file", "k"], ["listen", "--api-key", "-"]):
        args = _parser().parse_args(argv)
        assert (args.api_key_file, args.api_key) in (("k", None), (None, "-"))
    assert doctor_parser().parse_args(["--api-key-file", "k"]).api_key_file == "k"


def test_the_app_warns_about_a_visible_key_and_not_about_a_file(tmp_path: Path) -> None:
    """The whole CLI, to a dead endpoint: the warning is on stderr once, never the key."""
    path = tmp_path / "key"
    path.write_text(KEY)
    path.chmod(0o600)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(tmp_path),
           "XDG_DATA_HOME": str(tmp_path)}
    base = [sys.executable, "-m", "app", "doctor", "--skip", "audio,asr", "--no-local", "--timeout", "1",
            "--base-url", "http://127.0.0.1:9/v1"]
    visible = subprocess.run([*base, "--api-key", KEY], capture_output=True, text=True, env=env, timeout=120)
    assert visible.stderr.count("--api-key puts the key on the command line") == 1
    assert KEY not in visible.stdout + visible.stderr
    hidden = subprocess.run([*base, "--api-key-file", str(path)], capture_output=True, text=True, env=env,
                            timeout=120)
    assert "command line" not in hidden.stderr and KEY not in hidden.stdout + hidden.stderr
    typed = subprocess.run([*base, "--api-key", "-"], input=f"{KEY}\n", capture_output=True, text=True,
                           env=env, timeout=120)
    assert "command line" not in typed.stderr and KEY not in typed.stdout + typed.stderr
