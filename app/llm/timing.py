"""Where the time of one request went: connect, TLS, headers, first byte, first token.

httpcore2 reports each step through its ``trace`` extension; the SDK offers no
per-request extensions, so an httpx2 request hook (:func:`inject_trace`) hands the trace
callback of the request the current task is sending, found through a context variable
set only around that send (:func:`traced`) — warm-up requests of other tasks are never
traced into it.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2


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


class Recorder:
    """Timing of one ``stream_chat`` call (one per attempt), fed by httpcore2's ``trace``."""

    def __init__(self, start: float | None = None) -> None:
        self.start = time.perf_counter() if start is None else start
        self.attempts = 0
        self.entered = True
        self.on_entered: Callable[[], None] | None = None
        self.on_connection: Callable[[], None] | None = None
        """Called once, at the first step httpcore2 traces: the pool has given the request
        its connection by then (a new one starts connecting, a pooled one sends headers)."""
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
        if self.on_connection is not None:
            connected, self.on_connection = self.on_connection, None
            connected()
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


_CURRENT: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar(
    "llm_request_recorder", default=None
)
"""The recorder of the chat request being sent by the current task."""


@contextlib.contextmanager
def traced(rec: Recorder) -> Iterator[None]:
    """Trace what the current task sends inside into ``rec``; the request counts as having
    reached its connection when this ends, whatever happened."""
    token = _CURRENT.set(rec)
    try:
        yield
    finally:
        _CURRENT.reset(token)
        rec.enter()


async def inject_trace(request: httpx2.Request) -> None:
    """httpx2 request hook: hand httpcore2 the current request's trace callback.

    A hook rather than a wrapping transport keeps httpx2's own transport selection
    (HTTP(S)_PROXY from the environment) intact; the SDK has no per-request extensions.
    """
    recorder = _CURRENT.get()
    if recorder is not None:
        request.extensions["trace"] = recorder.trace
        recorder.enter()
