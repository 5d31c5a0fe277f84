"""Every HTTP body but an answer's stream has a cap (issue 54, item 3, the HTTP part).

An endpoint whose ``/models``, Ollama's ``/api/tags`` or an error body never ends: the
client stops reading at :data:`app.llm.body_cap.MAX_BODY_BYTES` and says so, in the
warm-up, the models list, a failed answer, Ollama's probe and ``doctor``.  The endless
server counts what it could send, so a client that kept reading is seen without
measuring this machine's memory.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
import pytest

from app.llm import body_cap
from app.llm.body_cap import MAX_BODY_BYTES, BodyTooLarge
from app.llm.client import ClientTuning, LlmClient
from app.llm.errors import LlmError
from app.llm.ollama import find_ollama

CHUNK = b"[" + b'{"id": "m", "object": "model"},' * 2000
"""~64 KB of a models list that never closes."""


class Endless(ThreadingHTTPServer):
    """Answers every request with a JSON body that never ends (status ``status``), or one
    that declares ``declared`` bytes; counts the bytes it got out."""

    daemon_threads = True

    def __init__(self, status: int = 200, declared: int | None = None) -> None:
        self.sent = 0
        self.status, self.declared = status, declared
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                self.send_response(server.status)
                self.send_header("Content-Type", "application/json")
                if server.declared is not None:
                    self.send_header("Content-Length", str(server.declared))
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    while server.sent < 64 * MAX_BODY_BYTES:  # a bound for the test, not the client
                        if server.declared is not None:
                            self.wfile.write(CHUNK)
                        else:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK))
                        server.sent += len(CHUNK)
                except OSError:
                    return  # the client stopped reading and closed: as it should

            do_GET = do_POST = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


@pytest.fixture(params=[None, 10 * MAX_BODY_BYTES], ids=["never ends", "declares 80 MiB"])
def endless(request: pytest.FixtureRequest) -> Iterator[Endless]:
    yield from _serve(Endless(declared=request.param))


@pytest.fixture
def endless_error() -> Iterator[Endless]:
    yield from _serve(Endless(status=500))


def _serve(server: Endless) -> Iterator[Endless]:
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _stopped_reading(server: Endless) -> None:
    assert server.sent < 64 * MAX_BODY_BYTES, "the client read the endless body to the test's bound"


async def test_an_endless_models_list_is_refused(endless: Endless) -> None:
    client = LlmClient(endless.url, "sk-x", "m", ClientTuning(spare_connections=0, timeout=60))
    try:
        with pytest.raises(LlmError) as info:
            await client.list_models()
        assert isinstance(info.value, BodyTooLarge) and "8 MiB" in info.value.message
        with pytest.raises(LlmError) as warm:
            await client.start()  # the warm-up reads /models too
        assert isinstance(warm.value, BodyTooLarge)
    finally:
        await client.aclose()
    _stopped_reading(endless)


async def test_an_endless_error_body_is_refused(endless_error: Endless) -> None:
    tuning = ClientTuning(spare_connections=0, timeout=60, rewarm=False)
    client = LlmClient(endless_error.url, "sk-x", "m", tuning)
    try:
        with pytest.raises(LlmError) as info:
            async for _ in client.stream_chat([{"role": "user", "content": "hi"}], max_tokens=4,
                                              temperature=0.0, extra_requests=0):
                pass
        assert isinstance(info.value, BodyTooLarge)
    finally:
        await client.aclose()
    _stopped_reading(endless_error)


def test_ollama_tags_that_never_end_are_not_ollama(endless: Endless) -> None:
    root = endless.url.removesuffix("/v1")
    assert find_ollama(timeout=60, environ={"OLLAMA_HOST": root}) is None
    _stopped_reading(endless)


def test_doctor_says_what_is_wrong_with_an_endless_models_list(endless: Endless,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from app.frontends.cli import main

    assert main(["doctor", "--skip", "audio,asr", "--no-local", "--base-url", endless.url]) == 1
    out = capsys.readouterr().out
    assert "more than 8 MiB" in out, out
    _stopped_reading(endless)


def test_an_answers_event_stream_is_left_to_its_own_bounds() -> None:
    """An answer may rightly be long: app.llm.limits bounds it per event and per answer."""
    request = httpx2.Request("POST", "https://api.example/v1/chat/completions")
    stream = httpx2.ByteStream(b"data: {}\n\n")
    answer = httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=stream,
                             request=request)
    body_cap.cap(answer)
    assert answer.stream is stream
    models = httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=stream,
                             request=httpx2.Request("GET", "https://api.example/v1/models"))
    body_cap.cap(models)
    assert models.stream is not stream
