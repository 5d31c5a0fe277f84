"""The answer engine: speculative requests, confirmation, and what reaches the screen.

It runs its own asyncio loop on its own thread and owns the one LLM client (the SDK's
client is bound to the loop it first ran on).  It listens to two events:

- ``speculate`` (a guess at the question, before the turn is confirmed): start a
  streaming request at once; its tokens are *held*.
- ``final`` (the turn is over): if the question did not change in meaning, the held
  tokens are flushed in one go and the stream keeps flowing to the screen; otherwise
  the speculation is cancelled (closing its HTTP stream) and the final text is asked.

Only tokens of a confirmed request become ``token`` events, so a discarded
speculation can never reach the screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.answer.accounting import Ledger, RequestCost
from app.answer.similarity import ReuseRule, compare
from app.clock import SessionClock
from app.config import Settings
from app.events import (
    AnswerDoneEvent,
    ErrorEvent,
    Event,
    EventBus,
    FinalEvent,
    FirstTokenEvent,
    RequestEvent,
    RequestKind,
    SpeculateEvent,
    SpeculationEvent,
    SpeculationOutcome,
    StatusEvent,
    TokenEvent,
    Usage,
)
from app.llm.client import Delta, Done, LlmClient, RequestTiming
from app.llm.errors import LlmError
from app.prompt.builder import PromptBuilder, cache_key, estimate_tokens

ClientFactory = Callable[[], LlmClient]


@dataclass(frozen=True, slots=True)
class Strategy:
    """How answers are fetched; the product default is the fastest correct one."""

    speculation: bool = True
    reuse_rule: ReuseRule = "exact"
    warm_client: bool = True
    """One pooled, pre-warmed client; False = a fresh client per request (a baseline)."""


@dataclass(slots=True)
class _Request:
    id: int
    turn: int
    kind: RequestKind
    text: str
    confirmed: bool = False
    held: list[str] = field(default_factory=list)
    received: list[str] = field(default_factory=list)
    usage: Usage | None = None
    failed: LlmError | None = None
    finished: bool = False
    """The stream is over (complete, failed or cancelled)."""
    settled: bool = False
    """Accounted for, once: shown and done, or discarded as wasted."""
    cancelled: bool = False
    sent_at: float = 0.0
    task: asyncio.Task[None] | None = None
    prompt_tokens: int = 0


@dataclass(slots=True)
class _Turn:
    number: int
    question: str | None = None
    speculations: list[_Request] = field(default_factory=list)
    answer: _Request | None = None


class AnswerEngine:
    def __init__(self, settings: Settings, bus: EventBus, clock: SessionClock, prompt: PromptBuilder,
                 client_factory: ClientFactory, *, model: str, session_id: str, base_url: str = "",
                 strategy: Strategy = Strategy(), send_cache_key: bool = True,
                 prime_cache: bool = False) -> None:
        self._settings = settings
        self._bus = bus
        self._clock = clock
        self._prompt = prompt
        self._client_factory = client_factory
        self._model = model
        self._base_url = base_url
        self._prime_cache = prime_cache
        self._strategy = strategy
        self._low_latency = settings.answer.low_latency and strategy.speculation
        self._cache_key = cache_key(session_id, prompt.prefix_messages()) if send_cache_key else None
        self._fillers = frozenset(w for ws in settings.answer.filler_words.values() for w in ws)
        self._ledger = Ledger(settings.prices.get(model))
        self._ids = itertools.count(1)
        self._turns: dict[int, _Turn] = {}
        self._last_question: str | None = None
        self._client: LlmClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._keepalive: asyncio.Task[None] | None = None

    # --- lifecycle (any thread) ---------------------------------------------------

    def start(self, timeout: float = 30.0) -> None:
        """Start the loop thread and pre-warm the client; returns when it is ready."""
        self._thread = threading.Thread(target=self._run_loop, name="answer-engine", daemon=True)
        self._thread.start()
        self._ready.wait(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout)
        if self._thread:
            self._thread.join(timeout)

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until no request is in flight (used when a replay has ended)."""
        loop = self._loop
        if loop is None:
            return True
        return bool(asyncio.run_coroutine_threadsafe(self._wait_idle(), loop).result(timeout))

    # --- inputs (any thread) --------------------------------------------------------

    def on_event(self, event: Event) -> None:
        """Bus listener: hand speculate/final events to the loop thread."""
        if isinstance(event, SpeculateEvent | FinalEvent):
            self._call(self._handle, event)

    @property
    def low_latency(self) -> bool:
        return self._low_latency

    def set_low_latency(self, on: bool) -> None:
        self._low_latency = on and self._strategy.speculation
        self._emit(StatusEvent(t=self._clock.now(), stage="answer",
                               message=f"low-latency mode {'on' if self._low_latency else 'off'}"))

    def cancel_answer(self) -> None:
        self._call(self._cancel_all)

    def regenerate(self) -> None:
        self._call(self._regenerate)

    @property
    def ledger(self) -> Ledger:
        return self._ledger

    def _call(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn, *args)

    # --- the loop thread -------------------------------------------------------------

    def _run_loop(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._warm_up())
            self._ready.set()
            loop.run_forever()
        finally:
            self._ready.set()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _warm_up(self) -> None:
        if not self._strategy.warm_client:
            return
        self._client = self._client_factory()
        try:
            await self._client.start()
            if self._prime_cache or self._cache_pings_enabled():
                await self._ping_cache()  # the first question then pays only for itself
        except LlmError as exc:
            self._emit(ErrorEvent(t=self._clock.now(), stage="llm", message=str(exc)))
        if self._cache_pings_enabled():
            self._keepalive = asyncio.get_running_loop().create_task(self._cache_keepalive())

    async def _shutdown(self) -> None:
        await self._cancel_all_async()
        if self._keepalive:
            self._keepalive.cancel()
        if self._client:
            await self._client.aclose()
        asyncio.get_running_loop().call_soon(asyncio.get_running_loop().stop)

    async def _wait_idle(self) -> bool:
        while self._tasks:
            await asyncio.wait(set(self._tasks))
        return True

    def _handle(self, event: Event) -> None:
        if isinstance(event, SpeculateEvent):
            self._on_speculate(event)
        elif isinstance(event, FinalEvent):
            self._on_final(event)

    def _turn(self, number: int) -> _Turn:
        if number not in self._turns:
            self._turns[number] = _Turn(number)
        return self._turns[number]

    def _on_speculate(self, event: SpeculateEvent) -> None:
        if not self._low_latency:
            return
        turn = self._turn(event.turn)
        if turn.answer is not None or len(turn.speculations) >= self._settings.answer.max_speculations:
            return
        pending = [r for r in turn.speculations if not r.settled and r.failed is None]
        if any(compare(r.text, event.text, fillers=self._fillers).same for r in pending):
            return  # the same question is already being answered (or was, in full)
        for old in pending:
            self._cancel(old)
        turn.speculations.append(self._send(turn, event.text, "speculative"))

    def _on_final(self, event: FinalEvent) -> None:
        turn = self._turn(event.turn)
        turn.question = event.text
        self._last_question = event.text
        self._finish_previous_answers(turn.number)
        usable = [r for r in turn.speculations if r.failed is None and not r.cancelled]
        candidate = usable[-1] if usable else None
        if candidate is not None:
            verdict = compare(candidate.text, event.text, self._strategy.reuse_rule,
                              threshold=self._settings.answer.fuzzy_threshold, fillers=self._fillers)
            outcome: SpeculationOutcome = "hit" if verdict.same else "miss"
            self._emit(SpeculationEvent(t=self._clock.now(), turn=turn.number, request=candidate.id,
                                        outcome=outcome, similarity=round(verdict.similarity, 4)))
            if verdict.same:
                turn.answer = candidate
                self._confirm(candidate)
                return
            self._cancel(candidate, report=False)  # reported as the miss
        for other in turn.speculations:
            if other is not candidate and not other.settled:
                self._cancel(other)
        turn.answer = self._send(turn, event.text, "final", confirmed=True)

    def _finish_previous_answers(self, current: int) -> None:
        """A new question supersedes older ones: their unconfirmed guesses stop."""
        for number, turn in self._turns.items():
            if number < current and turn.answer is None:
                for request in turn.speculations:
                    if not request.settled:
                        self._cancel(request)

    def _regenerate(self) -> None:
        if self._last_question is None:
            return
        number = max(self._turns, default=0) + 1
        turn = self._turn(number)
        turn.question = self._last_question
        turn.answer = self._send(turn, self._last_question, "regenerate", confirmed=True)

    def _cancel_all(self) -> None:
        for turn in self._turns.values():
            for request in [*turn.speculations, *([turn.answer] if turn.answer else [])]:
                if not request.settled:
                    self._cancel(request)

    async def _cancel_all_async(self) -> None:
        self._cancel_all()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)

    # --- requests ------------------------------------------------------------------------

    def _send(self, turn: _Turn, text: str, kind: RequestKind, *, confirmed: bool = False) -> _Request:
        request = _Request(id=next(self._ids), turn=turn.number, kind=kind, text=text, confirmed=confirmed)
        task = asyncio.get_running_loop().create_task(self._stream(request))
        request.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return request

    def _confirm(self, request: _Request) -> None:
        request.confirmed = True
        if request.held:
            self._emit(TokenEvent(t=self._clock.now(), turn=request.turn, text="".join(request.held),
                                  request=request.id))
            request.held.clear()
        if request.finished and not request.settled:
            self._done(request)

    def _cancel(self, request: _Request, *, report: bool = True) -> None:
        """Stop a request now (its HTTP stream closes, so the server stops generating).

        A guess that never showed is wasted spend; an answer the user stopped keeps what
        was shown and ends its block like any other answer.
        """
        if request.task and not request.task.done():
            request.task.cancel()
        if request.settled:
            return
        request.finished = request.cancelled = True
        if request.confirmed:
            self._done(request, truncated=True)
            return
        if report:
            self._emit(SpeculationEvent(t=self._clock.now(), turn=request.turn, request=request.id,
                                        outcome="cancelled", similarity=0.0))
        self._waste(request)

    def _waste(self, request: _Request) -> None:
        """A guess that will never be shown: what it cost is wasted spend."""
        request.settled = True
        self._ledger.add(RequestCost.of(request.turn, request.kind, request.prompt_tokens,
                                        len(request.received), request.usage, wasted=True))

    async def _stream(self, request: _Request) -> None:
        messages = self._prompt.messages(request.text)
        request.prompt_tokens = estimate_tokens(messages)
        request.sent_at = self._clock.now()
        self._emit(RequestEvent(t=request.sent_at, turn=request.turn, request=request.id, kind=request.kind,
                                text=request.text))
        client, owned = await self._client_for_request()
        stream = client.stream_chat(messages, max_tokens=self._settings.llm.max_tokens,
                                    temperature=self._settings.llm.temperature,
                                    prompt_cache_key=self._cache_key)
        try:
            async with contextlib.aclosing(stream):
                async for item in stream:
                    if isinstance(item, Delta):
                        self._on_delta(request, item)
                    elif isinstance(item, Done):
                        request.usage = item.usage
        except LlmError as exc:
            request.failed = exc
            self._on_failure(request, exc)
            return
        finally:
            if owned:
                await client.aclose()
        request.finished = True
        if request.confirmed and not request.settled:
            self._done(request)

    async def _client_for_request(self) -> tuple[LlmClient, bool]:
        if self._strategy.warm_client and self._client is not None:
            return self._client, False
        return self._client_factory(), True

    def _on_delta(self, request: _Request, delta: Delta) -> None:
        now = self._clock.now()
        if not request.received:
            timing = delta.timing or RequestTiming()
            self._emit(FirstTokenEvent(t=now, turn=request.turn, request=request.id,
                                       ttft=round(now - request.sent_at, 6), connect=timing.connect,
                                       tls=timing.tls, headers=timing.headers, first_byte=timing.first_byte,
                                       http_version=timing.http_version, attempts=timing.attempts))
        request.received.append(delta.text)
        if request.confirmed:
            self._emit(TokenEvent(t=now, turn=request.turn, text=delta.text, request=request.id))
        else:
            request.held.append(delta.text)

    def _on_failure(self, request: _Request, exc: LlmError) -> None:
        """Speculation failures stay silent (the final will ask again); answers say why."""
        request.finished = True
        if request.settled:
            return
        if not request.confirmed:
            if exc.kind == "auth":
                self._emit(ErrorEvent(t=self._clock.now(), stage="llm", message=str(exc)))
            self._waste(request)
            return
        self._emit(ErrorEvent(t=self._clock.now(), stage="llm", message=str(exc)))
        self._done(request, truncated=bool(request.received))

    def _done(self, request: _Request, *, truncated: bool = False) -> None:
        request.settled = True
        text = "".join(request.received)
        cost = self._ledger.add(RequestCost.of(request.turn, request.kind, request.prompt_tokens,
                                               len(request.received), request.usage, wasted=False))
        usage = request.usage or Usage(prompt_tokens=request.prompt_tokens,
                                       completion_tokens=len(request.received), estimated=True)
        self._emit(AnswerDoneEvent(t=self._clock.now(), turn=request.turn, request=request.id, text=text,
                                   usage=usage, cost=round(cost, 8), truncated=truncated))
        self._emit(self._ledger.turn_stats(request.turn, self._clock.now()))
        if text:
            self._prompt.record_turn(request.text, text)

    # --- cache keep-alive ------------------------------------------------------------------

    def _is_local(self) -> bool:
        host = self._base_url.lower()
        return "://127.0.0.1" in host or "://localhost" in host or "://[::1]" in host

    def _cache_pings_enabled(self) -> bool:
        mode = self._settings.llm.cache_keepalive
        if mode != "auto":
            return mode == "on"
        # OpenAI keeps prefixes cached long enough on its own and each ping costs money;
        # a local server keeps its KV cache in process.  Relays and others: ping.
        base = self._base_url.lower()
        return bool(base) and not self._is_local() and "api.openai.com" not in base

    async def _cache_keepalive(self) -> None:
        interval = self._settings.llm.cache_keepalive_interval_s
        while True:
            await asyncio.sleep(interval)
            if not self._tasks:
                with contextlib.suppress(LlmError):
                    await self._ping_cache()

    async def _ping_cache(self) -> None:
        """A one-token request with the stable prefix, so the provider (or llama.cpp's
        KV cache) holds it when the next question comes."""
        if self._client is None:
            return
        await _drain(self._client.stream_chat(
            [*self._prompt.prefix_messages(), {"role": "user", "content": "ping"}],
            max_tokens=1, temperature=0.0, prompt_cache_key=self._cache_key))

    def _emit(self, event: Event) -> None:
        self._bus.emit(event)


async def _drain(stream: Any) -> None:
    async for _ in stream:
        pass

