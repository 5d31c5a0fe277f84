"""The one warm LLM client: connection set-up is paid before the interviewer stops talking.

A suggested answer is only useful if its first words appear while the question still
hangs in the air, and a cold HTTPS request spends 100-300 ms on TCP+TLS before the
provider even sees it.  So this client keeps a small pool of connections open at all
times, on the one event loop it lives on:

* :meth:`LlmClient.start` opens them up front with ``GET /models`` (which also proves the
  key and base URL work).  Not ``HEAD``: several servers and proxies answer HEAD with
  ``Connection: close``, leaving nothing warm.
* Cancelling a stream closes its HTTP/1.1 connection (that is how the server learns to
  stop generating and billing), so every cancel is followed by a background re-warm, and
  a spare connection means the next request never waits for it.
* Idle connections are refreshed every ``rewarm_idle_s`` seconds, before httpx2's
  ``keepalive_expiry`` would drop them and before typical server idle time-outs.
* ``rewarm=False`` turns both off, for the embedded llama.cpp server: a loopback
  connection costs a fraction of a millisecond, and that server answers ``/models``
  under the lock of its completions, so a warm-up would only queue behind the answer.

Before the first token a request gets at most one more chance, silently: a re-send after
a failure a second try can cure (5xx, reset, a 429 after its ``Retry-After``), or — when
no token came within ``first_token_timeout`` — a hedged request on a fresh connection,
raced against the stalled one.  Past that the caller gets one clear :class:`LlmError`
("the endpoint at HOST is not answering …").  Once text is on screen a failure is
reported with the text kept (``partial``), never re-sent (the user would see the answer
restart) and never left hanging (``stall_timeout`` between chunks).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import httpx2
import openai
from openai.types.chat import ChatCompletionChunk

from app.events import Usage
from app.llm.errors import LlmError
from app.llm.replies import (
    about_fields,
    asked_wait,
    chunk_choices,
    describe,
    not_a_stream,
    refused,
    rejected_param,
    seconds_text,
    server_message,
)
from app.redact import display_host, display_url, register_secret, register_url
from app.secrets import key_hint

log = logging.getLogger(__name__)

_RATE_LIMIT_BACKOFF_S = 1.0
"""Wait before re-sending a 429 that gives no hint: OpenAI's per-second windows reset
within about a second, and a longer wait costs the answer its usefulness."""
Message = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RequestTiming:
    """Where the time of one request went; seconds from the call to ``stream_chat``.

    ``connect`` covers TCP connect + TLS handshake of the connection the (last) attempt
    used, and is None when that connection was already open: the number that says
    whether pre-warming worked.
    """

    connect: float | None = None
    tls: float | None = None
    """The TLS part of ``connect`` (None for plain HTTP or a reused connection)."""
    headers: float | None = None
    """Response headers received."""
    first_byte: float | None = None
    """First SSE event (usually the role chunk) parsed."""
    first_token: float | None = None
    """First content fragment parsed."""
    total: float | None = None
    attempts: int = 1
    http_version: str | None = None


@dataclass(frozen=True, slots=True)
class Delta:
    """A content fragment, yielded the moment it is parsed.

    ``t`` is on the client's clock; ``timing`` is set on the first fragment of a request
    only, so the caller can report time-to-first-token and connect cost right away.
    """

    text: str
    t: float
    timing: RequestTiming | None = None


@dataclass(frozen=True, slots=True)
class Done:
    """End of a complete answer; ``usage`` is None when the server sent none."""

    usage: Usage | None
    finish_reason: str | None
    timing: RequestTiming
    text: str = ""


StreamItem = Delta | Done


class _Recorder:
    """Timing of one ``stream_chat`` call, fed by httpcore2's ``trace`` extension."""

    def __init__(self, start: float | None = None) -> None:
        self.start = time.perf_counter() if start is None else start
        self.attempts = 0
        self.entered = True
        self.on_entered: Callable[[], None] | None = None
        self._reset()

    def _reset(self) -> None:
        self.connect_start: float | None = None
        self.connect_end: float | None = None
        self.tls_start: float | None = None
        self.tls_end: float | None = None
        self.headers_at: float | None = None
        self.first_event: float | None = None
        self.first_token: float | None = None
        self.http_version: str | None = None

    def new_attempt(self, on_entered: Callable[[], None]) -> None:
        self.attempts += 1
        self._reset()
        self.entered = False
        self.on_entered = on_entered

    def enter(self) -> None:
        """The request reached the HTTP client (and so, synchronously, a pooled connection)."""
        if not self.entered:
            self.entered = True
            if self.on_entered is not None:
                self.on_entered()

    async def trace(self, name: str, info: dict[str, Any]) -> None:
        now = time.perf_counter()
        # Names are "<logger>.<step>.<started|complete|failed>", e.g.
        # connection.connect_tcp.started, http11.receive_response_headers.complete,
        # http2.receive_response_headers.complete.
        if name == "connection.connect_tcp.started":
            self.connect_start = now
        elif name == "connection.connect_tcp.complete":
            self.connect_end = now
        elif name == "connection.start_tls.started":
            self.tls_start = now
        elif name == "connection.start_tls.complete":
            self.tls_end = now
        elif name.endswith(".receive_response_headers.complete"):
            self.headers_at = now
            value = info.get("return_value")
            if isinstance(value, tuple) and value and isinstance(value[0], bytes):
                self.http_version = value[0].decode("ascii", "replace")
        elif name == "http2.send_connection_init.complete" and self.connect_start is not None:
            self.connect_end = max(self.connect_end or now, now)

    def snapshot(self, end: float | None = None) -> RequestTiming:
        def rel(t: float | None) -> float | None:
            return None if t is None else t - self.start

        connect = None
        if self.connect_start is not None:
            ends = [t for t in (self.connect_end, self.tls_end) if t is not None]
            connect = (max(ends) if ends else time.perf_counter()) - self.connect_start
        tls = None
        if self.tls_start is not None and self.tls_end is not None:
            tls = self.tls_end - self.tls_start
        return RequestTiming(
            connect=connect,
            tls=tls,
            headers=rel(self.headers_at),
            first_byte=rel(self.first_event),
            first_token=rel(self.first_token),
            total=rel(end),
            attempts=self.attempts,
            http_version=self.http_version,
        )


# The recorder of the chat request being sent by the current task.  Set only around the
# SDK's ``create()`` call, so warm-up requests (other tasks) are never traced into it.
_CURRENT: contextvars.ContextVar[_Recorder | None] = contextvars.ContextVar(
    "llm_request_recorder", default=None
)


async def _inject_trace(request: httpx2.Request) -> None:
    """httpx2 request hook: hand httpcore2 the current request's trace callback.

    A hook rather than a wrapping transport keeps httpx2's own transport selection
    (HTTP(S)_PROXY from the environment) intact; the SDK has no per-request extensions.
    """
    recorder = _CURRENT.get()
    if recorder is not None:
        request.extensions["trace"] = recorder.trace
        recorder.enter()


class _Gate:
    """Opens once ``n`` parties have arrived (or given up)."""

    def __init__(self, n: int) -> None:
        self._left = n
        self._open = asyncio.Event()

    def arrive(self) -> None:
        self._left -= 1
        if self._left <= 0:
            self._open.set()

    async def wait(self) -> None:
        await self._open.wait()


class _Truncated(Exception):
    """The SSE stream ended without a finish_reason (server or proxy cut it)."""

    def __init__(self, content_type: str = "", events: int = 1) -> None:
        super().__init__("the stream ended without a finish_reason")
        self.content_type = content_type
        self.not_sse = events == 0 and bool(content_type) and "event-stream" not in content_type
        """Nothing parsed from a body that does not even claim to be SSE (an HTML page)."""


class _Opened:
    """One request that reached its first token (or its end), with what it read so far."""

    def __init__(
        self,
        stream: openai.AsyncStream[ChatCompletionChunk],
        rec: _Recorder,
        sdk: openai.AsyncOpenAI,
    ) -> None:
        self.stream = stream
        self.rec = rec
        self.sdk = sdk
        self.buffered: list[ChatCompletionChunk] = []
        self.ended = False
        self.attempts = 1

    @property
    def content_type(self) -> str:
        return str(self.stream.response.headers.get("content-type", ""))

    async def next(self) -> ChatCompletionChunk | None:
        """The next chunk, buffered ones first; None at the end of the stream."""
        if self.buffered:
            return self.buffered.pop(0)
        if self.ended:
            return None
        try:
            return await self.stream.__anext__()
        except StopAsyncIteration:
            self.ended = True
            return None

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.stream.close()


class LlmClient:
    """A warm OpenAI-compatible client bound to the event loop it first runs on.

    Usage::

        client = LlmClient(base_url, api_key, "gpt-4o-mini")
        await client.start()                     # connect + validate key, before it counts
        async with contextlib.aclosing(client.stream_chat(msgs, max_tokens=300,
                                                          temperature=0.3)) as stream:
            async for item in stream:
                if isinstance(item, Delta): show(item.text)
                else: record(item.usage, item.timing)
        await client.aclose()
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        http2: bool = False,
        connect_timeout: float = 2.0,
        timeout: float = 30.0,
        keepalive_expiry: float = 120.0,
        rewarm_idle_s: float | None = 45.0,
        rewarm: bool = True,
        spare_connections: int = 1,
        cancel_grace_s: float = 0.05,
        first_token_timeout: float = 4.0,
        stall_timeout: float = 8.0,
        rate_limit_max_wait: float = 5.0,
        send_cache_key: bool = True,
        send_include_usage: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key
        # Every output of the app is redacted: the key and the URL's credentials included.
        register_secret(api_key)
        register_url(self.base_url)
        self._where = display_url(self.base_url)
        self.host = display_host(self.base_url)
        """``host[:port]`` of the endpoint, for messages ("the endpoint at HOST …")."""
        self._connect_timeout = connect_timeout
        self._timeout = timeout
        self._first_token_timeout = first_token_timeout
        self._stall_timeout = stall_timeout
        self._rate_limit_max_wait = rate_limit_max_wait
        self._http2 = http2
        self._keepalive_expiry = keepalive_expiry
        self._clock = clock
        self._cancel_grace = cancel_grace_s
        # Idle refresh must beat our own pool expiry; HTTP/2 multiplexes, so one is enough.
        self._target = 1 if http2 else 1 + max(0, spare_connections)
        self._rewarm = rewarm
        self._rewarm_idle = (
            None if not (rewarm and rewarm_idle_s) else min(rewarm_idle_s, keepalive_expiry * 0.8)
        )
        self._sdk = self._make_sdk(max_connections=50)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._models: list[str] | None = None
        # Optional fields a provider may not take (the presets say which); a 400 that names
        # one turns it off for the session either way.
        self._use_stream_options = send_include_usage
        self._use_cache_key = send_cache_key
        self._max_tokens_field = "max_tokens"
        self._streams = 0
        self._acquiring = 0
        self._acquired = asyncio.Event()
        self._acquired.set()
        self._warm_task: asyncio.Task[None] | None = None
        self._warm_again = False
        self._keeper: asyncio.Task[None] | None = None
        self._last_warm = 0.0
        self.warm_count = 0
        """Completed warm-ups (start, after cancels/failures, idle refreshes): for tests."""
        self.last_warm_error: LlmError | None = None
        """Why the last warm-up failed (None after a good one): a status to show, not raise."""
        self._hedge_sdks: set[openai.AsyncOpenAI] = set()

    def _make_sdk(self, *, max_connections: int) -> openai.AsyncOpenAI:
        http = httpx2.AsyncClient(
            http1=True,
            http2=self._http2,
            limits=httpx2.Limits(
                max_keepalive_connections=min(20, max_connections),
                max_connections=max_connections,
                keepalive_expiry=self._keepalive_expiry,
            ),
            timeout=httpx2.Timeout(self._timeout, connect=self._connect_timeout),
            event_hooks={"request": [_inject_trace]},
        )
        return openai.AsyncOpenAI(
            base_url=self.base_url,
            # llama.cpp and most local servers accept anything; the SDK insists on a value.
            api_key=self._api_key or "no-key",
            max_retries=0,
            timeout=httpx2.Timeout(self._timeout, connect=self._connect_timeout),
            http_client=http,
        )

    # --- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        """Open ``1 + spare_connections`` connections and check key and endpoint.

        Returns within ``connect_timeout`` seconds whatever the endpoint does (one that
        accepts connections and never answers included).  Raises :class:`LlmError`
        (auth, not_found, network, timeout, not_answering…) so the caller can show what to
        fix as a status before the first question; the client stays usable either way
        (the idle re-warm keeps trying, and a request opens its own connection).
        """
        self._bind_loop()
        try:
            await self._prime_sdk()
            await self._warm(validate=True)
        finally:
            if self._rewarm_idle is not None and self._keeper is None and not self._closed:
                self._keeper = asyncio.get_running_loop().create_task(
                    self._keep_warm(), name="llm-keep-warm"
                )

    async def _prime_sdk(self) -> None:
        """Pay the SDK's first-call costs now: ``client.chat`` is imported lazily and its
        pydantic models are built on first use, ~20 ms on the first question otherwise."""
        with contextlib.suppress(Exception):
            _ = self._sdk.chat.completions
            from openai._utils._transform import async_maybe_transform
            from openai.types.chat import completion_create_params

            await async_maybe_transform(
                {
                    "model": self.model,
                    "messages": [{"role": "user", "content": "x"}],
                    "max_tokens": 1,
                    "temperature": 0.0,
                    "stream": True,
                    "stream_options": {"include_usage": True},
                },
                completion_create_params.CompletionCreateParamsStreaming,
            )
            ChatCompletionChunk.model_validate(
                {
                    "id": "x",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": self.model,
                    "choices": [
                        {"index": 0, "delta": {"role": "assistant", "content": "x"}, "finish_reason": None}
                    ],
                    "usage": {
                        "prompt_tokens": 1,
                        "completion_tokens": 1,
                        "total_tokens": 2,
                        "prompt_tokens_details": {"cached_tokens": 0},
                    },
                }
            )

    async def ensure_warm(self) -> None:
        """Top the pool up now; waits for chat requests that are about to take a connection
        so the warm-up never steals the idle one they were going to use."""
        self._bind_loop()
        while self._acquiring:
            self._acquired.clear()
            await self._acquired.wait()
        try:
            await self._warm(validate=False)
        except LlmError as exc:  # background: remembered, never raised at the UI
            self.last_warm_error = exc
            log.info("re-warm failed: %s", exc.message)

    async def aclose(self) -> None:
        self._closed = True
        tasks = [t for t in (self._keeper, self._warm_task) if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for sdk in list(self._hedge_sdks):
            await sdk.close()
        self._hedge_sdks.clear()
        await self._sdk.close()

    async def list_models(self) -> list[str]:
        self._bind_loop()
        try:
            page = await self._sdk.models.list()
        except Exception as exc:
            raise self._map_error(exc) from exc
        self._models = [m.id for m in page.data]
        return list(self._models)

    async def model_exists(self, model: str | None = None) -> bool:
        """Whether the server lists ``model`` (default: ours); uses the list from start()."""
        models = self._models if self._models is not None else await self.list_models()
        return (model or self.model) in models

    # --- warming -------------------------------------------------------------------

    async def _warm(self, *, validate: bool) -> None:
        """``GET /models`` on ``_target`` connections at once.

        Each response is held open until all have their headers: an HTTP/1.1 connection
        with an unfinished response cannot be shared, so the requests are guaranteed to
        land on different connections (idle ones get their keep-alive clock reset,
        missing ones are opened) even when one finishes before the next is sent.
        """
        gate = _Gate(self._target)
        try:
            # The whole warm-up, not each step, is bounded: an endpoint that accepts the
            # connection and never answers must not hold start() for the read time-out.
            async with asyncio.timeout(self._connect_timeout):
                results = await asyncio.gather(
                    *(self._warm_one(gate) for _ in range(self._target)),
                    return_exceptions=True,
                )
        except TimeoutError:
            self._last_warm = time.monotonic()
            err = LlmError(
                "not_answering",
                f"The endpoint at {self.host} is not answering (no reply to the connection "
                f"check within {self._connect_timeout:g} s) — answers may fail; check the "
                "service status and the base URL in Settings.",
                host=self.host,
                secrets=(self._api_key,),
            )
            self.last_warm_error = err
            raise err from None
        self._last_warm = time.monotonic()
        for result in results:
            if isinstance(result, BaseException):
                if isinstance(result, asyncio.CancelledError):
                    raise result
                err = self._map_error(result)
                self.last_warm_error = err
                raise err from result
            self._models = result
        self.last_warm_error = None
        self.warm_count += 1

    async def _warm_one(self, gate: _Gate) -> list[str]:
        timeout = httpx2.Timeout(self._connect_timeout)
        arrived = False
        try:
            async with self._sdk.models.with_streaming_response.list(timeout=timeout) as resp:
                gate.arrive()
                arrived = True
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(gate.wait(), self._connect_timeout)
                page = await resp.parse()
                return [m.id for m in page.data]
        finally:
            if not arrived:  # a failed warm-up must not keep the others waiting
                gate.arrive()

    def _schedule_warm(self, *, grace: float = 0.0) -> None:
        """Re-warm in the background (coalesced: one warm-up at a time, one queued)."""
        if not self._rewarm or self._closed or self._loop is None or self._loop.is_closed():
            return
        if self._warm_task is not None and not self._warm_task.done():
            self._warm_again = True
            return
        self._warm_task = self._loop.create_task(self._warm_soon(grace), name="llm-rewarm")

    async def _warm_soon(self, grace: float) -> None:
        # A cancel is usually followed at once by the request that replaces it; let that
        # one take the spare connection before warm-up traffic occupies it.
        if grace > 0:
            await asyncio.sleep(grace)
        while True:
            self._warm_again = False
            await self.ensure_warm()
            if not self._warm_again or self._closed:
                return

    async def _keep_warm(self) -> None:
        assert self._rewarm_idle is not None
        while not self._closed:
            due = self._last_warm + self._rewarm_idle - time.monotonic()
            if due > 0:
                await asyncio.sleep(due)
                continue
            if self._warm_task is not None and not self._warm_task.done():
                await asyncio.wait([self._warm_task])
                continue
            await self.ensure_warm()
            if self.last_warm_error is not None:  # server down: don't spin
                self._last_warm = time.monotonic()

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("LlmClient is bound to the event loop it first ran on")
        if self._closed:
            raise RuntimeError("LlmClient is closed")

    # --- streaming -----------------------------------------------------------------

    async def stream_chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        prompt_cache_key: str | None = None,
        extra: Mapping[str, Any] | None = None,
        extra_requests: int = 1,
    ) -> AsyncGenerator[StreamItem, None]:
        """Stream one answer: ``Delta`` per fragment, then one ``Done``.

        Before the first token, at most ``extra_requests`` (0 or 1) more request is sent:
        a re-send after a failure that a second try can cure (5xx, reset, 429 after its
        ``Retry-After``), or a hedge on a fresh connection when no token came within
        ``first_token_timeout``; whichever streams first wins and the other is closed.
        After the first token nothing is re-sent (the user would see the answer restart):
        a failure, or no data for ``stall_timeout``, raises with what arrived kept.

        Close the generator (``aclose()``, ``contextlib.aclosing``) or cancel the task
        iterating it to abandon the answer: the HTTP response is closed at once so the
        server stops generating.  Raises :class:`LlmError` only; ``partial`` on it says
        whether Deltas were yielded before the failure.
        """
        self._bind_loop()
        rec = _Recorder()
        parts: list[str] = []
        complete = False
        opened: _Opened | None = None
        self._streams += 1
        try:
            opened = await self._first_token(
                rec, messages, max_tokens, temperature, prompt_cache_key, extra,
                min(1, max(0, extra_requests)),
            )
            winner = opened.rec
            finish: str | None = None
            usage: Usage | None = None
            try:
                while True:
                    async with asyncio.timeout(self._stall_timeout):
                        chunk = await opened.next()
                    if chunk is None:
                        break
                    if chunk.usage is not None:
                        usage = _usage(chunk.usage)
                    for choice in chunk_choices(chunk):
                        text = choice.delta.content if choice.delta is not None else None
                        if text:
                            timing = None
                            if not parts:
                                timing = winner.snapshot()
                            parts.append(text)
                            yield Delta(text, self._clock(), timing)
                        if choice.finish_reason:
                            finish = choice.finish_reason
                if finish is None:
                    raise _Truncated
            except Exception as exc:
                if parts:
                    raise self._cut_error(exc, "".join(parts), opened.attempts) from exc
                raise self._map_error(exc, attempts=opened.attempts) from exc
            complete = True
            yield Done(usage, finish, winner.snapshot(time.perf_counter()), "".join(parts))
        finally:
            self._streams -= 1
            if opened is not None:
                await opened.close()
                if opened.sdk is not self._sdk:
                    self._hedge_sdks.discard(opened.sdk)
                    await opened.sdk.close()
            if not complete or (opened is not None and opened.attempts > 1):
                # Cancelled, cut, re-sent or hedged: on HTTP/1.1 a connection was closed.
                self._schedule_warm(grace=self._cancel_grace)

    async def _first_token(
        self,
        rec: _Recorder,
        messages: Sequence[Message],
        max_tokens: int,
        temperature: float,
        prompt_cache_key: str | None,
        extra: Mapping[str, Any] | None,
        spare: int,
    ) -> _Opened:
        """Race for the first token: the request, plus at most ``spare`` re-send or hedge.

        Each attempt runs as its own task up to its first token (or its end), so a
        stalled one can be raced by a hedge without being cancelled first: a slow-but-
        alive server still wins if it answers before the fresh connection does.
        """
        racers: dict[asyncio.Task[_Opened], openai.AsyncOpenAI] = {}
        sent = 0
        deadline = 0.0
        last_exc: BaseException | None = None
        stalled = False

        def launch(hedge: bool) -> None:
            nonlocal sent, deadline
            sent += 1
            attempt_rec = rec if sent == 1 else _Recorder(start=rec.start)
            sdk = self._sdk
            if hedge:  # a fresh connection: the stalled one may be the problem (or a bad relay node)
                sdk = self._make_sdk(max_connections=1)
                self._hedge_sdks.add(sdk)
            task = asyncio.get_running_loop().create_task(
                self._attempt(attempt_rec, sdk, messages, max_tokens, temperature,
                              prompt_cache_key, extra),
                name="llm-hedge" if hedge else "llm-request",
            )
            racers[task] = sdk
            # Every racer gets the newest deadline: a stalled request that wakes up while
            # its hedge is under way still wins.
            deadline = time.monotonic() + self._first_token_timeout

        launch(hedge=False)
        try:
            while True:
                pending = [t for t in racers if not t.done()]
                if not pending:
                    break
                done, _ = await asyncio.wait(
                    pending, timeout=max(0.0, deadline - time.monotonic()),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if not done:  # no first token from anyone in time
                    stalled = True
                    if sent <= spare:
                        log.info("no first token after %.1f s: hedging on a fresh connection",
                                 self._first_token_timeout)
                        launch(hedge=True)
                        continue
                    break
                for task in done:
                    exc = task.exception()
                    if exc is None:
                        opened = task.result()
                        opened.attempts = sent
                        opened.rec.attempts = sent
                        del racers[task]
                        return opened
                    last_exc = exc
                    if not self._reissue_ok(exc):
                        raise self._map_error(exc, attempts=sent) from exc
                    if any(not t.done() for t in racers):
                        continue  # the other racer may still answer
                    if sent > spare:
                        raise self._map_error(exc, attempts=sent) from exc
                    wait, asked = self._resend_delay(exc)
                    if wait is None:
                        raise self._map_error(exc, attempts=sent, retry_after=asked) from exc
                    log.info("re-sending after %.2f s after failure before first token: %r", wait, exc)
                    if wait > 0:
                        await asyncio.sleep(wait)
                    launch(hedge=False)
            if stalled or last_exc is None:
                raise self._not_answering(rec, sent)
            raise self._map_error(last_exc, attempts=sent) from last_exc
        finally:
            await self._cancel_racers(racers)

    async def _cancel_racers(self, racers: Mapping[asyncio.Task[_Opened], openai.AsyncOpenAI]) -> None:
        """Stop the losers: cancel the pending, close what the finished ones opened."""
        for task in racers:
            task.cancel()
        for task, sdk in racers.items():
            with contextlib.suppress(Exception, asyncio.CancelledError):
                opened = await task
                await opened.close()
            if sdk is not self._sdk:
                self._hedge_sdks.discard(sdk)
                with contextlib.suppress(Exception):
                    await sdk.close()

    async def _attempt(
        self,
        rec: _Recorder,
        sdk: openai.AsyncOpenAI,
        messages: Sequence[Message],
        max_tokens: int,
        temperature: float,
        prompt_cache_key: str | None,
        extra: Mapping[str, Any] | None,
    ) -> _Opened:
        """One request, read up to its first content token, its finish, or its end."""
        stream = await self._open(rec, sdk, messages, max_tokens, temperature, prompt_cache_key, extra)
        opened = _Opened(stream, rec, sdk)
        try:
            while True:
                try:
                    chunk = await stream.__anext__()
                except StopAsyncIteration:
                    break
                if rec.first_event is None:
                    rec.first_event = time.perf_counter()
                opened.buffered.append(chunk)
                choices = chunk_choices(chunk)
                if any(c.delta is not None and c.delta.content for c in choices):
                    rec.first_token = time.perf_counter()
                    return opened
                if any(c.finish_reason for c in choices):
                    return opened  # an empty answer is an answer
            opened.ended = True
            if not any(c.finish_reason for ch in opened.buffered for c in chunk_choices(ch)):
                raise _Truncated(opened.content_type, len(opened.buffered))
            return opened
        except BaseException:
            await opened.close()
            raise

    async def _open(
        self,
        rec: _Recorder,
        sdk: openai.AsyncOpenAI,
        messages: Sequence[Message],
        max_tokens: int,
        temperature: float,
        prompt_cache_key: str | None,
        extra: Mapping[str, Any] | None,
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        """Send the request, dropping optional fields the server rejects (remembered).

        Relays that validate strictly answer an unknown field (``stream_options``,
        ``prompt_cache_key``) with 400/422.  When the error names the field, it is dropped;
        when it names nothing, the request is sent once more without any optional field.
        Either way the answer still comes, and the client stops sending what failed.
        """
        stripped = False
        while True:
            body: dict[str, Any] = dict(extra or {})
            use_cache_key = self._use_cache_key and not stripped
            use_stream_options = self._use_stream_options and not stripped
            if prompt_cache_key is not None and use_cache_key:
                body["prompt_cache_key"] = prompt_cache_key
            kwargs: dict[str, Any] = {
                "model": self.model,
                "messages": list(messages),
                "temperature": temperature,
                "stream": True,
            }
            if self._max_tokens_field == "max_tokens":
                kwargs["max_tokens"] = max_tokens
            else:
                body["max_completion_tokens"] = max_tokens
            if use_stream_options:
                kwargs["stream_options"] = {"include_usage": True}
            if body:
                kwargs["extra_body"] = body
            optional = use_stream_options or "prompt_cache_key" in body

            self._acquiring += 1
            rec.new_attempt(self._entered)
            token = _CURRENT.set(rec)
            try:
                created = await sdk.chat.completions.create(**kwargs)
                if stripped:
                    log.info("server rejected an unnamed field; optional fields are off from now on")
                    self._use_stream_options = False
                    self._use_cache_key = False
                return cast(openai.AsyncStream[ChatCompletionChunk], created)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                rejected = rejected_param(exc, ("stream_options", "prompt_cache_key", "max_tokens"))
                if rejected == "stream_options" and use_stream_options:
                    self._use_stream_options = False
                elif rejected == "prompt_cache_key" and "prompt_cache_key" in body:
                    self._use_cache_key = False
                elif rejected == "max_tokens" and self._max_tokens_field == "max_tokens":
                    self._max_tokens_field = "max_completion_tokens"
                elif rejected is None and optional and not stripped and about_fields(exc):
                    stripped = True
                    rejected = "an unnamed field"
                else:
                    raise
                log.info("server rejected %s; sending without it", rejected)
                rec.attempts -= 1
            finally:
                _CURRENT.reset(token)
                rec.enter()

    def _entered(self) -> None:
        self._acquiring -= 1
        if self._acquiring <= 0:
            self._acquiring = 0
            self._acquired.set()

    # --- errors --------------------------------------------------------------------

    @staticmethod
    def _reissue_ok(exc: BaseException) -> bool:
        """Failures before the first token that a second attempt can cure."""
        if isinstance(exc, _Truncated):
            return not exc.not_sse
        if isinstance(exc, openai.APITimeoutError):
            return isinstance(exc.__cause__, httpx2.ConnectTimeout | httpx2.PoolTimeout)
        if isinstance(exc, openai.APIConnectionError):
            return True
        if isinstance(exc, openai.APIStatusError):
            return exc.status_code == 429 or exc.status_code >= 500
        return isinstance(exc, httpx2.TransportError) and not isinstance(
            exc, httpx2.ReadTimeout | httpx2.WriteTimeout
        )

    def _resend_delay(self, exc: BaseException) -> tuple[float | None, float | None]:
        """(seconds to wait before the one re-send or None = don't, what the server asked).

        429 and 503 follow ``Retry-After`` (or OpenAI's "try again in 20ms") when it is
        at most ``rate_limit_max_wait``: past that the answer would come too late to say,
        and the caller gets the wait on ``LlmError.retry_after`` instead.  A 429 without
        a hint backs off ``_RATE_LIMIT_BACKOFF_S``; other failures re-send at once.
        """
        if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (429, 503):
            return 0.0, None
        asked = asked_wait(exc)
        if asked is None:
            return (_RATE_LIMIT_BACKOFF_S if exc.status_code == 429 else 0.0), None
        if asked > self._rate_limit_max_wait:
            return None, asked
        return asked, asked

    def _not_answering(self, rec: _Recorder, sent: int) -> LlmError:
        waited = time.perf_counter() - rec.start
        again = (
            "a second request on a fresh connection got nothing either; " if sent > 1 else ""
        )
        return LlmError(
            "not_answering",
            f"The endpoint at {self.host} is not answering (no first token after "
            f"{seconds_text(waited)} s) — {again}check the service status and the base URL in "
            "Settings (for slow models raise llm.first_token_timeout_s).",
            attempts=sent,
            host=self.host,
            secrets=(self._api_key,),
        )

    def _cut_error(self, exc: BaseException, text: str, attempts: int) -> LlmError:
        common: dict[str, Any] = {
            "retryable": True,
            "partial": True,
            "attempts": attempts,
            "host": self.host,
            "secrets": (self._api_key,),
        }
        if isinstance(exc, TimeoutError | openai.APITimeoutError | httpx2.TimeoutException):
            stalled = self._stall_timeout if isinstance(exc, TimeoutError) else self._timeout
            return LlmError(
                "timeout",
                f"The answer stalled: no data from {self._where} for {stalled:g} s after "
                f"{len(text)} characters. What arrived is kept; ask again to regenerate.",
                **common,
            )
        if isinstance(exc, _Truncated):
            why = "the stream ended early"
        elif (shown := not_a_stream(exc)) is not None:
            why = (
                f"the endpoint at {self.host} sent something that is not an "
                f"OpenAI-compatible stream (first bytes: {shown})"
            )
        else:
            why = describe(exc)
        return LlmError(
            "stream_cut",
            f"The answer was cut off after {len(text)} characters: {why} ({self._where}). "
            "What arrived is kept; ask again to regenerate.",
            **common,
        )

    def _map_error(
        self, exc: BaseException, *, attempts: int = 1, retry_after: float | None = None
    ) -> LlmError:
        if isinstance(exc, LlmError):
            return exc
        where = self._where
        common: dict[str, Any] = {
            "attempts": attempts,
            "host": self.host,
            "secrets": (self._api_key,),
        }
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = server_message(exc)
            if status in (401, 403):
                what = "rejected" if status == 401 else "refused (no access)"
                return LlmError(
                    "auth",
                    f"The API key was {what} ({status}) by {where} — "
                    f"{key_hint(self.base_url)}. Server said: {detail}",
                    status=status,
                    **common,
                )
            if status == 404:
                if exc.code == "model_not_found" or "model" in detail.lower():
                    msg = (
                        f"The model '{self.model}' is not available at {where} (404) — pick "
                        f"another model in Settings. Server said: {detail}"
                    )
                else:
                    msg = (
                        f"{where} has no OpenAI-compatible API here (404) — check the base URL "
                        f"in Settings (it usually ends in /v1). Server said: {detail}"
                    )
                return LlmError("not_found", msg, status=status, **common)
            wait = retry_after if retry_after is not None else asked_wait(exc)
            when = f"it asks to wait {seconds_text(wait)} s" if wait is not None else "wait a moment"
            if status == 429:
                return LlmError(
                    "rate_limit",
                    f"{where} is rate-limiting requests (429) — {when}, or check the plan "
                    f"and quota of this key. Server said: {detail}",
                    status=status,
                    retry_after=wait,
                    **common,
                )
            if status >= 500:
                return LlmError(
                    "server",
                    f"The server at {where} failed ({status}) — try again; if it persists the "
                    f"provider has an outage. Server said: {detail}",
                    status=status,
                    retry_after=wait,
                    **common,
                )
            return LlmError(
                "bad_request",
                f"{where} refused the request ({status}) — check the model and settings. "
                f"Server said: {detail}",
                status=status,
                **common,
            )
        shown = not_a_stream(exc)
        if shown is None and isinstance(exc, _Truncated) and exc.not_sse:
            shown = f"none; content type {exc.content_type or 'missing'}"
        if shown is not None:
            return LlmError(
                "bad_stream",
                f"The endpoint at {self.host} sent something that is not an OpenAI-compatible "
                f"stream (first bytes: {shown}) — check the base URL in Settings (it usually "
                "ends in /v1) and any proxy in between.",
                retryable=False,
                **common,
            )
        if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
            cause = exc.__cause__ if isinstance(exc, openai.APITimeoutError) else exc
            if isinstance(cause, httpx2.ConnectTimeout | httpx2.PoolTimeout):
                msg = (
                    f"Could not connect to {where} within {self._connect_timeout:g} s — check "
                    "the network and the base URL in Settings."
                )
            else:
                msg = (
                    f"No answer from {where} for {self._timeout:g} s — the server or the "
                    "network stalled; try again."
                )
            return LlmError("timeout", msg, **common)
        if isinstance(exc, _Truncated):
            return LlmError(
                "network",
                f"The stream from {where} ended before any text arrived — try again.",
                **common,
            )
        if isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
            if refused(exc):
                msg = (
                    f"Could not connect to {where}: connection refused — is the server "
                    "running? Check the base URL in Settings."
                )
            else:
                msg = f"The connection to {where} failed: {describe(exc)} — check the network."
            return LlmError("network", msg, **common)
        return LlmError("bad_request", f"Request to {where} failed: {describe(exc)}", **common)


# --- helpers ---------------------------------------------------------------------------


def _usage(raw: Any) -> Usage:
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return Usage(
        prompt_tokens=int(getattr(raw, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(raw, "completion_tokens", 0) or 0),
        cached_tokens=int(cached or 0),
    )


def estimate_usage(messages: Iterable[Message], answer: str) -> Usage:
    """Usage counted locally (~4 characters a token) for servers that send none."""
    prompt_chars = sum(len(str(m.get("content") or "")) + 4 for m in messages)
    return Usage(
        prompt_tokens=max(1, prompt_chars // 4),
        completion_tokens=max(1, len(answer) // 4) if answer else 0,
        estimated=True,
    )
