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

Requests that fail before their first token are re-sent once, silently; once text is on
screen a failure is reported as ``stream_cut`` with the text kept, never re-sent (the
user would see the answer restart) and never left hanging (read time-out).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import errno
import logging
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import httpx2
import openai
from openai.types.chat import ChatCompletionChunk

from app.events import Usage
from app.llm.errors import LlmError, display_url, redact

log = logging.getLogger(__name__)

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

    def __init__(self) -> None:
        self.start = time.perf_counter()
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
        spare_connections: int = 1,
        cancel_grace_s: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key
        self._where = display_url(self.base_url)
        self._connect_timeout = connect_timeout
        self._timeout = timeout
        self._http2 = http2
        self._clock = clock
        self._cancel_grace = cancel_grace_s
        # Idle refresh must beat our own pool expiry; HTTP/2 multiplexes, so one is enough.
        self._target = 1 if http2 else 1 + max(0, spare_connections)
        self._rewarm_idle = (
            None if not rewarm_idle_s else min(rewarm_idle_s, keepalive_expiry * 0.8)
        )
        self._http = httpx2.AsyncClient(
            http1=True,
            http2=http2,
            limits=httpx2.Limits(
                max_keepalive_connections=20,
                max_connections=50,
                keepalive_expiry=keepalive_expiry,
            ),
            timeout=httpx2.Timeout(timeout, connect=connect_timeout),
            event_hooks={"request": [_inject_trace]},
        )
        self._sdk = openai.AsyncOpenAI(
            base_url=self.base_url,
            # llama.cpp and most local servers accept anything; the SDK insists on a value.
            api_key=api_key or "no-key",
            max_retries=0,
            timeout=httpx2.Timeout(timeout, connect=connect_timeout),
            http_client=self._http,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._models: list[str] | None = None
        self._use_stream_options = True
        self._use_cache_key = True
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

    # --- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        """Open ``1 + spare_connections`` connections and check key and endpoint.

        Raises :class:`LlmError` (auth, not_found, network, timeout…) so the UI can say
        what to fix before the interview starts rather than on the first question.
        """
        self._bind_loop()
        await self._prime_sdk()
        await self._warm(validate=True)
        if self._rewarm_idle is not None and self._keeper is None:
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
        results = await asyncio.gather(
            *(self._warm_one(gate) for _ in range(self._target)), return_exceptions=True
        )
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
        timeout = httpx2.Timeout(self._timeout, connect=self._connect_timeout)
        arrived = False
        try:
            async with self._sdk.models.with_streaming_response.list(timeout=timeout) as resp:
                gate.arrive()
                arrived = True
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(gate.wait(), self._timeout)
                page = await resp.parse()
                return [m.id for m in page.data]
        finally:
            if not arrived:  # a failed warm-up must not keep the others waiting
                gate.arrive()

    def _schedule_warm(self, *, grace: float = 0.0) -> None:
        """Re-warm in the background (coalesced: one warm-up at a time, one queued)."""
        if self._closed or self._loop is None or self._loop.is_closed():
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
    ) -> AsyncGenerator[StreamItem, None]:
        """Stream one answer: ``Delta`` per fragment, then one ``Done``.

        Close the generator (``aclose()``, ``contextlib.aclosing``) or cancel the task
        iterating it to abandon the answer: the HTTP response is closed at once so the
        server stops generating.  Raises :class:`LlmError`; after the first ``Delta`` only
        with kind ``stream_cut`` or ``timeout``, never by re-sending.
        """
        self._bind_loop()
        rec = _Recorder()
        parts: list[str] = []
        complete = False
        self._streams += 1
        try:
            for attempt in range(2):
                finish: str | None = None
                usage: Usage | None = None
                stream: openai.AsyncStream[ChatCompletionChunk] | None = None
                try:
                    stream = await self._open(
                        rec, messages, max_tokens, temperature, prompt_cache_key, extra
                    )
                    async for chunk in stream:
                        if rec.first_event is None:
                            rec.first_event = time.perf_counter()
                        if chunk.usage is not None:
                            usage = _usage(chunk.usage)
                        for choice in chunk.choices:
                            text = choice.delta.content if choice.delta is not None else None
                            if text:
                                timing = None
                                if rec.first_token is None:
                                    rec.first_token = time.perf_counter()
                                    timing = rec.snapshot()
                                parts.append(text)
                                yield Delta(text, self._clock(), timing)
                            if choice.finish_reason:
                                finish = choice.finish_reason
                    if finish is None:
                        raise _Truncated
                except Exception as exc:
                    if rec.first_token is not None:
                        raise self._cut_error(exc, "".join(parts)) from exc
                    if attempt == 0 and self._reissue_ok(exc):
                        log.info("re-sending after failure before first token: %r", exc)
                        continue
                    raise self._map_error(exc) from exc
                finally:
                    if stream is not None:
                        await stream.close()
                complete = True
                yield Done(usage, finish, rec.snapshot(time.perf_counter()), "".join(parts))
                return
        finally:
            self._streams -= 1
            if not complete or rec.attempts > 1:
                # Cancelled, cut or re-sent: on HTTP/1.1 a connection was closed.
                self._schedule_warm(grace=self._cancel_grace)

    async def _open(
        self,
        rec: _Recorder,
        messages: Sequence[Message],
        max_tokens: int,
        temperature: float,
        prompt_cache_key: str | None,
        extra: Mapping[str, Any] | None,
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        """Send the request, dropping parameters the server rejects (remembered)."""
        while True:
            body: dict[str, Any] = dict(extra or {})
            if prompt_cache_key is not None and self._use_cache_key:
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
            if self._use_stream_options:
                kwargs["stream_options"] = {"include_usage": True}
            if body:
                kwargs["extra_body"] = body

            self._acquiring += 1
            rec.new_attempt(self._entered)
            token = _CURRENT.set(rec)
            try:
                created = await self._sdk.chat.completions.create(**kwargs)
                return cast(openai.AsyncStream[ChatCompletionChunk], created)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                rejected = _rejected_param(exc, ("stream_options", "prompt_cache_key", "max_tokens"))
                if rejected == "stream_options" and self._use_stream_options:
                    self._use_stream_options = False
                elif rejected == "prompt_cache_key" and "prompt_cache_key" in body:
                    self._use_cache_key = False
                elif rejected == "max_tokens" and self._max_tokens_field == "max_tokens":
                    self._max_tokens_field = "max_completion_tokens"
                else:
                    raise
                log.info("server rejected %s; sending without it from now on", rejected)
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
            return True
        if isinstance(exc, openai.APITimeoutError):
            return isinstance(exc.__cause__, httpx2.ConnectTimeout | httpx2.PoolTimeout)
        if isinstance(exc, openai.APIConnectionError):
            return True
        if isinstance(exc, openai.APIStatusError):
            return exc.status_code == 429 or exc.status_code >= 500
        return isinstance(exc, httpx2.TransportError) and not isinstance(
            exc, httpx2.ReadTimeout | httpx2.WriteTimeout
        )

    def _cut_error(self, exc: BaseException, text: str) -> LlmError:
        if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
            return LlmError(
                "timeout",
                f"The answer stalled: no data from {self._where} for {self._timeout:g} s after "
                f"{len(text)} characters. What arrived is kept; ask again to regenerate.",
                retryable=True,
                secrets=(self._api_key,),
            )
        why = "the stream ended early" if isinstance(exc, _Truncated) else _describe(exc)
        return LlmError(
            "stream_cut",
            f"The answer was cut off after {len(text)} characters: {why} ({self._where}). "
            "What arrived is kept; ask again to regenerate.",
            retryable=True,
            secrets=(self._api_key,),
        )

    def _map_error(self, exc: BaseException) -> LlmError:
        if isinstance(exc, LlmError):
            return exc
        where, secrets = self._where, (self._api_key,)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = _server_message(exc)
            if status in (401, 403):
                return LlmError(
                    "auth",
                    f"The API key was rejected ({status}) by {where} — set a valid key in "
                    f"Settings or OPENAI_API_KEY. Server said: {detail}",
                    status=status,
                    secrets=secrets,
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
                return LlmError("not_found", msg, status=status, secrets=secrets)
            if status == 429:
                return LlmError(
                    "rate_limit",
                    f"{where} is rate-limiting requests (429) — wait a moment, or check the "
                    f"plan and quota of this key. Server said: {detail}",
                    status=status,
                    secrets=secrets,
                )
            if status >= 500:
                return LlmError(
                    "server",
                    f"The server at {where} failed ({status}) — try again; if it persists the "
                    f"provider has an outage. Server said: {detail}",
                    status=status,
                    secrets=secrets,
                )
            return LlmError(
                "bad_request",
                f"{where} refused the request ({status}) — check the model and settings. "
                f"Server said: {detail}",
                status=status,
                secrets=secrets,
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
            return LlmError("timeout", msg, secrets=secrets)
        if isinstance(exc, _Truncated):
            return LlmError(
                "network",
                f"The stream from {where} ended before any text arrived — try again.",
                secrets=secrets,
            )
        if isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
            if _refused(exc):
                msg = (
                    f"Could not connect to {where}: connection refused — is the server "
                    "running? Check the base URL in Settings."
                )
            else:
                msg = f"The connection to {where} failed: {_describe(exc)} — check the network."
            return LlmError("network", msg, secrets=secrets)
        return LlmError(
            "bad_request", f"Request to {where} failed: {_describe(exc)}", secrets=secrets
        )


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


def _server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])[:300]
        if isinstance(body.get("message"), str):
            return str(body["message"])[:300]
    return (exc.message or exc.__class__.__name__)[:300]


def _rejected_param(exc: openai.APIStatusError, candidates: Sequence[str]) -> str | None:
    if exc.param in candidates:
        return exc.param
    text = _server_message(exc)
    return next((c for c in candidates if c in text), None)


def _describe(exc: BaseException) -> str:
    """The innermost useful cause, e.g. "ConnectionResetError: [Errno 104] …"."""
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    for item in reversed(seen):
        text = str(item)
        if text and not isinstance(item, openai.APIConnectionError):
            return redact(f"{type(item).__name__}: {text}")[:200]
    return type(exc).__name__


def _refused(exc: BaseException) -> bool:
    cur: BaseException | None = exc
    for _ in range(8):
        if cur is None:
            return False
        if isinstance(cur, ConnectionRefusedError) or getattr(cur, "errno", None) == errno.ECONNREFUSED:
            return True
        if "refused" in str(cur).lower():
            return True
        cur = cur.__cause__ or cur.__context__
    return False
