"""Keeping connections warm, so a question never pays for TCP and TLS.

* :meth:`Warmer.warm` opens ``target`` connections at once with ``GET /models`` (which
  also proves the key and base URL work).  Not ``HEAD``: several servers and proxies
  answer HEAD with ``Connection: close``, leaving nothing warm.
* Cancelling a stream closes its HTTP/1.1 connection (that is how the server learns to
  stop generating and billing), so every cancel is followed by a background re-warm
  (:meth:`Warmer.schedule`), and a spare connection means the next request never waits
  for it.
* Idle connections are refreshed every ``rewarm_idle_s`` seconds (:meth:`Warmer.keep`),
  before httpx2's ``keepalive_expiry`` would drop them and before typical server idle
  time-outs.
* ``rewarm=False`` turns both off, for the embedded llama.cpp server: a loopback
  connection costs a fraction of a millisecond, and that server answers ``/models``
  under the lock of its completions, so a warm-up would only queue behind the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

import httpx2
import openai

from app.llm.errors import LlmError
from app.llm.timing import Recorder, traced
from app.llm.wording import Wording

log = logging.getLogger(__name__)


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


class Warmer:
    """The warm pool of one client's SDK: warm-ups, re-warms and the idle refresh."""

    def __init__(
        self,
        sdk: openai.AsyncOpenAI,
        words: Wording,
        *,
        target: int,
        rewarm: bool,
        rewarm_idle_s: float | None,
        cancel_grace_s: float,
    ) -> None:
        self._sdk = sdk
        self._words = words
        self._connect_timeout = words.connect_timeout
        self._target = target
        self._rewarm = rewarm
        self.rewarm_idle = rewarm_idle_s
        """Seconds between idle refreshes; None = none."""
        self.cancel_grace = cancel_grace_s
        self.loop: asyncio.AbstractEventLoop | None = None
        """The client's loop, once bound: background warm-ups run there."""
        self.closed = False
        self.models: list[str] | None = None
        """What the last good warm-up listed."""
        self._leaving = 0
        self._entered = asyncio.Event()
        self._entered.set()
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self._keeper: asyncio.Task[None] | None = None
        self._last = 0.0
        self.count = 0
        """Completed warm-ups (start, after cancels/failures, idle refreshes): for tests."""
        self.last_error: LlmError | None = None
        """Why the last warm-up failed (None after a good one): a status to show, not raise."""

    # --- chat requests about to take a connection --------------------------------------

    def leaving(self) -> Callable[[], None]:
        """A chat request is about to take a pooled connection; returns what to call once
        it has (a warm-up waits meanwhile, so it never steals the idle one)."""
        self._leaving += 1
        return self._took_connection

    def _took_connection(self) -> None:
        self._leaving -= 1
        if self._leaving <= 0:
            self._leaving = 0
            self._entered.set()

    # --- warming ---------------------------------------------------------------------

    async def warm(self, *, validate: bool) -> None:
        """``GET /models`` on ``target`` connections at once.

        Each response is held open until every request holds a connection: an HTTP/1.1
        connection with an unfinished response cannot be shared, so the requests are
        guaranteed to land on different connections (idle ones get their keep-alive clock
        reset, missing ones are opened) even when one finishes before the next is sent.
        Not until the new ones have connected: the idle ones would be held for a whole
        connection set-up, and a chat request sent meanwhile would open a cold one.
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
            self._last = time.monotonic()
            err = self._words.check_unanswered()
            self.last_error = err
            raise err from None
        self._last = time.monotonic()
        for result in results:
            if isinstance(result, BaseException):
                if isinstance(result, asyncio.CancelledError):
                    raise result
                err = self._words.failed(result)
                self.last_error = err
                raise err from result
            self.models = result
        self.last_error = None
        self.count += 1

    async def _warm_one(self, gate: _Gate) -> list[str]:
        timeout = httpx2.Timeout(self._connect_timeout)
        rec = Recorder()
        rec.on_connection = gate.arrive
        try:
            with traced(rec):
                async with self._sdk.models.with_streaming_response.list(timeout=timeout) as resp:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(gate.wait(), self._connect_timeout)
                    page = await resp.parse()
                    return [m.id for m in page.data]
        finally:
            if rec.on_connection is not None:  # one that never got a connection must not
                rec.on_connection = None       # keep the others waiting
                gate.arrive()

    async def ensure_warm(self) -> None:
        """Top the pool up now; waits for chat requests that are about to take a connection
        so the warm-up never steals the idle one they were going to use."""
        while self._leaving:
            self._entered.clear()
            await self._entered.wait()
        try:
            await self.warm(validate=False)
        except LlmError as exc:  # background: remembered, never raised at the UI
            self.last_error = exc
            log.info("re-warm failed: %s", exc.message)

    def schedule(self) -> None:
        """Re-warm in the background after a connection was closed (coalesced: one
        warm-up at a time, one queued)."""
        if not self._rewarm or self.closed or self.loop is None or self.loop.is_closed():
            return
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = self.loop.create_task(self._warm_soon(self.cancel_grace), name="llm-rewarm")

    async def _warm_soon(self, grace: float) -> None:
        # A cancel is usually followed at once by the request that replaces it; let that
        # one take the spare connection before warm-up traffic occupies it.
        if grace > 0:
            await asyncio.sleep(grace)
        while True:
            self._again = False
            await self.ensure_warm()
            if not self._again or self.closed:
                return

    def keep(self) -> None:
        """Start the idle refresh, if there is one and it is not running yet."""
        if self.rewarm_idle is not None and self._keeper is None and not self.closed:
            self._keeper = asyncio.get_running_loop().create_task(self._keep_warm(), name="llm-keep-warm")

    async def _keep_warm(self) -> None:
        assert self.rewarm_idle is not None
        while not self.closed:
            due = self._last + self.rewarm_idle - time.monotonic()
            if due > 0:
                await asyncio.sleep(due)
                continue
            if self._task is not None and not self._task.done():
                await asyncio.wait([self._task])
                continue
            await self.ensure_warm()
            if self.last_error is not None:  # server down: don't spin
                self._last = time.monotonic()

    async def aclose(self) -> None:
        self.closed = True
        tasks = [t for t in (self._keeper, self._task) if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
