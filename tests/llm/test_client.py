"""LlmClient against the fake server: the real openai SDK over real loopback sockets."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest

from app.llm.client import ClientTuning, Delta, Done, LlmClient, StreamItem, estimate_usage
from app.llm.errors import LlmError
from app.platform.redact import redact
from devtools.fake_server import FakeServer, Fault, Profile, answer_tokens
from tests.patience import NEVER_S

KEY = "test-key"
MODEL = "gpt-4o-mini"
SLOW_TOKENS = 200
"""The slow server's answer: 10 s at 20 tokens/s, so a stream read to the end is plain."""


def user(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You help in interviews."}, {"role": "user", "content": question}]


def expected(question: str, n: int = 20) -> str:
    return "".join(answer_tokens(question, n))


async def collect(
    client: LlmClient, question: str, **kwargs: Any
) -> tuple[list[Delta], Done]:
    deltas: list[Delta] = []
    done: Done | None = None
    kwargs.setdefault("max_tokens", 100)
    kwargs.setdefault("temperature", 0.0)
    async with contextlib.aclosing(client.stream_chat(user(question), **kwargs)) as stream:
        async for item in stream:
            if isinstance(item, Delta):
                deltas.append(item)
            else:
                done = item
    assert done is not None
    return deltas, done


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer("instant", api_key=KEY) as srv:
        yield srv


@pytest.fixture
async def client(server: FakeServer) -> AsyncIterator[LlmClient]:
    # The connection check's deadline is the patience bound: beside four busy processes the
    # loopback warm-up passed 1 s (1 of 60 runs), and no test here is about that deadline.
    c = LlmClient(server.base_url, KEY, MODEL, ClientTuning(timeout=5.0, connect_timeout=NEVER_S))
    await c.start()
    yield c
    await c.aclose()


async def wait_until(predicate: Any, timeout: float = NEVER_S) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.005)
    return True


# --- warming and reuse -------------------------------------------------------------


async def test_prewarm_opens_connections_before_first_chat(server: FakeServer) -> None:
    client = LlmClient(server.base_url, KEY, MODEL, ClientTuning(spare_connections=1))
    try:
        await client.start()
        warm = server.requests()
        assert [(r.method, r.path) for r in warm] == [("GET", "/v1/models")] * 2
        assert server.connections_accepted == 2  # one to use + one spare

        deltas, done = await collect(client, "What is a closure?")
        assert "".join(d.text for d in deltas) == expected("What is a closure?")
        assert deltas[0].timing is not None and deltas[0].timing.connect is None
        assert done.timing.connect is None
        assert server.connections_accepted == 2
        assert server.chat_requests()[0].connection_id in {r.connection_id for r in warm}
        assert await client.model_exists() and not await client.model_exists("nope")
        assert await client.list_models() == ["gpt-4o-mini", "fake-model"]
    finally:
        await client.aclose()


async def test_one_connection_for_a_session_of_streams(server: FakeServer) -> None:
    # The server sends "data: [DONE]" and the final 0-chunk in separate writes: the SDK
    # must drain the body after [DONE] or every stream would cost a new connection.
    client = LlmClient(server.base_url, KEY, MODEL, ClientTuning(spare_connections=0))
    try:
        await client.start()
        for i in range(6):
            deltas, done = await collect(client, f"Question number {i}?")
            assert "".join(d.text for d in deltas) == expected(f"Question number {i}?")
            assert done.finish_reason == "stop"
            assert done.timing.connect is None
            assert done.usage is not None and done.usage.completion_tokens == 20
        assert server.connections_accepted == 1
        assert server.wait_for(lambda s: all(r.finished for r in s.chat_requests()), NEVER_S)
        chats = server.chat_requests()
        assert len(chats) == 6 and len({r.connection_id for r in chats}) == 1
        assert not any(r.cancelled for r in chats)
    finally:
        await client.aclose()


async def test_deltas_are_yielded_as_they_arrive() -> None:
    profile = Profile(tokens_per_s=50.0, answer_tokens=10)
    with FakeServer(profile, api_key=KEY) as srv:
        client = LlmClient(srv.base_url, KEY, MODEL)
        try:
            await client.start()
            deltas, done = await collect(client, "Why?")
        finally:
            await client.aclose()
    gaps = sorted(b.t - a.t for a, b in itertools.pairwise(deltas))
    assert len(deltas) == 10
    assert gaps[len(gaps) // 2] > 0.01  # ~20 ms apart, not delivered in one burst at the end
    assert deltas[-1].t - deltas[0].t > 0.12
    assert done.timing.first_token is not None and done.timing.total is not None
    assert done.timing.total - done.timing.first_token > 0.15


async def test_client_keepalive_expiry_would_drop_idle_connection(server: FakeServer) -> None:
    # Baseline: httpx2 alone drops a connection idle longer than keepalive_expiry
    # (default 5 s; 0.5 s here to keep the test fast) and pays a new connect.
    limits = httpx2.Limits(keepalive_expiry=0.5)
    async with httpx2.AsyncClient(limits=limits) as http:
        headers = {"Authorization": f"Bearer {KEY}"}
        await http.get(f"{server.base_url}/models", headers=headers)
        await asyncio.sleep(0.7)
        await http.get(f"{server.base_url}/models", headers=headers)
    assert server.connections_accepted == 2

    # Ours re-warms before the expiry, so a request after an idle period longer than the
    # expiry is warm.  The expiry leaves 2 s past a re-warm period for a busy machine's stalls;
    # the chat goes just after a re-warm (with one in flight and no spare, the pool would
    # rightly open a second connection).
    server.reset_stats()
    expiry, period = 3.0, 1.0
    client = LlmClient(server.base_url, KEY, MODEL,
                       ClientTuning(keepalive_expiry=expiry, rewarm_idle_s=period, spare_connections=0))

    def just_rewarmed() -> bool:
        seen = server.requests()  # the client has also done with each (its connection is back)
        return (client.warm_count >= 3 and time.monotonic() - started > expiry + 0.5
                and client.warm_count == len(seen)
                and seen[-1].ended is not None and time.monotonic() - seen[-1].ended < period / 4)

    try:
        started = time.monotonic()
        await client.start()
        assert await wait_until(just_rewarmed)
        _, done = await collect(client, "After a pause?")
        assert done.timing.connect is None
        assert server.connections_accepted == 1
    finally:
        await client.aclose()


SERVER_IDLE_S = 3.0
"""The idle time-out of the re-warm test's server: three of the client's re-warm periods,
so only a loop stalled for two seconds (not a busy machine's hiccup) lets it expire."""
REWARM_S = 1.0
"""Long beside a re-warm's few milliseconds, so the chat, sent just after one, never meets the
next one in flight (the pool would then open a second connection: no spare here)."""


async def test_server_idle_timeout_is_beaten_by_rewarm() -> None:
    with FakeServer(Profile(idle_timeout=0.5), api_key=KEY) as srv:
        cold = LlmClient(srv.base_url, KEY, MODEL, ClientTuning(rewarm_idle_s=None, spare_connections=0))
        try:
            await cold.start()
            # The server closes the idle socket (after its 0.5 s, however late it runs).
            assert srv.wait_for(lambda s: s.connections_accepted == 1 and s.open_connections == 0,
                                NEVER_S)
            _, done = await collect(cold, "Without re-warm?")
            assert done.timing.connect is not None
        finally:
            await cold.aclose()

    def outlived(server: FakeServer, client: LlmClient) -> bool:
        """On the server's own record: its first connection was used again after being
        open for longer than the idle time-out, and a re-warm has just ended, on both sides
        (the next is a period away, so the chat sent now has the connection to itself)."""
        seen = server.requests()
        return (len(seen) >= 2 and seen[-1].started - (seen[0].ended or seen[0].started) > SERVER_IDLE_S
                and client.warm_count == len(seen)
                and seen[-1].ended is not None and time.monotonic() - seen[-1].ended < REWARM_S / 4)

    with FakeServer(Profile(idle_timeout=SERVER_IDLE_S), api_key=KEY) as srv:
        warm = LlmClient(srv.base_url, KEY, MODEL, ClientTuning(rewarm_idle_s=REWARM_S, spare_connections=0))
        try:
            await warm.start()
            assert await wait_until(lambda: outlived(srv, warm))  # the re-warms alone, no chat yet
            _, done = await collect(warm, "With re-warm?")
            assert done.timing.connect is None
        finally:
            await warm.aclose()
        seen = srv.requests()
    # Each request came before the server's idle deadline for the one before, on its clock:
    # the re-warms kept the one connection the chat then used.
    assert srv.connections_accepted == 1 and {r.connection_id for r in seen} == {seen[0].connection_id}
    gaps = [b.started - (a.ended or a.started) for a, b in itertools.pairwise(seen)]
    assert max(gaps) < SERVER_IDLE_S, gaps
    assert [(r.method, r.path) for r in seen][-1] == ("POST", "/v1/chat/completions")


async def test_head_trap_get_warming_keeps_the_connection(server: FakeServer) -> None:
    # Warming with HEAD: a server/proxy answering "Connection: close" leaves nothing warm.
    server.faults.append(Fault("head_close"))
    async with httpx2.AsyncClient() as http:
        await http.head(f"{server.base_url}/models")
        await http.get(f"{server.base_url}/models", headers={"Authorization": f"Bearer {KEY}"})
    assert server.connections_accepted == 2  # the HEAD's connection was lost

    server.reset_stats()
    server.faults.append(Fault("head_close"))  # armed, but GET warming never trips it
    client = LlmClient(server.base_url, KEY, MODEL, ClientTuning(spare_connections=0))
    try:
        await client.start()
        _, done = await collect(client, "Warm?")
        assert done.timing.connect is None
        assert server.connections_accepted == 1
        assert not server.requests(method="HEAD")
    finally:
        await client.aclose()


async def test_trace_timing_of_a_cold_request(server: FakeServer) -> None:
    client = LlmClient(server.base_url, KEY, MODEL)  # no start(): the first request is cold
    try:
        deltas, done = await collect(client, "Cold?")
        t = done.timing
        assert t.connect is not None and t.connect > 0
        assert t.tls is None  # plain http
        assert t.headers is not None and t.first_byte is not None and t.first_token is not None
        assert t.connect <= t.headers <= t.first_byte <= t.first_token <= (t.total or 0)
        assert t.http_version == "HTTP/1.1" and t.attempts == 1
        assert deltas[0].timing is not None and deltas[0].timing.connect == pytest.approx(t.connect)
        _, again = await collect(client, "Warm now?")
        assert again.timing.connect is None
    finally:
        await client.aclose()


# --- cancelling ----------------------------------------------------------------------


@pytest.fixture
def slow_server() -> Iterator[FakeServer]:
    with FakeServer(Profile(tokens_per_s=20.0, answer_tokens=SLOW_TOKENS), api_key=KEY) as srv:
        yield srv


async def cancel_after_first_token(client: LlmClient) -> float:
    """Stream a long answer, cancel it at its first token; returns when it was cancelled."""
    first = asyncio.Event()

    async def consume() -> None:
        async for item in client.stream_chat(user("Long one?"), max_tokens=500, temperature=0):
            if isinstance(item, Delta):
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), NEVER_S)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return cancelled_at


def background_tasks() -> list[str]:
    """The tasks running beside the test's own: where a re-warm or an idle refresh would be."""
    return sorted(t.get_name() for t in asyncio.all_tasks() if t is not asyncio.current_task())


async def test_without_rewarm_a_cancel_sends_nothing_more(slow_server: FakeServer) -> None:
    """The embedded server answers /models under its completions' lock: no warm-up traffic
    (after a cancel or when idle) may queue there behind an answer."""
    server = slow_server
    client = LlmClient(server.base_url, KEY, MODEL,
                       ClientTuning(rewarm=False, rewarm_idle_s=0.05, cancel_grace_s=0.0))
    try:
        await client.start()
        assert background_tasks() == []  # no idle refresh is scheduled
        warmed = len(server.requests())
        await cancel_after_first_token(client)
        # The cancel is complete: a re-warm would be a task by now, and none is.
        assert background_tasks() == []
        _, done = await collect(client, "Next one?")  # the next answer opens its own connection
        assert done.text and background_tasks() == []
        chats = [("POST", "/v1/chat/completions")] * 2
        assert [(r.method, r.path) for r in server.requests()[warmed:]] == chats
    finally:
        await client.aclose()


async def test_with_rewarm_the_same_cancel_schedules_a_warm_up(slow_server: FakeServer) -> None:
    """The check above can fail: the default client does schedule one, seen the same way."""
    client = LlmClient(slow_server.base_url, KEY, MODEL, ClientTuning(rewarm_idle_s=None, cancel_grace_s=0.0))
    try:
        await client.start()
        await cancel_after_first_token(client)
        assert "llm-rewarm" in background_tasks()  # (with the warm-up's own requests under way)
    finally:
        await client.aclose()


async def test_cancel_closes_the_stream_and_rewarms(slow_server: FakeServer) -> None:
    server = slow_server
    client = LlmClient(server.base_url, KEY, MODEL, ClientTuning(spare_connections=1, cancel_grace_s=0.02))
    try:
        await client.start()
        warmed = client.warm_count
        t_cancel = await cancel_after_first_token(client)
        assert server.wait_for(lambda s: s.chat_requests()[0].ended is not None, NEVER_S)
        record = server.chat_requests()[0]
        # Closed by our cancel, not read to the end (which would send all SLOW_TOKENS).
        assert record.cancelled and not record.finished
        assert record.ended is not None and record.ended >= t_cancel
        assert record.tokens_sent < SLOW_TOKENS // 2

        assert await wait_until(lambda: client.warm_count > warmed)
        accepted = server.connections_accepted
        assert accepted == 3  # the cancelled connection was replaced in the background
        server.set_profile(tokens_per_s=0.0, answer_tokens=20)
        _, done = await collect(client, "Next one?")
        assert done.timing.connect is None
        assert server.connections_accepted == accepted
    finally:
        await client.aclose()


def idle_connections(client: LlmClient) -> int:
    """Connections in the client's pool that a request sent now would take."""
    pool = client._sdk._client._transport._pool  # type: ignore[attr-defined]
    return sum(1 for conn in pool.connections if conn.is_idle())


async def test_a_rewarm_leaves_the_spares_free_while_it_connects(slow_server: FakeServer) -> None:
    """A re-warm opens the connection a cancel closed; the spares it must keep busy so that
    its requests land on new connections are free again once each request has one, not
    once the new ones have connected: a guess cancelled twice within one connection
    set-up (~230 ms to a provider) otherwise goes out cold (decision 0026)."""
    server = slow_server

    def build() -> LlmClient:
        return LlmClient(server.base_url, KEY, MODEL,
                         ClientTuning(spare_connections=2, cancel_grace_s=0.0, connect_timeout=3 * NEVER_S,
                                      rewarm_idle_s=None))

    client = build()
    try:
        await client.start()
        spares = {r.connection_id for r in server.requests()}
        server.set_profile(connect_delay=2 * NEVER_S)  # the re-warm's new connection never comes up
        await cancel_after_first_token(client)
        assert await wait_until(lambda: server.connections_accepted == 4)  # the re-warm is under way
        assert await wait_until(lambda: idle_connections(client) == 2)
        server.set_profile(tokens_per_s=0.0, answer_tokens=20)
        _, done = await collect(client, "The guess after the correction?")
        assert done.timing.connect is None
        assert server.chat_requests()[-1].connection_id in spares
    finally:
        await client.aclose()


async def test_a_pause_sends_its_requests_on_warm_connections(slow_server: FakeServer) -> None:
    """Within one connection set-up a pause can send three requests after the guess still
    streaming from before it: the guess of its first silent frame, the hangover pass's
    correction and the final.  Each cancels the one before (closing its connection), and
    the re-warm's connection is not up yet: the default pool holds all four warm."""
    server = slow_server
    client = LlmClient(server.base_url, KEY, MODEL,
                       ClientTuning(connect_timeout=3 * NEVER_S, rewarm_idle_s=None))
    try:
        await client.start()
        warm = {r.connection_id for r in server.requests()}
        server.set_profile(connect_delay=2 * NEVER_S)  # no new connection comes up in time
        for guess in range(3):
            await cancel_after_first_token(client)
            # the re-warm's requests have a connection each and freed the idle ones
            assert await wait_until(lambda g=guess: idle_connections(client) == len(warm) - 1 - g)
        server.set_profile(tokens_per_s=0.0, answer_tokens=20)
        _, done = await asyncio.wait_for(collect(client, "The final question?"), NEVER_S)
        assert done.timing.connect is None
        assert server.chat_requests()[-1].connection_id in warm
    finally:
        await client.aclose()


async def test_aclose_on_the_generator_closes_the_stream(slow_server: FakeServer) -> None:
    server = slow_server
    client = LlmClient(server.base_url, KEY, MODEL, ClientTuning(cancel_grace_s=0.0))
    try:
        await client.start()
        gen = client.stream_chat(user("Abandon me?"), max_tokens=500, temperature=0)
        item: StreamItem = await gen.__anext__()
        assert isinstance(item, Delta) and item.timing is not None
        t_close = time.monotonic()
        await gen.aclose()
        assert server.wait_for(lambda s: s.chat_requests()[0].ended is not None, NEVER_S)
        record = server.chat_requests()[0]
        assert record.cancelled and not record.finished  # closed by us, not read to the end
        assert record.ended is not None and record.ended >= t_close
        assert record.tokens_sent < SLOW_TOKENS // 2
        warmed = client.warm_count
        assert await wait_until(lambda: client.warm_count > warmed)
    finally:
        await client.aclose()


async def test_cancel_before_headers_closes_the_request() -> None:
    with FakeServer(Profile(queue_delay=1.0), api_key=KEY) as srv:
        client = LlmClient(srv.base_url, KEY, MODEL)
        try:
            await client.start()
            task = asyncio.create_task(collect(client, "Slow queue?"))
            assert await wait_until(lambda: len(srv.chat_requests()) == 1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The server notices when it tries to answer; what matters is no hang here
            # and a warm pool afterwards.
            assert await wait_until(lambda: client.warm_count >= 2)
        finally:
            await client.aclose()


async def test_a_cancel_while_the_losing_request_closes_still_cancels(server: FakeServer) -> None:
    """The race closes the stalled request once the hedge wins; a cancel of the caller that
    lands while it waits for that close must end the answer, not be swallowed with the
    loser's own cancel."""
    client = LlmClient(server.base_url, KEY, MODEL, ClientTuning(first_token_timeout=0.3, rewarm_idle_s=None))
    try:
        await client.start()
        server.faults.append(Fault("hang"))  # the first request never answers: a hedge goes out
        caller = asyncio.create_task(collect(client, "Hedge and cancel?"))

        def racer(name: str) -> asyncio.Task[Any] | None:
            return next((t for t in asyncio.all_tasks() if t.get_name() == name), None)

        assert await wait_until(lambda: racer("llm-hedge") is not None, timeout=30)
        loser = racer("llm-request")
        assert loser is not None and not loser.done()
        # Runs when the race has cancelled the loser, before the race resumes from awaiting it.
        loser.add_done_callback(lambda _: caller.cancel())
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert server.wait_for(lambda s: all(r.cancelled or r.finished for r in s.chat_requests()),
                               NEVER_S)
    finally:
        await client.aclose()


# --- failures --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [
        Fault("status", status=500),
        Fault("status", status=503),
        Fault("status", status=429),
        Fault("reset_before"),
        Fault("reset_after", after_tokens=0),
        Fault("end_early", after_tokens=0),
    ],
    ids=["500", "503", "429", "reset", "reset-after-role", "empty-stream"],
)
async def test_one_silent_reissue_before_first_token(
    client: LlmClient, server: FakeServer, fault: Fault
) -> None:
    server.faults.append(fault)
    deltas, done = await collect(client, "Retry me?")
    assert "".join(d.text for d in deltas) == expected("Retry me?")
    assert done.timing.attempts == 2
    assert len(server.chat_requests()) == 2


async def test_second_failure_before_first_token_is_raised(client: LlmClient, server: FakeServer) -> None:
    server.faults.append(Fault("status", status=500, times=5))
    with pytest.raises(LlmError) as info:
        await collect(client, "Broken?")
    assert info.value.kind == "server" and info.value.retryable
    assert "500" in info.value.message
    assert len(server.chat_requests()) == 2  # once re-issued, never more


@pytest.mark.parametrize("kind", ["reset_after", "truncate", "end_early"])
async def test_failure_after_first_token_is_stream_cut(
    client: LlmClient, server: FakeServer, kind: str
) -> None:
    server.faults.append(Fault(kind, after_tokens=3))  # type: ignore[arg-type]
    deltas: list[Delta] = []
    with pytest.raises(LlmError) as info:
        async for item in client.stream_chat(user("Cut me?"), max_tokens=100, temperature=0):
            assert isinstance(item, Delta)
            deltas.append(item)
    assert info.value.kind == "stream_cut"
    assert "".join(d.text for d in deltas) == "".join(answer_tokens("Cut me?", 3))
    assert "kept" in info.value.message
    assert len(server.chat_requests()) == 1  # no duplicate answer


async def test_stalled_stream_times_out_instead_of_hanging(server: FakeServer) -> None:
    """A stall keeps the socket open for ever: only the client's own read time-out ends
    it, as a "timeout" after the tokens that came (NEVER_S ends the wrong behaviour)."""
    client = LlmClient(server.base_url, KEY, MODEL, ClientTuning(timeout=0.4))
    try:
        await client.start()
        server.faults.append(Fault("stall", after_tokens=2))
        deltas: list[Delta] = []
        with pytest.raises(LlmError) as info:
            async with asyncio.timeout(NEVER_S):
                async for item in client.stream_chat(user("Stall?"), max_tokens=50, temperature=0):
                    assert isinstance(item, Delta)
                    deltas.append(item)
        assert info.value.kind == "timeout"
        assert len(deltas) == 2

        server.faults.append(Fault("stall", after_tokens=0))  # before the first token
        with pytest.raises(LlmError) as info:
            await collect(client, "Stall early?")
        assert info.value.kind == "timeout"
        assert len(server.chat_requests()) == 2  # a slow model is not re-asked
    finally:
        await client.aclose()


async def test_wrong_key_is_an_auth_error_without_the_key(server: FakeServer) -> None:
    secret = "sk-proj-SECRETSECRET0123456789abcdef"
    client = LlmClient(server.base_url, secret, MODEL)
    try:
        with pytest.raises(LlmError) as info:
            await client.start()
        err = info.value
        assert err.kind == "auth" and not err.retryable and err.status == 401
        assert "401" in err.message and "Settings" in err.message
        assert server.base_url in err.message
        # The fake server quotes the key back, like OpenAI does; it must not reach the UI.
        body = server.requests()[0]
        assert "authorization" not in body.headers
        for text in (str(err), repr(err), err.message):
            assert secret not in text and "SECRETSECRET" not in text
            assert "Bearer" not in text

        with pytest.raises(LlmError) as info:
            await collect(client, "Key?")
        assert info.value.kind == "auth" and secret not in str(info.value)
        assert len(server.chat_requests()) == 1  # auth errors are not re-issued
    finally:
        await client.aclose()


def test_redact_removes_keys_and_authorization() -> None:
    text = redact(
        "bad key sk-abc123XYZ789 and Authorization: Bearer sk-abc123XYZ789 "
        "relay token=tok_ABCDEF0123 custom=zz-custom-secret",
        "zz-custom-secret",
    )
    for leak in ("sk-abc123XYZ789", "tok_ABCDEF0123", "zz-custom-secret"):
        assert leak not in text
    assert LlmError("auth", "key sk-live-0123456789").message == "key ***"


async def test_unknown_model_is_not_found(server: FakeServer) -> None:
    client = LlmClient(server.base_url, KEY, "gpt-nope")
    try:
        await client.start()
        assert not await client.model_exists()
        with pytest.raises(LlmError) as info:
            await collect(client, "Model?")
        assert info.value.kind == "not_found" and "gpt-nope" in info.value.message
    finally:
        await client.aclose()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_connection_refused_is_a_network_error() -> None:
    client = LlmClient(f"http://127.0.0.1:{_closed_port()}/v1", KEY, MODEL)
    try:
        with pytest.raises(LlmError) as info:
            await client.start()
        assert info.value.kind == "network" and info.value.retryable
        assert "refused" in info.value.message and "Settings" in info.value.message
    finally:
        await client.aclose()


# --- request options -------------------------------------------------------------------


async def test_prompt_cache_key_and_cached_tokens(client: LlmClient, server: FakeServer) -> None:
    resume = " ".join(f"skill{i}" for i in range(1500))
    messages = [{"role": "system", "content": resume}]
    usages = []
    for question in ("First question?", "Second question?"):
        items = [
            item
            async for item in client.stream_chat(
                [*messages, {"role": "user", "content": question}],
                max_tokens=10,
                temperature=0.2,
                prompt_cache_key="session-1",
            )
        ]
        done = items[-1]
        assert isinstance(done, Done) and done.usage is not None
        usages.append(done.usage)
    assert usages[0].cached_tokens == 0
    assert usages[1].cached_tokens >= 1500
    assert usages[1].prompt_tokens > usages[1].cached_tokens
    body = server.chat_requests()[0].body
    assert body["prompt_cache_key"] == "session-1"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 10 and body["temperature"] == 0.2


@pytest.mark.parametrize("param", ["stream_options", "prompt_cache_key"])
async def test_rejected_optional_params_are_dropped(param: str) -> None:
    with FakeServer(Profile(reject_params=(param,)), api_key=KEY) as srv:
        client = LlmClient(srv.base_url, KEY, MODEL)
        try:
            await client.start()
            for _ in range(2):
                deltas, done = await collect(client, "Params?", prompt_cache_key="k")
                assert "".join(d.text for d in deltas) == expected("Params?")
            assert (done.usage is None) == (param == "stream_options")
            bodies = [r.body for r in srv.chat_requests()]
            assert [param in b for b in bodies] == [True, False, False]  # remembered
        finally:
            await client.aclose()


async def test_extra_body_is_sent(client: LlmClient, server: FakeServer) -> None:
    await collect(client, "Extra?", extra={"seed": 7, "user": "me"})
    body = server.chat_requests()[0].body
    assert body["seed"] == 7 and body["user"] == "me"


def test_estimate_usage() -> None:
    usage = estimate_usage(user("How are you?"), "Fine, thanks for asking.")
    assert usage.estimated and usage.prompt_tokens > 0 and usage.completion_tokens > 0


async def test_client_is_bound_to_its_loop(client: LlmClient) -> None:
    def other_loop() -> None:
        asyncio.run(client.list_models())

    with pytest.raises(RuntimeError, match="event loop"):
        await asyncio.to_thread(other_loop)
