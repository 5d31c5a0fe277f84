"""The fake OpenAI server speaks the real wire protocol (checked with raw sockets)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import openai
import pytest

from devtools.fake_server import PROFILES, FakeServer, Fault, Profile, answer_tokens
from tests.patience import NEVER_S

KEY = "test-key"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer("instant", api_key=KEY) as srv:
        yield srv


def _port(server: FakeServer) -> int:
    return int(server.base_url.split(":")[2].split("/")[0])


def _raw_request(sock: socket.socket, body: dict[str, object], key: str = KEY) -> None:
    data = json.dumps(body).encode()
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        + f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n".encode()
        + f"Content-Length: {len(data)}\r\n\r\n".encode()
        + data
    )


def _read_until(sock: socket.socket, marker: bytes, timeout: float = 3.0) -> bytes:
    sock.settimeout(timeout)
    buf = b""
    while marker not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf


def _dechunk(body: bytes) -> list[bytes]:
    chunks = []
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        chunks.append(rest[:size])
        body = rest[size + 2 :]
    return chunks


def test_stream_wire_format_and_keepalive(server: FakeServer) -> None:
    question = "How do you debug a memory leak?"
    body = {
        "model": "gpt-4o-mini",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": question}],
    }
    with socket.create_connection(("127.0.0.1", _port(server))) as sock:
        for _ in range(2):  # two requests on one keep-alive connection
            _raw_request(sock, body)
            raw = _read_until(sock, b"\r\n0\r\n\r\n")
            head, _, payload = raw.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200")
            assert b"Transfer-Encoding: chunked" in head and b"text/event-stream" in head
            chunks = _dechunk(payload)
            assert chunks[-1] == b"data: [DONE]\n\n"  # its own chunk
            events = [json.loads(c[len(b"data: ") :]) for c in chunks[:-1]]
            assert all(c.startswith(b"data: ") and c.endswith(b"\n\n") for c in chunks)
            assert events[0]["choices"][0]["delta"]["role"] == "assistant"
            assert all(e["object"] == "chat.completion.chunk" for e in events)
            text = "".join(e["choices"][0]["delta"].get("content", "") for e in events[1:-2])
            assert text == "".join(answer_tokens(question, 20))
            assert text.startswith("Answer to: How do you debug a memory leak?")
            assert events[-2]["choices"][0]["finish_reason"] == "stop"
            assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] == 20
    assert server.connections_accepted == 1
    assert server.wait_for(lambda s: all(r.finished for r in s.chat_requests()), NEVER_S)
    records = server.chat_requests()
    assert len(records) == 2 and all(r.tokens_sent == 20 for r in records)
    assert "authorization" not in records[0].headers
    assert records[0].body["messages"][0]["content"] == question


def test_models_auth_and_errors(server: FakeServer) -> None:
    with httpx2.Client(base_url=server.base_url) as http:
        ok = http.get("/models", headers={"Authorization": f"Bearer {KEY}"})
        assert ok.status_code == 200
        assert [m["id"] for m in ok.json()["data"]] == ["gpt-4o-mini", "fake-model"]
        bad = http.get("/models", headers={"Authorization": "Bearer wrong"})
        assert bad.status_code == 401 and bad.json()["error"]["code"] == "invalid_api_key"
        server.faults.append(Fault("status", status=429))
        limited = http.post(
            "/chat/completions",
            headers={"Authorization": f"Bearer {KEY}"},
            json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "q"}]},
        )
        assert limited.status_code == 429
        assert limited.json()["error"]["code"] == "rate_limit_exceeded"
        missing = http.post(
            "/chat/completions",
            headers={"Authorization": f"Bearer {KEY}"},
            json={"model": "nope", "messages": []},
        )
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"


def test_openai_sdk_non_stream_and_max_tokens(server: FakeServer) -> None:
    with openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0) as sdk:
        reply = sdk.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Why Python?"}],
            max_tokens=5,
        )
    assert reply.choices[0].message.content == "Answer to: Why Python? and"
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage is not None and reply.usage.completion_tokens == 5


def test_cached_tokens_simulate_prompt_caching(server: FakeServer) -> None:
    long_prefix = " ".join(f"word{i}" for i in range(1200))
    with openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0) as sdk:

        def cached(question: str) -> int:
            reply = sdk.chat.completions.create(
                model="gpt-4o-mini",
                messages=[
                    {"role": "system", "content": long_prefix},
                    {"role": "user", "content": question},
                ],
            )
            assert reply.usage is not None and reply.usage.prompt_tokens_details is not None
            return reply.usage.prompt_tokens_details.cached_tokens or 0

        assert cached("first") == 0
        assert cached("second") == 1202  # role marker + 1200 words + user marker
        sdk.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "short"}]
        )
        assert cached("third") == 0  # prefix shared with the previous prompt < 1024


def test_fault_matching_a_question(server: FakeServer) -> None:
    server.faults.append(Fault("status", status=500, match="salary"))
    with openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0) as sdk:
        sdk.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Your strengths?"}]
        )
        with pytest.raises(openai.InternalServerError):
            sdk.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Your salary?"}]
            )
    assert not server.faults


def test_client_disconnect_is_recorded_as_cancelled() -> None:
    """The answer would stream for 5 s; the close is seen and the stream ends long before
    (the record, not the wall clock, says so: ended, cancelled, most tokens never sent)."""
    tokens = 100
    with FakeServer(Profile(tokens_per_s=20.0, answer_tokens=tokens), api_key=KEY) as srv:
        with socket.create_connection(("127.0.0.1", _port(srv))) as sock:
            _raw_request(sock, {"model": "gpt-4o-mini", "stream": True, "messages": []})
            _read_until(sock, b'"content": " to:"')
            closing = time.monotonic()  # before the close: the server may see it at once
        assert srv.wait_for(lambda s: s.chat_requests()[0].ended is not None, NEVER_S)
        record = srv.chat_requests()[0]
        assert record.cancelled and not record.finished
        assert record.ended is not None and record.ended >= closing
        assert record.tokens_sent < tokens // 2


# --- fault modes on the wire --------------------------------------------------------------


CHAT = {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "q"}]}


@pytest.mark.parametrize("how", ["profile", "fault"])
def test_hang_reads_the_request_and_never_answers(how: str) -> None:
    profile = Profile(hang=how == "profile")
    with FakeServer(profile, api_key=KEY) as srv:
        if how == "fault":
            srv.faults.append(Fault("hang"))
        with socket.create_connection(("127.0.0.1", _port(srv))) as sock:
            _raw_request(sock, CHAT)
            # Accepted and read: the server has taken the hang path...
            assert srv.wait_for(lambda s: bool(s.chat_requests())
                                and s.chat_requests()[0].fault == "hang", NEVER_S)
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)  # ...and sent nothing
        assert srv.wait_for(lambda s: s.chat_requests()[0].cancelled, NEVER_S)  # our close is seen
        record = srv.chat_requests()[0]
        assert record.status == 0 and record.tokens_sent == 0  # silent for the socket's whole life


def test_status_fault_sends_retry_after(server: FakeServer) -> None:
    server.faults.append(Fault("status", status=429, retry_after="7"))
    with socket.create_connection(("127.0.0.1", _port(server))) as sock:
        _raw_request(sock, CHAT)
        raw = _read_until(sock, b"}}")
    head = raw.partition(b"\r\n\r\n")[0]
    assert head.startswith(b"HTTP/1.1 429") and b"\r\nRetry-After: 7\r\n" in head


@pytest.mark.parametrize(
    ("kind", "bad"),
    [("garbage", b'data: {"id": "chatcmpl-x", "choices": [{"delta"'), ("binary", b"\x1f\x8b\x08\x00\xff")],
)
def test_garbage_and_binary_faults_follow_real_tokens(server: FakeServer, kind: str, bad: bytes) -> None:
    server.faults.append(Fault(kind, after_tokens=2))  # type: ignore[arg-type]
    with socket.create_connection(("127.0.0.1", _port(server))) as sock:
        _raw_request(sock, CHAT)
        raw = _read_until(sock, b"\r\n0\r\n\r\n")
    chunks = _dechunk(raw.partition(b"\r\n\r\n")[2])
    assert len(chunks) == 1 + 2 + 2  # role, two tokens, the bad bytes, [DONE]
    assert chunks[3].startswith(bad) and chunks[4] == b"data: [DONE]\n\n"
    with pytest.raises(ValueError):  # JSONDecodeError / UnicodeDecodeError are ValueErrors
        json.loads(chunks[3].decode("utf-8").removeprefix("data: "))


@pytest.mark.parametrize(
    ("style", "status", "says"),
    [
        ("param", 400, '"param": "stream_options"'),
        ("message", 400, "Unrecognized request argument supplied: stream_options"),
        ("detail", 422, '"loc": ["body", "stream_options"]'),
        ("opaque", 400, "Invalid request body"),
    ],
)
def test_rejected_fields_are_reported_in_each_style(style: str, status: int, says: str) -> None:
    profile = Profile(reject_params=("stream_options",), reject_style=style)  # type: ignore[arg-type]
    with FakeServer(profile, api_key=KEY) as srv, httpx2.Client(base_url=srv.base_url) as http:
        headers = {"Authorization": f"Bearer {KEY}"}
        reply = http.post("/chat/completions", headers=headers,
                          json={**CHAT, "stream_options": {"include_usage": True}})
        assert reply.status_code == status and says in reply.text
        if style == "opaque":
            assert "stream_options" not in reply.text
        assert http.post("/chat/completions", headers=headers, json=CHAT).status_code == 200


def test_idle_timeout_closes_keepalive_connections() -> None:
    """Closed by the server, and not before the idle time-out (a lower bound: a busy machine
    only makes it later; the wrong behaviour, never closing, ends at NEVER_S)."""
    idle = 0.2
    with FakeServer(Profile(idle_timeout=idle), api_key=KEY) as srv:
        start = time.monotonic()  # before the connect: the server's idle clock starts after it
        with socket.create_connection(("127.0.0.1", _port(srv))) as sock:
            sock.settimeout(NEVER_S)
            assert sock.recv(1) == b""  # closed by the server
            assert time.monotonic() - start > idle - 0.01  # (an event loop may fire a timer ~1 ms early)


def test_keep_alive_off_closes_every_connection() -> None:
    with (
        FakeServer(Profile(keep_alive=False), api_key=KEY) as srv,
        httpx2.Client(base_url=srv.base_url) as http,
    ):
        for _ in range(2):
            reply = http.post("/chat/completions", headers={"Authorization": f"Bearer {KEY}"},
                              json=CHAT)
            assert reply.status_code == 200 and reply.headers["connection"] == "close"
        assert srv.connections_accepted == 2


def test_profile_latency_is_applied() -> None:
    profile = Profile(connect_delay=0.1, queue_delay=0.05, ttft=0.1, tokens_per_s=100, answer_tokens=6)
    with FakeServer(profile, api_key=KEY) as srv, httpx2.Client(base_url=srv.base_url) as http:
        payload = {
            "model": "gpt-4o-mini",
            "stream": True,
            "messages": [{"role": "user", "content": "q"}],
        }
        times = []
        for _ in range(2):
            start = time.perf_counter()
            with http.stream(
                "POST", "/chat/completions", json=payload, headers={"Authorization": f"Bearer {KEY}"}
            ) as response:
                headers_at = time.perf_counter() - start
                response.read()
            times.append((headers_at, time.perf_counter() - start))
        connections = srv.connections_accepted
    # First request: connect + queue before headers; then ttft + 5 gaps of 10 ms.  Only
    # lower bounds: a busy machine adds to every delay, and the bench measures them.
    assert times[0][0] > 0.14 and times[0][1] > 0.28
    assert times[1][0] > 0.04  # the queue again, on the same connection,
    assert connections == 1  # the connect delay is paid once per connection
    assert set(PROFILES) >= {"instant", "relay", "local"}
    assert PROFILES["relay"].connect_delay == pytest.approx(0.230)


def test_cli_serves_in_a_separate_process() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "devtools.fake_server", "--profile", "relay", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        reply = httpx2.get(f"{url}/models", headers={"Authorization": f"Bearer {KEY}"})
        assert reply.status_code == 200
    finally:
        proc.terminate()
        assert proc.wait(NEVER_S) == 0
