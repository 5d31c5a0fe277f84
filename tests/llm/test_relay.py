"""A real nginx in front of the test server: the relay recipe streams, the defaults buffer.

The recipe in packaging/relay/nginx.conf is run twice on loopback — as shipped, and with
nginx's default ``proxy_buffering on`` plus the ``gzip on`` most site configs carry —
and doctor's buffering check must flag the second and pass the first.  (nginx 1.22 with
``proxy_buffering on`` alone still forwarded each chunk to a client that reads fast, and
``gzip`` alone is flushed per chunk when buffering is off; together they hold the whole
answer until it is complete, which is the trap users hit.)  That the good relay adds no
wait is shown without timing this machine: an upstream that writes each token only once
the client has received the one before (lockstep) streams through it to the end, which
it could not if the relay held any token back for a later one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from app.frontends.doctor import DoctorOptions, Target, check_buffering
from app.llm.client import ClientTuning, Delta, LlmClient
from devtools.fake_server import FakeServer, Profile
from tests.patience import NEVER_S

RECIPE = Path(__file__).resolve().parents[2] / "packaging" / "relay" / "nginx.conf"
KEY = "relay-test-key"
MODEL = "gpt-4o-mini"
PROFILE = Profile(queue_delay=0.01, ttft=0.04, tokens_per_s=100.0, answer_tokens=48)


def nginx_binary() -> str:
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)
    if found is None:
        pytest.fail("nginx is missing: tests/run.sh installs it (apt-get install nginx-light)")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def relay_config(upstream_port: int, port: int, tmp: Path, *, buffering: bool) -> str:
    """The shipped recipe with our ports, temp paths under ``tmp`` (non-root friendly)."""
    text = RECIPE.read_text()
    text, n_up = re.subn(r"server 127\.0\.0\.1:\d+;", f"server 127.0.0.1:{upstream_port};", text)
    text, n_listen = re.subn(r"listen 127\.0\.0\.1:\d+;", f"listen 127.0.0.1:{port};", text)
    assert n_up == 1 and n_listen == 1, "the recipe's upstream/listen lines changed"
    if buffering:
        text, n = re.subn(r"proxy_buffering off;", "proxy_buffering on;", text)
        text, m = re.subn(r"gzip off;", "gzip on; gzip_types text/event-stream application/json;", text)
        assert n == 1 and m == 1
    temp = "\n".join(f"    {kind}_temp_path {tmp / kind};" for kind in
                     ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    text = text.replace("http {", "http {\n" + temp, 1)
    if os.geteuid() == 0:  # workers would run as nobody and could not reach tmp (mode 700)
        text = "user root;\n" + text
    return text


@contextlib.contextmanager
def nginx(upstream_port: int, tmp: Path, *, buffering: bool) -> Iterator[str]:
    binary = nginx_binary()
    tmp.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(relay_config(upstream_port, port, tmp, buffering=buffering))
    proc = subprocess.Popen(
        [binary, "-p", str(tmp), "-c", str(conf),
         "-g", f"daemon off; pid {tmp / 'nginx.pid'}; error_log {tmp / 'error.log'} warn;"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 5
        while True:
            if proc.poll() is not None:
                assert proc.stderr is not None
                pytest.fail(f"nginx exited: {proc.stderr.read()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            assert time.monotonic() < deadline, "nginx did not start listening"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.fixture
def upstream() -> Iterator[FakeServer]:
    with FakeServer(PROFILE, api_key=KEY) as server:
        yield server


def target(url: str) -> Target:
    return Target(url, KEY, MODEL)


def upstream_port(server: FakeServer) -> int:
    return int(server.base_url.rsplit(":", 1)[1].split("/")[0])


LOCKSTEP_TOKENS = 24


@dataclass
class Lockstep:
    """An OpenAI-compatible upstream that writes token ``n + 1`` only once the client says
    it has token ``n`` (:meth:`received`).  Through a relay that holds anything back the
    stream stalls; after ``patience`` seconds the rest is sent anyway and the token it
    waited for is kept in ``held_at``, so a buffering relay fails the test instead of
    hanging it."""

    patience: float = NEVER_S
    tokens: list[str] = field(default_factory=lambda: [f" w{i}" for i in range(LOCKSTEP_TOKENS)])
    held_at: int | None = None
    written: int = 0
    _seen: asyncio.Queue[int] = field(default_factory=asyncio.Queue)

    def received(self, count: int) -> None:
        self._seen.put_nowait(count)

    async def _wait_for(self, count: int) -> bool:
        try:
            async with asyncio.timeout(self.patience):
                while await self._seen.get() < count:
                    pass
        except TimeoutError:
            return False
        return True

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        await reader.readexactly(length)

        async def chunk(data: bytes) -> None:
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()

        def event(delta: dict[str, str], finish: str | None = None) -> bytes:
            body = {"id": "chatcmpl-lockstep", "object": "chat.completion.chunk", "created": 0,
                    "model": MODEL, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            return b"data: " + json.dumps(body).encode() + b"\n\n"

        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        for n, token in enumerate(self.tokens):
            if n and self.held_at is None and not await self._wait_for(n):
                self.held_at = n  # the client never got token n - 1: the relay holds it
            await chunk(event({"content": token}))
            self.written = n + 1
        await chunk(event({}, "stop"))
        await chunk(b"data: [DONE]\n\n")
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()


async def stream_in_lockstep(tmp: Path, *, buffering: bool, patience: float = NEVER_S
                             ) -> tuple[Lockstep, list[tuple[int, str]]]:
    """Stream one answer from a :class:`Lockstep` upstream through nginx with the product's
    client; returns the upstream and, per token received, how many the upstream had written."""
    upstream = Lockstep(patience)
    server = await asyncio.start_server(upstream.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    received: list[tuple[int, str]] = []
    try:
        with nginx(port, tmp, buffering=buffering) as url:
            client = LlmClient(url, KEY, MODEL,
                               ClientTuning(rewarm=False, spare_connections=0,
                                            first_token_timeout=3 * NEVER_S, stall_timeout=3 * NEVER_S))
            try:
                messages = [{"role": "user", "content": "Count for me."}]
                async with contextlib.aclosing(client.stream_chat(messages, max_tokens=64,
                                                                  temperature=0.0)) as stream:
                    async for item in stream:
                        if isinstance(item, Delta):
                            received.append((upstream.written, item.text))
                            upstream.received(len(received))
            finally:
                await client.aclose()
    finally:
        server.close()
        await server.wait_closed()
    return upstream, received


def test_buffering_relay_is_flagged(upstream: FakeServer, tmp_path: Path) -> None:
    with nginx(upstream_port(upstream), tmp_path / "buffered", buffering=True) as url:
        result = asyncio.run(check_buffering(target(url), DoctorOptions()))
    print(f"\nbuffered relay: {result.status}: {result.detail}")
    assert result.status == "warn"
    assert "proxy_buffering off" in result.fix
    assert result.data["buffered"] is True


def test_good_relay_streams_and_adds_no_latency(upstream: FakeServer, tmp_path: Path) -> None:
    with nginx(upstream_port(upstream), tmp_path / "good", buffering=False) as url:
        result = asyncio.run(check_buffering(target(url), DoctorOptions()))
    print(f"\ngood relay: {result.status}: {result.detail}")
    assert result.status == "pass", result.detail
    # Each token reaches the client before the upstream writes the next: the relay passes
    # every write on as it comes, holding nothing back for a later one.
    lockstep, received = asyncio.run(stream_in_lockstep(tmp_path / "lockstep", buffering=False))
    assert lockstep.held_at is None, f"the relay held token {lockstep.held_at - 1} back"
    assert [text for _, text in received] == lockstep.tokens
    assert [written for written, _ in received] == list(range(1, LOCKSTEP_TOKENS + 1))


def test_a_buffering_relay_holds_tokens_back_in_lockstep(tmp_path: Path) -> None:
    """The lockstep upstream tells the two relays apart: the buffered one keeps the first
    token until more is written, so the upstream waits for the client in vain (for 2 s
    here, not the suite's bound: waiting in vain is this relay's expected behaviour)."""
    lockstep, received = asyncio.run(stream_in_lockstep(tmp_path / "lockstep", buffering=True, patience=2.0))
    assert lockstep.held_at == 1
    assert [text for _, text in received] == lockstep.tokens  # all of it, once the upstream gave up
