"""The one warm LLM client: connection set-up is paid before the interviewer stops talking.

A suggested answer is only useful if its first words appear while the question still
hangs in the air, and a cold HTTPS request spends 100-300 ms on TCP+TLS before the
provider even sees it.  :class:`LlmClient` is the façade the app uses; each job it does
lives in its own module of :mod:`app.llm`, around one
:class:`~app.llm.chat.ChatRequest`.  Design notes: decision 0039.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2
import openai
from openai.types.chat import ChatCompletionChunk

from app.core.events import Usage
from app.llm import body_cap
from app.llm.chat import ChatRequest, Delta, Done, Message, StreamItem, Truncated, estimate_usage, usage_of
from app.llm.errors import LlmError
from app.llm.fields import OptionalFields
from app.llm.hedging import FirstTokenRace, Opened
from app.llm.limits import AnswerText, GuardedOpenAI
from app.llm.loopback import trust_env
from app.llm.replies import chunk_choices
from app.llm.routed import Route, RoutedTransport
from app.llm.timing import Recorder, RequestTiming, inject_trace
from app.llm.warming import Warmer
from app.llm.wording import Wording
from app.platform.redact import register_secret, register_url

__all__ = ["ChatRequest", "Delta", "Done", "LlmClient", "Message", "RequestTiming", "StreamItem",
           "estimate_usage"]


SPARE_CONNECTIONS = 3
"""Warm connections kept beside the one in use.  A new guess cancels the one before and
closes its connection, and within one re-warm's connection set-up a pause can send three
requests after the guess still streaming from before it: the guess of its first silent
frame, the hangover pass's correction and the final (decisions 0022, 0026)."""


@dataclass(frozen=True, slots=True)
class ClientTuning:
    """How the client talks to its endpoint: time-outs, the warm pool, optional fields
    (from ``[llm]``: :meth:`app.session.llm_choice.LlmChoice.make_client`)."""

    http2: bool = False
    connect_timeout: float = 2.0
    timeout: float = 30.0
    keepalive_expiry: float = 120.0
    rewarm_idle_s: float | None = 45.0
    rewarm: bool = True
    spare_connections: int = SPARE_CONNECTIONS
    """Kept warm beside the one in use (:data:`SPARE_CONNECTIONS`)."""
    cancel_grace_s: float = 0.05
    first_token_timeout: float = 4.0
    stall_timeout: float = 8.0
    rate_limit_max_wait: float = 5.0
    send_cache_key: bool = True
    send_include_usage: bool = True


_DEFAULT = ClientTuning()


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

    def __init__(self, base_url: str, api_key: str | None, model: str, tuning: ClientTuning = _DEFAULT, *,
                 route: Route | None = None, clock: Callable[[], float] = time.perf_counter) -> None:
        t = tuning
        http2, connect_timeout, timeout = t.http2, t.connect_timeout, t.timeout
        stall_timeout = t.stall_timeout
        keepalive_expiry, rewarm, rewarm_idle_s = t.keepalive_expiry, t.rewarm, t.rewarm_idle_s
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key
        # Every output of the app is redacted: the key and the URL's credentials included.
        register_secret(api_key)
        register_url(self.base_url)
        self._words = Wording(self.base_url, model, api_key, connect_timeout, timeout, stall_timeout)
        self.host = self._words.host
        """``host[:port]`` of the endpoint, for messages ("the endpoint at HOST …")."""
        self._connect_timeout = connect_timeout
        self._timeout = timeout
        self._stall_timeout = stall_timeout
        self._http2 = http2
        self._keepalive_expiry = keepalive_expiry
        self._route = route
        """The embedded server's: asked where each request may go (:mod:`app.llm.routed`)."""
        self._clock = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._sdk = self._make_sdk(max_connections=50)
        # Idle refresh must beat our own pool expiry; HTTP/2 multiplexes, so one is enough.
        idle = None if not (rewarm and rewarm_idle_s) else min(rewarm_idle_s, keepalive_expiry * 0.8)
        self._warmer = Warmer(self._sdk, self._words, target=1 if http2 else 1 + max(0, t.spare_connections),
                              rewarm=rewarm, rewarm_idle_s=idle, cancel_grace_s=t.cancel_grace_s)
        # Optional fields a provider may not take (the presets say which); a 400 that names
        # one turns it off for the session either way.
        self._fields = OptionalFields(include_usage=t.send_include_usage, cache_key=t.send_cache_key)
        self._race = FirstTokenRace(
            self._sdk, lambda: self._make_sdk(max_connections=1), self._fields, self._words,
            self._warmer.leaving, model=model, first_token_timeout=t.first_token_timeout,
            rate_limit_max_wait=t.rate_limit_max_wait,
        )
        self._streams = 0

    @property
    def warm_count(self) -> int:
        """Completed warm-ups (start, after cancels/failures, idle refreshes): for tests."""
        return self._warmer.count

    @property
    def last_warm_error(self) -> LlmError | None:
        """Why the last warm-up failed (None after a good one): a status to show, not raise."""
        return self._warmer.last_error

    @property
    def _hedge_sdks(self) -> set[openai.AsyncOpenAI]:
        return self._race.hedge_sdks

    def _make_sdk(self, *, max_connections: int) -> openai.AsyncOpenAI:
        limits = httpx2.Limits(
            max_keepalive_connections=min(20, max_connections),
            max_connections=max_connections,
            keepalive_expiry=self._keepalive_expiry,
        )
        routed: dict[str, Any] = {}
        if self._route is not None:  # the embedded server: each request asks where its child is
            inner = httpx2.AsyncHTTPTransport(http1=True, http2=self._http2, limits=limits, trust_env=False)
            routed["transport"] = RoutedTransport(inner, self._route)
        http = httpx2.AsyncClient(
            http1=True,
            http2=self._http2,
            limits=limits,
            **routed,
            timeout=httpx2.Timeout(self._timeout, connect=self._connect_timeout),
            event_hooks={"request": [inject_trace], "response": [body_cap.async_hook]},  # app.llm.body_cap
            # A loopback endpoint is reached directly, never through HTTP(S)_PROXY (app.llm.loopback).
            trust_env=trust_env(self.base_url),
        )
        return GuardedOpenAI(  # SSE events of at most 1 MiB (app.llm.limits)
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
            await self._warmer.warm(validate=True)
        finally:
            self._warmer.keep()

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
        await self._warmer.ensure_warm()

    async def aclose(self) -> None:
        self._closed = self._warmer.closed = True
        await self._warmer.aclose()
        for sdk in list(self._race.hedge_sdks):
            await sdk.close()
        self._race.hedge_sdks.clear()
        await self._sdk.close()

    async def list_models(self) -> list[str]:
        self._bind_loop()
        try:
            page = await self._sdk.models.list()
        except Exception as exc:
            raise self._words.failed(exc) from exc
        self._warmer.models = [m.id for m in page.data]
        return list(self._warmer.models)

    async def model_exists(self, model: str | None = None) -> bool:
        """Whether the server lists ``model`` (default: ours); uses the list from start()."""
        known = self._warmer.models
        models = known if known is not None else await self.list_models()
        return (model or self.model) in models

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = self._warmer.loop = loop
        elif self._loop is not loop:
            raise RuntimeError("LlmClient is bound to the event loop it first ran on")
        if self._closed:
            raise RuntimeError("LlmClient is closed")

    # --- streaming -----------------------------------------------------------------

    def stream_chat(
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
        return self.stream(ChatRequest.of(messages, max_tokens=max_tokens, temperature=temperature,
                                          prompt_cache_key=prompt_cache_key, extra=extra,
                                          extra_requests=extra_requests))

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamItem, None]:
        """:meth:`stream_chat` for a request already built."""
        self._bind_loop()
        rec = Recorder()
        parts = AnswerText(request.max_tokens)  # at most answer_cap characters (app.llm.limits)
        complete = False
        opened: Opened | None = None
        self._streams += 1
        try:
            opened = await self._race.run(rec, request)
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
                        usage = usage_of(chunk.usage)
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
                    raise Truncated
            except Exception as exc:
                if parts:
                    raise self._words.cut(exc, "".join(parts), opened.attempts) from exc
                raise self._words.failed(exc, attempts=opened.attempts) from exc
            complete = True
            yield Done(usage, finish, winner.snapshot(time.perf_counter()), "".join(parts))
        finally:
            self._streams -= 1
            if opened is not None:
                await opened.close()
                if opened.sdk is not self._sdk:
                    await self._race.close_hedge(opened.sdk)
            if not complete or (opened is not None and opened.attempts > 1):
                # Cancelled, cut, re-sent or hedged: on HTTP/1.1 a connection was closed.
                self._warmer.schedule()
