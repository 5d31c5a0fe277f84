"""A real nginx in front of the test server: the relay recipe streams, the defaults buffer.

The recipe in packaging/relay/nginx.conf is run twice on loopback — as shipped, and with
nginx's default ``proxy_buffering on`` plus the ``gzip on`` most site configs carry —
and doctor's buffering check must flag the second and pass the first.  (nginx 1.22 with
``proxy_buffering on`` alone still forwarded each chunk to a client that reads fast, and
``gzip`` alone is flushed per chunk when buffering is off; together they hold the whole
answer until it is complete, which is the trap users hit.)  Time to first token through
the good relay is compared with going direct; the bound is generous, the precise figure
is printed (``-s``) for reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import socket
import statistics
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.frontends.doctor import DoctorOptions, Target, analyse_arrivals, check_buffering, measure_arrivals
from app.llm.client import Done, LlmClient
from devtools.fake_server import FakeServer, Profile

RECIPE = Path(__file__).resolve().parent.parent / "packaging" / "relay" / "nginx.conf"
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


async def first_token_median(url: str, n: int = 9) -> float:
    """Median time to first token over ``n`` requests on one warm client."""
    client = LlmClient(url, KEY, MODEL, rewarm_idle_s=None, spare_connections=0)
    samples: list[float] = []
    try:
        await client.start()
        for i in range(n + 1):
            messages = [{"role": "user", "content": f"Question {i}?"}]
            async with contextlib.aclosing(client.stream_chat(messages, max_tokens=3, temperature=0.0)) as s:
                async for item in s:
                    if isinstance(item, Done) and i > 0 and item.timing.first_token is not None:
                        samples.append(item.timing.first_token)
    finally:
        await client.aclose()
    return statistics.median(samples)


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
        arrivals = asyncio.run(measure_arrivals(target(url), DoctorOptions()))
        assert analyse_arrivals(arrivals).bursts >= 20  # token by token, as the server wrote them
        relay = asyncio.run(first_token_median(url))
    direct = asyncio.run(first_token_median(upstream.base_url))
    print(f"first token median: direct {direct * 1000:.1f} ms, through nginx {relay * 1000:.1f} ms, "
          f"difference {(relay - direct) * 1000:+.1f} ms")
    assert abs(relay - direct) < 0.030
