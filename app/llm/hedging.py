"""The race for the first token: one request, and at most one more chance before it.

Before the first token a request gets at most ``spare`` (0 or 1) more attempt, silently:
a re-send after a failure a second try can cure (5xx, reset, a 429 after its
``Retry-After``), or — when no token came within ``first_token_timeout`` — a hedged
request on a fresh connection, raced against the stalled one.  Whichever streams first
wins and the other is closed.  Past that the caller gets one clear :class:`LlmError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping

import httpx2
import openai
from openai.types.chat import ChatCompletionChunk

from app.llm.chat import ChatRequest, Truncated
from app.llm.fields import OptionalFields
from app.llm.replies import asked_wait, chunk_choices
from app.llm.timing import Recorder
from app.llm.wording import Wording

log = logging.getLogger(__name__)

_RATE_LIMIT_BACKOFF_S = 1.0
"""Wait before re-sending a 429 that gives no hint: OpenAI's per-second windows reset
within about a second, and a longer wait costs the answer its usefulness."""


class Opened:
    """One request that reached its first token (or its end), with what it read so far."""

    def __init__(
        self,
        stream: openai.AsyncStream[ChatCompletionChunk],
        rec: Recorder,
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


class FirstTokenRace:
    """Sends a request and races at most one re-send or hedge for its first token."""

    def __init__(
        self,
        sdk: openai.AsyncOpenAI,
        hedge_sdk: Callable[[], openai.AsyncOpenAI],
        fields: OptionalFields,
        words: Wording,
        leaving: Callable[[], Callable[[], None]],
        *,
        model: str,
        first_token_timeout: float,
        rate_limit_max_wait: float,
    ) -> None:
        self._sdk = sdk
        self._hedge_sdk = hedge_sdk
        self._fields = fields
        self._words = words
        self._leaving = leaving
        self._model = model
        self._first_token_timeout = first_token_timeout
        self._rate_limit_max_wait = rate_limit_max_wait
        self.hedge_sdks: set[openai.AsyncOpenAI] = set()
        """The fresh connection pools of hedges still open (closed when their race ends)."""

    async def run(self, rec: Recorder, request: ChatRequest) -> Opened:
        """Race for the first token: the request, plus at most ``request.spare`` re-send or hedge.

        Each attempt runs as its own task up to its first token (or its end), so a
        stalled one can be raced by a hedge without being cancelled first: a slow-but-
        alive server still wins if it answers before the fresh connection does.
        """
        racers: dict[asyncio.Task[Opened], openai.AsyncOpenAI] = {}
        sent = 0
        deadline = 0.0
        last_exc: BaseException | None = None
        stalled = False

        def launch(hedge: bool) -> None:
            nonlocal sent, deadline
            sent += 1
            attempt_rec = rec if sent == 1 else Recorder(start=rec.start)
            sdk = self._sdk
            if hedge:  # a fresh connection: the stalled one may be the problem (or a bad relay node)
                sdk = self._hedge_sdk()
                self.hedge_sdks.add(sdk)
            task = asyncio.get_running_loop().create_task(
                self._attempt(attempt_rec, sdk, request),
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
                    if sent <= request.spare:
                        log.info("no first token after %.1f s: hedging on a fresh connection",
                                 self._first_token_timeout)
                        launch(hedge=True)
                        continue
                    break
                # a success wins over a failure that landed in the same wake-up
                for task in sorted(done, key=lambda t: t.exception() is not None):
                    exc = task.exception()
                    if exc is None:
                        opened = task.result()
                        opened.attempts = sent
                        opened.rec.attempts = sent
                        del racers[task]
                        return opened
                    last_exc = exc
                    if not reissue_ok(exc):
                        raise self._words.failed(exc, attempts=sent) from exc
                    if any(not t.done() for t in racers):
                        continue  # the other racer may still answer
                    if sent > request.spare:
                        raise self._words.failed(exc, attempts=sent) from exc
                    wait, asked = self._resend_delay(exc)
                    if wait is None:
                        raise self._words.failed(exc, attempts=sent, retry_after=asked) from exc
                    log.info("re-sending after %.2f s after failure before first token: %r", wait, exc)
                    if wait > 0:
                        await asyncio.sleep(wait)
                    launch(hedge=False)
            if stalled or last_exc is None:
                raise self._words.not_answering(time.perf_counter() - rec.start, sent)
            raise self._words.failed(last_exc, attempts=sent) from last_exc
        finally:
            await self._cancel_racers(racers)

    async def _cancel_racers(self, racers: Mapping[asyncio.Task[Opened], openai.AsyncOpenAI]) -> None:
        """Stop the losers: cancel the pending, close what the finished ones opened."""
        for task in racers:
            task.cancel()
        for task, sdk in racers.items():
            with contextlib.suppress(Exception, asyncio.CancelledError):
                opened = await task
                await opened.close()
            if sdk is not self._sdk:
                await self.close_hedge(sdk)
        current = asyncio.current_task()
        if racers and current is not None and current.cancelling():
            # Our own cancel arrived while a loser was awaited and was swallowed with
            # the loser's: the caller asked to stop, so stop.
            raise asyncio.CancelledError

    async def close_hedge(self, sdk: openai.AsyncOpenAI) -> None:
        self.hedge_sdks.discard(sdk)
        with contextlib.suppress(Exception):
            await sdk.close()

    async def _attempt(self, rec: Recorder, sdk: openai.AsyncOpenAI, request: ChatRequest) -> Opened:
        """One request, read up to its first content token, its finish, or its end."""
        stream = await self._fields.open(sdk, self._model, request, rec, self._leaving)
        opened = Opened(stream, rec, sdk)
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
                raise Truncated(opened.content_type, len(opened.buffered))
            return opened
        except BaseException:
            await opened.close()
            raise

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


def reissue_ok(exc: BaseException) -> bool:
    """Failures before the first token that a second attempt can cure."""
    if isinstance(exc, Truncated):
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
