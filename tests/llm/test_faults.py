"""Faults end in a clear LlmError, never a wait, a traceback or a leak (issue 11).

Every case runs the real openai SDK over real loopback sockets against the fake server's
fault modes, with short deadlines set through the client's constructor so the suite
stays fast; the timing assertions give the deadline plus a generous slack for a busy CI.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from app.llm.client import ClientTuning, Delta, Done, LlmClient
from app.llm.errors import LlmError
from app.llm.hedging import FirstTokenRace
from devtools.fake_server import FakeServer, Fault, Profile, answer_tokens
from tests.patience import NEVER_S

KEY = "test-key"
MODEL = "gpt-4o-mini"
CONNECT = 2.0
"""The product's own connection check; a loaded machine's loopback warm-up has taken 0.5 s."""
FIRST = 1.0
"""A stall is called after this: short enough that the hedge tests stay quick, twice what
a loopback answer took with the two cores four times oversubscribed."""
SLACK = 5.0
"""Added to a time-out in upper bounds: far below the 30 s the wrong behaviour would take
(the SDK's read time-out, a 30 s Retry-After), far above what a busy machine adds."""


def user(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You help in interviews."}, {"role": "user", "content": question}]


def fast_client(url: str, key: str | None = KEY, **kwargs: Any) -> LlmClient:
    kwargs.setdefault("connect_timeout", CONNECT)
    kwargs.setdefault("first_token_timeout", FIRST)
    kwargs.setdefault("stall_timeout", 0.5)
    kwargs.setdefault("rewarm_idle_s", None)
    return LlmClient(url, key, MODEL, ClientTuning(**kwargs))


async def run(client: LlmClient, question: str, **kwargs: Any) -> tuple[list[Delta], Done]:
    deltas: list[Delta] = []
    done: Done | None = None
    async with contextlib.aclosing(
        client.stream_chat(user(question), max_tokens=100, temperature=0.0, **kwargs)
    ) as stream:
        async for item in stream:
            if isinstance(item, Delta):
                deltas.append(item)
            else:
                done = item
    assert done is not None
    return deltas, done


async def fail(client: LlmClient, question: str, **kwargs: Any) -> tuple[LlmError, list[Delta], float]:
    deltas: list[Delta] = []
    start = time.monotonic()
    with pytest.raises(LlmError) as info:
        async for item in client.stream_chat(user(question), max_tokens=100, temperature=0.0, **kwargs):
            if isinstance(item, Delta):
                deltas.append(item)
    return info.value, deltas, time.monotonic() - start


async def eventually(predicate: Any, timeout: float = 30.0) -> bool:
    """Poll without blocking this loop: socket closes complete on it."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def text(deltas: list[Delta]) -> str:
    return "".join(d.text for d in deltas)


def no_traceback_words(message: str) -> None:
    for word in ("JSONDecodeError", "UnicodeDecodeError", "Unterminated", "codec", "Traceback"):
        assert word not in message, message


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer("instant", api_key=KEY) as srv:
        yield srv


# --- an endpoint that accepts the connection and never answers -----------------------


async def test_accept_and_hang_warmup_is_bounded_and_requests_fail_clearly() -> None:
    with FakeServer(Profile(hang=True), api_key=KEY) as srv:
        client = fast_client(srv.base_url)
        try:
            start = time.monotonic()
            with pytest.raises(LlmError) as info:
                await client.start()
            assert time.monotonic() - start < CONNECT + SLACK  # not the 30 s read time-out
            assert info.value.kind == "not_answering"
            assert client.last_warm_error is info.value

            err, deltas, elapsed = await fail(client, "Anyone there?")
            assert not deltas
            assert err.kind == "not_answering" and err.retryable and not err.partial
            assert err.message.startswith("The endpoint at 127.0.0.1:")
            assert "is not answering (no first token after " in err.message
            assert err.attempts == 2  # the request and one hedge, never more
            assert 2 * FIRST - 0.05 < elapsed < 2 * FIRST + SLACK
            chats = srv.chat_requests()
            assert len(chats) == 2 and chats[0].connection_id != chats[1].connection_id
            # Both requests were closed, not left hanging on the server.
            assert await eventually(lambda: all(r.cancelled for r in srv.chat_requests()))
        finally:
            await client.aclose()


async def test_warmup_hang_on_models_only_does_not_block_answers(server: FakeServer) -> None:
    server.faults.append(Fault("hang", endpoint="models", times=3))
    client = fast_client(server.base_url)
    try:
        start = time.monotonic()
        with pytest.raises(LlmError):
            await client.start()
        assert time.monotonic() - start < CONNECT + SLACK
        deltas, done = await run(client, "Still fine?")
        assert text(deltas) == "".join(answer_tokens("Still fine?", 20))
        assert done.timing.attempts == 1
    finally:
        await client.aclose()


# --- stalls before the first token: one hedge on a fresh connection ------------------


@pytest.mark.parametrize(
    "fault",
    [Fault("hang"), Fault("stall", after_tokens=0)],
    ids=["no-headers", "headers-then-silence"],
)
async def test_stall_before_first_token_hedge_wins(server: FakeServer, fault: Fault) -> None:
    client = fast_client(server.base_url)
    try:
        await client.start()
        server.faults.append(fault)
        start = time.monotonic()
        deltas, done = await run(client, "Hedge me?")
        elapsed = time.monotonic() - start
        assert text(deltas) == "".join(answer_tokens("Hedge me?", 20))
        assert FIRST - 0.05 < elapsed < FIRST + SLACK
        assert done.timing.attempts == 2
        assert deltas[0].timing is not None and deltas[0].timing.first_token is not None
        assert deltas[0].timing.first_token > FIRST - 0.05  # measured from the first send
        first, hedge = server.chat_requests()
        assert first.fault == fault.kind and hedge.fault is None
        warm_ids = {r.connection_id for r in server.requests("/models")}
        assert hedge.connection_id not in warm_ids | {first.connection_id}  # a fresh connection
        assert await eventually(lambda: server.chat_requests()[0].cancelled)  # loser closed
    finally:
        await client.aclose()


async def test_stall_before_first_token_twice_is_not_answering(server: FakeServer) -> None:
    client = fast_client(server.base_url)
    try:
        await client.start()
        server.faults.append(Fault("hang", times=2))
        err, deltas, elapsed = await fail(client, "Stalled twice?")
        assert not deltas and err.kind == "not_answering" and err.attempts == 2
        assert "fresh connection" in err.message and "first_token_timeout" in err.message
        assert 2 * FIRST - 0.05 < elapsed < 2 * FIRST + SLACK
        assert len(server.chat_requests()) == 2
        # The session goes on: the next question is answered.
        deltas, _ = await run(client, "And now?")
        assert text(deltas) == "".join(answer_tokens("And now?", 20))
    finally:
        await client.aclose()


async def test_no_hedge_when_extra_requests_is_zero(server: FakeServer) -> None:
    client = fast_client(server.base_url)
    try:
        server.faults.append(Fault("hang"))
        err, _, elapsed = await fail(client, "Speculative?", extra_requests=0)
        assert err.kind == "not_answering" and err.attempts == 1
        assert FIRST - 0.05 < elapsed < FIRST + SLACK
        assert len(server.chat_requests()) == 1
    finally:
        await client.aclose()


async def test_stall_after_first_token_keeps_the_text(server: FakeServer) -> None:
    client = fast_client(server.base_url, stall_timeout=0.3, timeout=30.0)
    try:
        server.faults.append(Fault("stall", after_tokens=2))
        err, deltas, elapsed = await fail(client, "Stall mid-way?")
        assert text(deltas) == "".join(answer_tokens("Stall mid-way?", 2))
        assert err.kind == "timeout" and err.partial and err.retryable
        assert "0.3 s" in err.message and "kept" in err.message
        assert elapsed < 0.3 + SLACK
        assert len(server.chat_requests()) == 1  # never re-sent once text is shown
    finally:
        await client.aclose()


# --- not an OpenAI stream ------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "shown"),
    [("garbage", "'data: {\"id\": \"chatcmpl-x\"" ), ("binary", "\\x1f\\x8b\\x08")],
)
async def test_garbage_before_first_token_is_a_clear_error(
    server: FakeServer, kind: str, shown: str
) -> None:
    """The verdict on garbage does not depend on timing (one attempt that reads it always
    fails, and it is never re-sent), but a hedge does: on a busy machine the garbage once
    came after FIRST, a hedge went out, its good answer won the race and nothing was
    raised.  So no hedge here (``first_token_timeout`` is the patience bound): this is
    the garbage's test, the hedge has its own."""
    client = fast_client(server.base_url, first_token_timeout=NEVER_S)
    try:
        server.faults.append(Fault(kind, after_tokens=0))  # type: ignore[arg-type]
        err, deltas, _ = await fail(client, "Garbage?")
        assert not deltas and err.kind == "bad_stream" and not err.retryable
        assert err.message.startswith(
            "The endpoint at 127.0.0.1:"
        ) and "sent something that is not an OpenAI-compatible stream (first bytes: " in err.message
        assert shown.removeprefix("'data: ") in err.message
        no_traceback_words(err.message)
        assert len(server.chat_requests()) == 1  # a broken relay is not asked twice
    finally:
        await client.aclose()


@pytest.mark.parametrize("kind", ["garbage", "binary"])
async def test_garbage_after_first_token_keeps_the_text(server: FakeServer, kind: str) -> None:
    client = fast_client(server.base_url, first_token_timeout=NEVER_S)  # no hedge: see above
    try:
        server.faults.append(Fault(kind, after_tokens=3))  # type: ignore[arg-type]
        err, deltas, _ = await fail(client, "Garbage later?")
        assert text(deltas) == "".join(answer_tokens("Garbage later?", 3))
        assert err.kind == "stream_cut" and err.partial
        assert "not an OpenAI-compatible stream (first bytes: " in err.message
        no_traceback_words(err.message)
    finally:
        await client.aclose()


async def test_garbage_with_a_secret_is_shown_redacted(server: FakeServer) -> None:
    client = fast_client(server.base_url)
    try:
        payload = b"data: Authorization: Bearer sk-live-LEAKED0123456789 <html>\n\n"
        server.faults.append(Fault("garbage", payload=payload))
        err, _, _ = await fail(client, "Leak?")
        assert err.kind == "bad_stream"
        assert "LEAKED" not in err.message and "sk-live" not in err.message
    finally:
        await client.aclose()


# --- 429 and Retry-After -------------------------------------------------------------


def _gap(server: FakeServer) -> float:
    first, second = server.chat_requests()
    return second.started - first.started


@pytest.mark.parametrize("header", ["1", "http-date"])
async def test_429_waits_for_retry_after_then_resends_once(server: FakeServer, header: str) -> None:
    # no hedge: on a busy machine the 429 itself may take longer than FIRST to arrive
    client = fast_client(server.base_url, first_token_timeout=NEVER_S)
    try:
        wait = 1.0
        value = "1"
        if header == "http-date":  # whole seconds: "now + 2 s" is 1-2 s away
            value = email.utils.formatdate(time.time() + 2, usegmt=True)
        server.faults.append(Fault("status", status=429, retry_after=value, message="Slow down."))
        deltas, done = await run(client, "Rate limited?")
        assert text(deltas) == "".join(answer_tokens("Rate limited?", 20))
        assert done.timing.attempts == 2 and len(server.chat_requests()) == 2
        assert wait - 0.05 < _gap(server) < 2.0 + SLACK
    finally:
        await client.aclose()


async def test_429_past_the_cap_is_not_resent(server: FakeServer) -> None:
    client = fast_client(server.base_url, rate_limit_max_wait=2.0)
    try:
        server.faults.append(Fault("status", status=429, retry_after="30", message="Slow down."))
        err, _, elapsed = await fail(client, "Long wait?")
        assert err.kind == "rate_limit" and err.status == 429 and err.retry_after == 30.0
        assert "wait 30 s" in err.message
        assert elapsed < SLACK and len(server.chat_requests()) == 1
    finally:
        await client.aclose()


async def test_429_twice_is_one_resend_then_an_error(server: FakeServer) -> None:
    client = fast_client(server.base_url)
    try:
        server.faults.append(Fault("status", status=429, retry_after="0.2", times=2))
        err, _, _ = await fail(client, "Still limited?")
        assert err.kind == "rate_limit" and err.retry_after == pytest.approx(0.2)
        assert len(server.chat_requests()) == 2
        assert _gap(server) > 0.15
    finally:
        await client.aclose()


async def test_429_without_header_uses_openai_message_hint(server: FakeServer,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float | None] = []
    decide = FirstTokenRace._resend_delay

    def recorded(self: FirstTokenRace, exc: BaseException) -> tuple[float | None, float | None]:
        wait, asked = decide(self, exc)
        waits.append(wait)
        return wait, asked

    monkeypatch.setattr(FirstTokenRace, "_resend_delay", recorded)
    client = fast_client(server.base_url)
    try:
        # The default 429 body says "Please try again in 20ms." (OpenAI's wording).
        server.faults.append(Fault("status", status=429))
        _, done = await run(client, "Hint?")
        assert done.timing.attempts == 2 and waits == [pytest.approx(0.02)]
    finally:
        await client.aclose()


# --- a relay that rejects an unknown field ---------------------------------------------


@pytest.mark.parametrize("style", ["param", "message", "detail", "opaque"])
@pytest.mark.parametrize("param", ["stream_options", "prompt_cache_key"])
async def test_rejected_field_is_dropped_and_remembered(style: str, param: str) -> None:
    profile = Profile(reject_params=(param,), reject_style=style)  # type: ignore[arg-type]
    with FakeServer(profile, api_key=KEY) as srv:
        client = fast_client(srv.base_url)
        try:
            for question in ("First?", "Second?"):
                deltas, done = await run(client, question, prompt_cache_key="session-1")
                assert text(deltas) == "".join(answer_tokens(question, 20))
                assert done.timing.attempts == 1  # a dropped field is not a re-send
            bodies = [r.body for r in srv.chat_requests()]
            assert [param in b for b in bodies] == [True, False, False]
        finally:
            await client.aclose()


async def test_a_400_about_something_else_is_not_retried(server: FakeServer) -> None:
    client = fast_client(server.base_url)
    try:
        server.faults.append(Fault("status", status=400, message="messages: too long"))
        err, _, _ = await fail(client, "Too long?", prompt_cache_key="k")
        assert err.kind == "bad_request" and "too long" in err.message
        assert len(server.chat_requests()) == 1
    finally:
        await client.aclose()


# --- hints and secrets -----------------------------------------------------------------


async def test_401_hint_names_only_key_sources_read_for_this_host(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    client = fast_client(server.base_url, "sk-wrong-0123456789abcdef")
    try:
        with pytest.raises(LlmError) as info:
            await client.start()
        message = info.value.message
        assert info.value.kind == "auth" and "Settings" in message and "keychain" in message
        assert "INTERVIEW_COPILOT_API_KEY" in message
        assert "OPENAI_API_KEY" not in message  # not read for 127.0.0.1
        assert "0123456789abcdef" not in message
    finally:
        await client.aclose()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    client = fast_client(server.base_url, "sk-wrong-0123456789abcdef")
    try:
        with pytest.raises(LlmError) as info:
            await client.start()
        # OPENAI_BASE_URL names it, but a server on this machine never gets OPENAI_API_KEY (issue 54)
        assert "OPENAI_API_KEY" not in info.value.message
    finally:
        await client.aclose()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_credentials_in_the_base_url_never_reach_a_message() -> None:
    url = f"http://alice:pw-SECRET-42@127.0.0.1:{_closed_port()}/v1?token=tok-SECRET-43"
    client = fast_client(url)
    try:
        assert client.host == f"127.0.0.1:{url.split(':')[3].split('/')[0]}"
        with pytest.raises(LlmError) as info:
            await client.start()
        err, _, _ = await fail(client, "Leak?")
        for shown in (info.value.message, str(info.value), repr(info.value), err.message):
            assert "SECRET" not in shown and "alice" not in shown
    finally:
        await client.aclose()


async def test_cancel_during_the_race_closes_both_requests(server: FakeServer) -> None:
    client = fast_client(server.base_url, first_token_timeout=0.2)
    try:
        server.faults.append(Fault("hang", times=2))
        task = asyncio.create_task(run(client, "Abandon?"))
        # past the deadline: the hedge is racing the first request (waited for, not timed:
        # a loaded machine sends the hedge later than 0.35 s)
        assert await eventually(lambda: len(server.chat_requests()) == 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await eventually(lambda: all(r.cancelled for r in server.chat_requests()))
        chats = server.chat_requests()
        assert len(chats) == 2 and all(r.cancelled for r in chats)
        assert not client._hedge_sdks  # the hedge's own connection pool is closed
    finally:
        await client.aclose()
