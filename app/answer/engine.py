"""The answer engine: speculative requests, confirmation, and what reaches the screen.

It runs its own asyncio loop on its own thread and owns the one LLM client (the SDK's
client is bound to the loop it first ran on).  It listens to two events:

- ``speculate`` (a guess at the question, before the turn is confirmed): start a
  streaming request at once; its tokens are *held*.
- ``final`` (the turn is over): if the question did not change in meaning, the held
  tokens are flushed in one go and the stream keeps flowing to the screen; otherwise
  the speculation is cancelled (closing its HTTP stream) and the final text is asked.

Design notes: decision 0039.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.answer.accounting import Ledger
from app.answer.handle import (
    AnswerHandle,
    AnswerState,
    Cancel,
    Complete,
    Continued,
    Cut,
    Fail,
    Hit,
    Miss,
    Received,
    Sent,
    Trigger,
    Withdraw,
)
from app.answer.similarity import ReuseRule, exact
from app.core.clock import SessionClock
from app.core.config import Settings
from app.core.events import (
    Event,
    EventBus,
    FinalEvent,
    LanguageEvent,
    RequestKind,
    RestoredEvent,
    ResumedEvent,
    SpeculateEvent,
    StatusEvent,
    TokenEvent,
)
from app.core.low_latency import LowLatency
from app.core.text import question_key, tags_of
from app.llm.chat import Delta, Done, Message, StreamItem
from app.llm.errors import LlmError
from app.llm.loopback import remote_tactic
from app.prompt.builder import PromptBuilder, cache_key, estimate_tokens
from app.prompt.recall import RecallAnnouncer
from app.prompt.shape import ReplyShape
from app.prompt.written import WRITTEN_MAX_TOKENS, WRITTEN_SHAPE, written_messages


class AnswerClient(Protocol):
    """What the engine asks of its LLM client (:class:`app.llm.client.LlmClient`)."""

    async def start(self) -> None: ...

    def stream_chat(self, messages: Sequence[Message], *, max_tokens: int, temperature: float,
                    prompt_cache_key: str | None = None, extra: Mapping[str, Any] | None = None,
                    extra_requests: int = 1) -> AsyncGenerator[StreamItem, None]: ...

    async def aclose(self) -> None: ...


ClientFactory = Callable[[], AnswerClient]
"""Builds the one client; may block (it starts the embedded server), so it runs off the loop."""


def _as_is(factory: ClientFactory) -> ClientFactory:
    return factory


@dataclass(frozen=True, slots=True)
class Strategy:
    """Seams the benchmark's baselines plug into (``devtools/bench/baselines.py``); the
    defaults are the product: one pooled, pre-warmed client, and the exact reuse rule."""

    reuse: ReuseRule = exact
    """May the answer to a guess stand for the final question?"""
    clients: Callable[[ClientFactory], ClientFactory] = _as_is
    """Wraps the session's client factory: the engine builds one client from what it
    returns, starts (warms) it and streams every request through it."""


@dataclass(frozen=True, slots=True)
class AnswerTarget:
    """Where the answers go, and what that server needs."""

    model: str
    session_id: str
    """Keys the prompt cache (with the prompt's prefix)."""
    base_url: str = ""
    prime_cache: bool = False
    """Read the prompt's prefix once at start (a local server: seconds, then cached)."""
    one_at_a_time: bool = False
    """The server answers one request at a time (the embedded llama.cpp server): a new
    question's request would queue behind the answer on screen, so it cuts it as it
    leaves instead of when its own first token arrives."""


_PRODUCT = Strategy()
_ANSWERED = frozenset({AnswerState.DONE, AnswerState.CUT, AnswerState.FAILED})
"""Ends of an answer the candidate saw: the prompt's history records it."""


@dataclass(slots=True)
class _Turn:
    number: int
    question: str | None = None
    speculations: list[AnswerHandle] = field(default_factory=list)
    answer: AnswerHandle | None = None
    written: tuple[bytes, ...] | None = None
    """A question read from the screen: its captures (PNG); None for a spoken one."""


class AnswerEngine:
    def __init__(self, settings: Settings, bus: EventBus, clock: SessionClock,
                 prompts: Callable[[str], PromptBuilder], client_factory: ClientFactory, *,
                 target: AnswerTarget, strategy: Strategy = _PRODUCT,
                 low_latency: LowLatency | None = None) -> None:
        """``prompts``: the prompt for a language (the session's, then the one it settles);
        ``low_latency``: the session's mode (observed), else one of its own from settings."""
        self._settings = settings
        self._bus = bus
        self._clock = clock
        self._prompts = prompts
        prompt = self._prompt = prompts(settings.asr.language)
        self._recall = RecallAnnouncer(self._emit, clock.now)
        """The résumé lines each question touches, shown before its answer."""
        self._client_factory = strategy.clients(client_factory)
        self._model = target.model
        self._base_url = target.base_url
        self._prime_cache = target.prime_cache
        self._one_at_a_time = target.one_at_a_time
        self._strategy = strategy
        self._low_latency = low_latency or LowLatency(settings.answer.low_latency)
        self._stop_observing = self._low_latency.observe(self._low_latency_changed)
        self._session_id = target.session_id
        self._cache_key = cache_key(self._session_id, prompt.prefix_messages())
        self._fillers = frozenset(settings.turns.all_words("fillers"))
        self._tags = tags_of(settings.turns.all_words("end_words"))
        self._ledger = Ledger(settings.prices.get(target.model))
        self._ids = itertools.count(1)
        self._turns: dict[int, _Turn] = {}
        self._last_turn: _Turn | None = None
        """The newest turn with a question: what Regenerate asks again."""
        self._front: AnswerHandle | None = None
        """The answer whose tokens are on screen now (one at a time)."""
        self._client: AnswerClient | None = None
        self._client_error: LlmError | None = None
        self._warm_done: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.warmed = threading.Event()
        """Set once the client is built and its connections are warm (or that failed)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._keepalive: asyncio.Task[None] | None = None

    # --- lifecycle (any thread) ---------------------------------------------------

    def start(self, timeout: float = 5.0) -> None:
        """Start the loop thread; returns once it takes events, before the client is warm.

        Building the client (which may start the embedded server) and warming its
        connections run on the loop beside everything else: a question asked meanwhile
        waits for the client, and a slow or dead endpoint is a message, not a wait.
        """
        self._thread = threading.Thread(target=self._run_loop, name="answer-engine", daemon=True)
        self._thread.start()
        self._ready.wait(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        self._stop_observing()
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
        """Bus listener: hand the turn events to the loop thread."""
        if isinstance(event, SpeculateEvent | FinalEvent | ResumedEvent | LanguageEvent):
            self._call(self._handle, event)

    @property
    def low_latency(self) -> bool:
        return self._low_latency.on

    def _low_latency_changed(self, on: bool) -> None:
        self._emit(StatusEvent(t=self._clock.now(), stage="answer",
                               message=f"low-latency mode {'on' if on else 'off'}"))

    def ask_written(self, turn: int, text: str, images: Sequence[bytes] = ()) -> None:
        """Answer a question read from the screen (its own prompt: :mod:`app.prompt.written`)."""
        self._call(self._on_written, turn, text, tuple(images))

    def cancel_answer(self) -> None:
        self._call(self._cancel_all)

    def regenerate(self) -> None:
        self._call(self._regenerate)

    def retract_answer(self) -> None:
        """Take the answer on screen back (the user says it is wrong)."""
        self._call(self._retract_front)

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
        self._warm_done = asyncio.Event()
        warm = loop.create_task(self._warm_up())
        try:
            loop.call_soon(self._ready.set)
            loop.run_forever()
        finally:
            self._ready.set()
            warm.cancel()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _warm_up(self) -> None:
        """Build the client and warm it; a question asked meanwhile waits for this.

        Waiting costs nothing a cold request would not pay anyway (the connection), and
        the embedded server serves one request at a time: a question racing the priming
        request would interrupt it and be interrupted in turn.
        """
        assert self._warm_done is not None
        try:
            await self._build_and_warm_client()
        finally:
            self._warm_done.set()
            self.warmed.set()

    async def _build_and_warm_client(self) -> None:
        try:
            self._client = await asyncio.get_running_loop().run_in_executor(None, self._client_factory)
        except LlmError as exc:  # said once a question needs the client; captions go on
            self._client_error = exc
            self._emit(StatusEvent(t=self._clock.now(), stage="llm", message=str(exc)))
            return
        try:
            await self._client.start()
            if self._prime_cache:
                self._emit(StatusEvent(t=self._clock.now(), stage="llm",
                                       message=f"{self._model} is reading the prompt (once, a few seconds)"))
                await self._ping_cache()  # the first question then pays only for itself
                self._emit(StatusEvent(t=self._clock.now(), stage="llm", message=f"{self._model} is ready"))
            elif self._cache_pings_enabled():
                await self._ping_cache()
        except LlmError as exc:  # a status, not a wait: the first question says it again if it must
            self._emit(StatusEvent(t=self._clock.now(), stage="llm", message=f"warming up: {exc}"))
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
        elif isinstance(event, FinalEvent) and event.speaker == "candidate":
            self._on_candidate(event.text)
        elif isinstance(event, FinalEvent):
            self._on_final(event)
        elif isinstance(event, ResumedEvent):
            self._on_resumed(event)
        elif isinstance(event, LanguageEvent):
            self._on_language(event.language)

    def _turn(self, number: int) -> _Turn:
        if number not in self._turns:
            self._turns[number] = _Turn(number)
        return self._turns[number]

    def _on_speculate(self, event: SpeculateEvent) -> None:
        self._recall.question(self._prompt.recall, event.turn, event.text, guessed=True)
        if not self._low_latency.on:
            return
        turn = self._turn(event.turn)
        if turn.answer is not None or len(turn.speculations) >= self._settings.answer.max_speculations:
            return
        pending = [r for r in turn.speculations if r.awaits_verdict]
        if any(self._same(r.text, event.text) for r in pending):
            return  # the same question is already being answered (or was, in full)
        for old in pending:
            self._stop(old, Cancel())
        turn.speculations.append(self._send(turn, event.text, "speculative"))

    def _on_final(self, event: FinalEvent) -> None:
        turn = self._turn(event.turn)
        if turn.answer is not None and turn.question is not None and self._same(turn.question, event.text):
            return  # the same final again (a continuation that came to nothing)
        self._recall.question(self._prompt.recall, turn.number, event.text, guessed=False)
        turn.question = event.text
        self._last_turn = turn
        self._finish_previous_answers(turn.number)
        usable = [r for r in turn.speculations if r.awaits_verdict]
        candidate = usable[-1] if usable else None
        if candidate is not None:
            verdict = self._strategy.reuse(candidate.text, event.text, fillers=self._fillers, tags=self._tags)
            if verdict.same:
                turn.answer = candidate
                self._apply(candidate, Hit(verdict.similarity))
                return
            self._stop(candidate, Miss(verdict.similarity))
        for other in turn.speculations:
            if other is not candidate and not other.settled:
                self._stop(other, Cancel())
        turn.answer = self._send(turn, event.text, "final")

    def _finish_previous_answers(self, current: int) -> None:
        """A new question supersedes older ones: their unconfirmed guesses stop."""
        for number, turn in self._turns.items():
            if number < current and turn.answer is None:
                for request in turn.speculations:
                    if not request.settled:
                        self._stop(request, Cancel())

    def _on_written(self, number: int, text: str, images: tuple[bytes, ...]) -> None:
        """A written question is confirmed as it is asked: no guess, straight to the answer."""
        turn = self._turn(number)
        turn.question, turn.written = text, images
        self._last_turn = turn
        self._finish_previous_answers(number)
        turn.answer = self._send(turn, text, "final")

    def _on_candidate(self, said: str) -> None:
        """Only the interviewer asks: the candidate's words are context for what follows."""
        if self._last_turn is not None:
            self._prompt.record_candidate(said, key=self._last_turn.number)

    def _on_language(self, language: str) -> None:
        """An ``auto`` session settled its language: answer in it, with its own prefix."""
        prompt = self._prompts(language)
        if prompt.language == self._prompt.language:
            return
        for turn in self._prompt.turns:
            prompt.record_turn(turn.question, turn.answer, key=turn.key)
        self._prompt = prompt
        self._cache_key = cache_key(self._session_id, prompt.prefix_messages())

    def _on_resumed(self, event: ResumedEvent) -> None:
        """The interviewer went on: the answer to the first half is no answer any more."""
        turn = self._turns.get(event.turn)
        if turn is None or turn.answer is None:
            return
        answer, turn.answer = turn.answer, None
        turn.speculations = [answer]  # a guess again: the whole question decides
        if self._front is answer:
            self._front = None
        self._apply(answer, Continued())
        self._prompt.forget_turn(turn.number)

    def _retract_front(self) -> None:
        """The user withdrew the answer on screen: it stops, and leaves the prompt's history."""
        request = self._front
        if request is None:
            return
        self._stop(request, Withdraw())
        self._prompt.forget_turn(request.turn)

    def _regenerate(self) -> None:
        """Ask the newest question again: a new request of the same turn."""
        turn = self._last_turn
        if turn is None or turn.question is None:
            return
        turn.answer = self._send(turn, turn.question, "regenerate")

    def _cancel_all(self) -> None:
        for turn in self._turns.values():
            for request in [*turn.speculations, *([turn.answer] if turn.answer else [])]:
                if not request.settled:
                    self._stop(request, Cancel())

    async def _cancel_all_async(self) -> None:
        self._cancel_all()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)

    # --- requests ------------------------------------------------------------------------

    def _send(self, turn: _Turn, text: str, kind: RequestKind) -> AnswerHandle:
        request = AnswerHandle.new(next(self._ids), turn.number, kind, text, self._ledger)
        if self._one_at_a_time and self._front is not None and self._front.turn < turn.number:
            self._cut_front()
        task = asyncio.get_running_loop().create_task(self._stream(request))
        request.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return request

    def _apply(self, request: AnswerHandle, trigger: Trigger) -> None:
        """Move an answer and emit what the move says; the one way answers change.

        One answer is on screen at a time: before an answer shows a fragment or is shown
        again, the one in front (if still streaming) is cut short.
        """
        before = request.state
        for event in request.transition(trigger, self._clock.now()):
            if isinstance(event, TokenEvent | RestoredEvent) and self._front is not request:
                self._cut_front()
                self._front = request
            self._emit(event)
        if request.state is not before and request.state in _ANSWERED:
            self._record(request)

    def _stop(self, request: AnswerHandle, trigger: Cancel | Miss | Cut | Withdraw) -> None:
        """Stop a request now (its HTTP stream closes, so the server stops generating).

        A guess that never showed is wasted spend; an answer the user stopped keeps what
        was shown and ends its block like any other answer.
        """
        if request.task and not request.task.done():
            request.task.cancel()
        if self._front is request:
            self._front = None
        self._apply(request, trigger)

    def _cut_front(self) -> None:
        """The answer on screen stops where it is (its text stays), if still streaming."""
        front = self._front
        if front is not None and front.accepts(Cut):
            self._stop(front, Cut())

    async def _stream(self, request: AnswerHandle) -> None:
        turn = self._turns.get(request.turn)
        if turn is not None and turn.written is not None:
            await self._stream_written(request, turn.written)
            return
        messages = self._prompt.messages(request.text)
        self._apply(request, Sent(estimate_tokens(messages)))
        try:
            client = await self._client_for_request()
            # A guess gets no re-send or hedge: the confirmed question has its own budget.
            shape = self._prompt.reply_shape  # the bundled model's: three bullets, no loops
            await self._stream_into(request, client, messages, shape,
                                    shape.tokens(self._settings.llm.max_tokens),
                                    extra=self._prompt.sampling(request.text), cache_key=self._cache_key)
        except LlmError as exc:
            # A guess fails silently: the question, once confirmed, is asked again and its
            # failure is the one message, after the question it belongs to.
            self._apply(request, Fail(str(exc)))
            return
        self._apply(request, Complete())

    async def _stream_written(self, request: AnswerHandle, images: tuple[bytes, ...]) -> None:
        """A question from the screen, with its images when the setting sends them; a model
        that refuses images is asked again with the text alone, and the refusal is named."""
        images = images if self._settings.screen.send_image else ()
        messages = written_messages(request.text, images)
        tokens = max(self._settings.llm.max_tokens, WRITTEN_MAX_TOKENS)
        self._apply(request, Sent(estimate_tokens(messages)))
        try:
            client = await self._client_for_request()
            try:
                await self._stream_into(request, client, messages, WRITTEN_SHAPE, tokens)
            except LlmError as exc:
                if not images or request.received:
                    raise
                self._emit(StatusEvent(t=self._clock.now(), stage="answer",
                                       message=f"the model did not take the image ({exc}): answered "
                                               "from the text read on this machine"))
                text_only = written_messages(request.text)
                await self._stream_into(request, client, text_only, WRITTEN_SHAPE, tokens)
        except LlmError as exc:
            self._apply(request, Fail(str(exc)))
            return
        self._apply(request, Complete())

    async def _stream_into(self, request: AnswerHandle, client: AnswerClient, messages: Sequence[Message],
                           shape: ReplyShape, max_tokens: int, *, extra: Mapping[str, Any] | None = None,
                           cache_key: str | None = None) -> None:
        """One streamed request: its fragments move ``request`` (shown once it is confirmed)."""
        stream = shape.wrap(client.stream_chat(
            messages, max_tokens=max_tokens, temperature=self._settings.llm.temperature,
            prompt_cache_key=cache_key, extra=extra,
            extra_requests=0 if request.kind == "speculative" else 1))
        async with contextlib.aclosing(stream):
            async for item in stream:
                if isinstance(item, Delta):
                    self._apply(request, Received(item.text, item.timing))
                elif isinstance(item, Done):
                    request.usage = item.usage

    async def _client_for_request(self) -> AnswerClient:
        assert self._warm_done is not None
        await self._warm_done.wait()
        if self._client is None:
            raise self._client_error or LlmError("server", "no LLM client", retryable=False)
        return self._client

    def _record(self, request: AnswerHandle) -> None:
        """The prompt's history holds what the candidate saw, once per turn."""
        text = "".join(request.received)
        if text:
            self._prompt.record_turn(request.text, text, key=request.turn)

    def _same(self, a: str, b: str) -> bool:
        """The one "same question" rule (:func:`app.core.text.question_key`)."""
        return question_key(a, self._fillers, self._tags) == question_key(b, self._fillers, self._tags)

    # --- cache keep-alive ------------------------------------------------------------------

    def _cache_pings_enabled(self) -> bool:
        # OpenAI keeps prefixes cached long enough on its own and each ping costs money;
        # a local server keeps its KV cache in process (no URL yet: the embedded one).
        # Relays and others: ping.
        mode = self._settings.llm.cache_keepalive
        if mode != "auto":
            return mode == "on"
        base = self._base_url.lower()
        return bool(base) and remote_tactic(mode, base) and "api.openai.com" not in base

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

