"""Redaction wherever text leaves (issue 54, item 5): one writer for the terminal, the
banners, the status line and the logs, an escaping exception included.

No ``sk-…``, no control or OSC bytes, no path token of any length: the status line's
"answers from … at http://host/k/TOKEN/v1" included.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from app.core.clock import SessionClock
from app.core.config import Settings
from app.core.events import Event, EventBus, StatusEvent
from app.llm.endpoint import LlmEndpoint
from app.platform.redact import REDACTED, display_url, forget_secrets, redact, register_url, shown
from app.session.llm_choice import LlmChoice

KEY = "sk-live-abcdefgh12345678"
TITLE = "\x1b]0;pwned\x07"
ROOT = Path(__file__).resolve().parents[2]
SHORT_TOKENS = ["k3Y9", "a1b2c3d4", "Zq3xK9mPa2Lr7Tb", "r3l4yT0k3nQx9Zp2Lm7", "dG9rZW4rYmFzZTY0PQ=="]
"""4, 8, 15 (the length measured in the issue) and 19 characters, and a base64 one."""


@pytest.fixture(autouse=True)
def _no_secrets_left() -> None:
    forget_secrets()


@pytest.mark.parametrize("token", SHORT_TOKENS)
def test_a_path_token_of_any_length_is_masked(token: str) -> None:
    url = f"https://relay.example/k/{token}/v1"
    assert display_url(url) == f"https://relay.example/k/{REDACTED}/v1"
    register_url(url)
    assert token not in redact(f"relay said: no such key {token}")


@pytest.mark.parametrize("token", SHORT_TOKENS)
def test_the_start_up_status_line_names_no_path_token(token: str) -> None:
    """The line the issue measured in ``--events`` and the session file, as it is made."""
    bus, said = EventBus(), []

    def keep(event: Event) -> None:
        if isinstance(event, StatusEvent):
            said.append(event.message)

    bus.subscribe(keep)
    endpoint = LlmEndpoint(f"http://127.0.0.1:9/k/{token}/v1", "x-key", "gpt-4o-mini", local=False)
    choice = LlmChoice(Settings(), endpoint, bus, SessionClock(), answers=True,
                       on_model_failed=lambda _m: None)
    choice.make_client()
    assert said == [f"answers from gpt-4o-mini at http://127.0.0.1:9/k/{REDACTED}/v1"]


def _run(script: str, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(tmp_path),
           "XDG_DATA_HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, env=env,
                          timeout=120)


def _clean(out: bytes) -> None:
    assert KEY.encode() not in out and b"\x1b" not in out and b"\x07" not in out, out
    assert b"Traceback" not in out, out


def test_an_exception_escaping_a_command_is_one_redacted_line(tmp_path: Path) -> None:
    out = _run(f"""
        from app.frontends import cli
        def boom(argv):
            raise RuntimeError({f"the relay said {KEY}{TITLE} no"!r})
        cli._command = boom
        raise SystemExit(cli.main([]))
        """, tmp_path)
    assert out.returncode == 1
    _clean(out.stdout + out.stderr)
    assert b"error: unexpected RuntimeError: the relay said *** no" in out.stderr, out.stderr


def test_an_exception_after_the_terminal_is_restored_is_redacted_too(tmp_path: Path) -> None:
    """``main`` has returned and put the streams back; the program then fails, and a thread too."""
    out = _run(f"""
        import threading
        from app.frontends import cli
        try:
            cli.main(["transcribe", "--help"])
        except SystemExit:
            pass
        thread = threading.Thread(target=lambda: exec("raise ValueError({KEY + TITLE!r})"), name="worker")
        thread.start(); thread.join()
        raise RuntimeError({f"after main: {KEY}{TITLE}"!r})
        """, tmp_path)
    assert out.returncode == 1
    _clean(out.stdout + out.stderr)
    assert b"error in worker: unexpected ValueError: ***" in out.stderr, out.stderr
    assert b"error: unexpected RuntimeError: after main: ***" in out.stderr, out.stderr


def test_one_writer_for_every_output() -> None:
    """The terminal's filter is the banners' and the status line's: one function."""
    from app.frontends.console import safe

    assert safe is shown
    assert shown(f"{TITLE}key {KEY}\x9b31m.") == f"key {REDACTED}."


def test_a_banner_and_the_status_line_show_no_key_and_no_control(qtbot: QtBot) -> None:
    from app.ui.banner import BannerArea
    from app.ui.status import StatusPanel

    banners = BannerArea()
    qtbot.addWidget(banners)
    banner = banners.show_message("error", f"Start{TITLE}", f"RuntimeError: {KEY}{TITLE} at x\x1b[2J")
    assert KEY not in banner.text() and "\x1b" not in banner.text() and "\x07" not in banner.text()
    assert banner.text().startswith("Start — RuntimeError: *** at x")
    assert banners.show_message("error", f"Start{TITLE}", f"RuntimeError: {KEY}{TITLE} at x\x1b[2J") is banner
    status = StatusPanel()
    qtbot.addWidget(status)
    status.set_message(f"llm: {KEY}{TITLE}")
    assert status.message_label.text() == f"llm: {REDACTED}"
