"""An OpenAI-compatible HTTP/1.1 server for tests and benchmarks, with latency and faults.

The client's latency tricks (pre-warming, connection reuse, cancelling, re-issuing) are
all about what happens on the wire, so they can only be tested against a real socket
that behaves like a provider: keep-alive, chunked SSE with ``data: [DONE]`` in its own
write, per-connection set-up cost, provider-style prompt caching, and the ways real
streams break (resets, truncation, stalls, error statuses with ``Retry-After``, relays that
accept a connection and never answer, lines that are not JSON, binary bytes, strict relays
that reject unknown request fields).  Mocked transports would hide exactly the bugs this
layer exists to avoid.

The server runs its own event loop in a daemon thread, so a test's loop (the client's)
and the server never share a scheduler: a blocked client cannot make the server look
slow, and vice versa.  ``python -m devtools.fake_server --profile relay`` runs it as a
separate process for benchmarks.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import itertools
import json
import re
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

FaultKind = Literal[
    "status",  # answer with ``status`` and an OpenAI-style JSON error body
    "reset_before",  # abort the TCP connection (RST) before any token
    "reset_after",  # abort the TCP connection after ``after_tokens`` tokens
    "truncate",  # close the socket (FIN) after ``after_tokens`` tokens: no [DONE], no 0-chunk
    "end_early",  # end the HTTP body cleanly after ``after_tokens`` tokens, without finish/[DONE]
    "stall",  # stop sending after ``after_tokens`` tokens and keep the socket open
    "head_close",  # answer the next HEAD with ``Connection: close`` and close the socket
    "hang",  # read the request, never answer, keep the socket open (a relay that hangs)
    "garbage",  # after ``after_tokens`` tokens, a ``data:`` line that is not JSON
    "binary",  # after ``after_tokens`` tokens, raw binary bytes (not UTF-8, not SSE)
    "say",  # the answer is ``message`` (escape sequences and all), then a normal end
    "endless",  # ignore max_tokens: ``size`` tokens of answer (an endpoint that never stops)
    "huge_line",  # after ``after_tokens`` tokens, one SSE line of ``size`` bytes of content
    "raw",  # the body is ``payload`` as it is, in HTTP chunks cut at ``splits``
]
Endpoint = Literal["chat", "models", "head"]


@dataclass(frozen=True, slots=True)
class Profile:
    """Latency of a simulated provider.

    ``connect_delay`` stands for TCP+TLS set-up: loopback connects in microseconds, so the
    cost is charged as a delay before the first request of each new connection is served.
    """

    connect_delay: float = 0.0
    queue_delay: float = 0.0
    """Before the response headers of a chat request (load balancer, queueing)."""
    ttft: float = 0.0
    """After the headers, before the first token (prompt processing)."""
    tokens_per_s: float = 0.0
    """0 = send all tokens back to back."""
    answer_tokens: int = 20
    idle_timeout: float | None = None
    """Close keep-alive connections idle this long (like nginx/uvicorn); None = never."""
    keep_alive: bool = True
    """False: answer every request with ``Connection: close`` and close the socket (a
    proxy or relay with keep-alive off, e.g. nginx ``keepalive_timeout 0``)."""
    reject_params: tuple[str, ...] = ()
    """Request-body keys answered with 400 (servers that don't know stream_options…)."""
    reject_style: Literal["param", "message", "detail", "opaque"] = "param"
    """How a rejected key is reported: OpenAI's 400 with ``param`` set; a 400 naming it
    only in the message (most relays); a 422 FastAPI/pydantic ``detail`` list; a 400 that
    does not say which key ("Invalid request body")."""
    hang: bool = False
    """Accept every connection, read every request, never answer: a hung relay."""
    refuse_images: bool = False
    """Answer a request with an ``image_url`` content part with OpenAI's 400 for a model
    that does not take images (a text-only model behind a vision-capable API)."""


PROFILES: dict[str, Profile] = {
    "instant": Profile(),
    "relay": Profile(
        connect_delay=0.230, queue_delay=0.050, ttft=0.200, tokens_per_s=50.0, answer_tokens=60
    ),
    # SmolLM2-135M (Q4_1) under llama-cpp-python 0.3.36, 2 threads, measured on the CI
    # machine: ~45 ms to the first token of a short prompt once the model is warm, ~90
    # tokens/s decoding; uvicorn closes idle keep-alive sockets after 5 s.
    "local": Profile(
        connect_delay=0.0005,
        queue_delay=0.020,
        ttft=0.025,
        tokens_per_s=90.0,
        answer_tokens=60,
        idle_timeout=5.0,
    ),
}


@dataclass(slots=True)
class Fault:
    """A misbehaviour for the next matching request(s).

    ``match`` restricts it to chat requests whose last user message contains the text;
    ``times`` is how many matching requests it applies to before it is used up.
    """

    kind: FaultKind
    status: int = 500
    after_tokens: int = 0
    match: str | None = None
    times: int = 1
    endpoint: Endpoint = "chat"
    message: str | None = None
    retry_after: str | None = None
    """``Retry-After`` header of a ``status`` fault: seconds ("2") or an HTTP date."""
    payload: bytes | None = None
    """What a ``garbage``/``binary`` fault sends (default: a built-in sample); a ``raw``
    fault's whole body."""
    size: int = 10 * 2**20
    """A ``huge_line`` fault's line in bytes (sent in 64 KiB writes, never held whole); an
    ``endless`` fault's answer in tokens (set it: the default is for lines)."""
    splits: tuple[int, ...] = ()
    """Where a ``raw`` body is cut into HTTP chunks (offsets into ``payload``)."""

    def __post_init__(self) -> None:
        if self.kind == "head_close":
            self.endpoint = "head"


@dataclass(slots=True)
class RequestRecord:
    """What the server saw of one request (the Authorization header is never kept)."""

    method: str
    path: str
    connection_id: int
    headers: dict[str, str]
    body: Any = None
    status: int = 0
    tokens_sent: int = 0
    finished: bool = False
    """The response was sent completely (through [DONE] and the last chunk)."""
    cancelled: bool = False
    """The client disconnected before the response was complete."""
    fault: FaultKind | None = None
    started: float = 0.0
    ended: float | None = None
    """``time.monotonic()`` when the response ended or the disconnect was seen."""


# --- deterministic text ------------------------------------------------------------

_WORD = re.compile(r"\w+|[^\w\s]")
_FILLER_TEXT = (
    "and so the short answer is that it depends on the context but in practice "
    "I would start simple measure first and then improve the parts that matter most"
)
_FILLER = tuple(_FILLER_TEXT.split(" "))


def count_tokens(text: str) -> list[str]:
    """A crude tokenizer (words and punctuation): stable, fast, good enough for caching."""
    return _WORD.findall(text)


def prompt_tokens(messages: Sequence[Any]) -> list[str]:
    """The token list of a chat prompt, including a role marker per message."""
    tokens: list[str] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        tokens.append(f"<|{message.get('role', 'user')}|>")
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        tokens.extend(count_tokens(str(content or "")))
    return tokens


def last_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def answer_tokens(question: str, n: int) -> list[str]:
    """The answer to ``question``: "Answer to: <question words> <filler…>", n tokens."""
    words = ["Answer", "to:", *question.split()]
    words += [_FILLER[i % len(_FILLER)] for i in range(max(0, n - len(words)))]
    return [w if i == 0 else " " + w for i, w in enumerate(words[:n])]


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# --- the server ----------------------------------------------------------------------


class _Disconnected(Exception):
    """The client went away while we were sending."""


class _Conn:
    """One accepted TCP connection: buffered reads and disconnect detection."""

    def __init__(self, cid: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.id = cid
        self.reader = reader
        self.writer = writer
        self.buf = b""
        self.eof = False
        self.requests = 0

    async def fill(self) -> bool:
        data = await self.reader.read(65536)
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    async def read_head(self, idle_timeout: float | None) -> bytes | None:
        while b"\r\n\r\n" not in self.buf:
            if self.eof:
                return None
            try:
                if idle_timeout is not None and not self.buf:
                    got = await asyncio.wait_for(self.fill(), idle_timeout)
                else:
                    got = await self.fill()
            except (TimeoutError, ConnectionError):
                return None
            if not got:
                return None
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        return head

    async def read_body(self, length: int) -> bytes:
        while len(self.buf) < length:
            if not await self.fill():
                raise _Disconnected
        body, self.buf = self.buf[:length], self.buf[length:]
        return body

    async def send(self, data: bytes) -> None:
        if self.eof or self.writer.is_closing():
            raise _Disconnected
        self.writer.write(data)
        try:
            await self.writer.drain()
        except ConnectionError as exc:
            raise _Disconnected from exc

    async def send_chunk(self, data: bytes) -> None:
        await self.send(b"%x\r\n%s\r\n" % (len(data), data))

    def abort(self) -> None:
        """Close with RST (SO_LINGER 0), like a crashed proxy or a dropped NAT entry."""
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()


class FakeServer:
    """OpenAI-compatible server on 127.0.0.1 in its own thread; see the module docstring.

    ``api_key=None`` accepts any key.  ``faults`` may be appended to from any thread; the
    observability accessors return snapshots and are thread-safe.
    """

    def __init__(
        self,
        profile: Profile | str = "instant",
        *,
        api_key: str | None = "test-key",
        models: Sequence[str] = ("gpt-4o-mini", "fake-model"),
        port: int = 0,
    ) -> None:
        self.profile: Profile = PROFILES[profile] if isinstance(profile, str) else profile
        self.api_key = api_key
        self.models = list(models)
        self.faults: list[Fault] = []
        self._port = port
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self._accepted = 0
        self._open: dict[int, _Conn] = {}
        self._conn_ids = itertools.count(1)
        self._last_prompt: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.base_url = ""

    # --- lifecycle ---------------------------------------------------------------

    def start(self) -> str:
        if self._thread is not None:
            return self.base_url
        self._thread = threading.Thread(target=self._run, name="fake-llm-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10) or self._error is not None:
            raise RuntimeError(f"fake server did not start: {self._error}")
        return self.base_url

    def stop(self) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(10)
        self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def set_profile(self, **changes: Any) -> None:
        """Change latency/behaviour at run time (applies to the next request)."""
        with self._lock:
            self.profile = dataclasses.replace(self.profile, **changes)

    # --- observability -------------------------------------------------------------

    @property
    def connections_accepted(self) -> int:
        with self._lock:
            return self._accepted

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._open)

    def requests(self, path: str | None = None, method: str | None = None) -> list[RequestRecord]:
        """Snapshot of the requests seen so far, optionally filtered by path suffix/method."""
        with self._lock:
            out = [dataclasses.replace(r, headers=dict(r.headers)) for r in self._records]
        if path is not None:
            out = [r for r in out if r.path.endswith(path)]
        if method is not None:
            out = [r for r in out if r.method == method]
        return out

    def chat_requests(self) -> list[RequestRecord]:
        return self.requests("/chat/completions", "POST")

    def reset_stats(self) -> None:
        with self._lock:
            self._records.clear()
            self._accepted = 0

    def wait_for(self, predicate: Callable[[FakeServer], bool], timeout: float = 30.0) -> bool:
        """Poll ``predicate(server)`` until true or ``timeout``: for assertions on
        things that happen on the server thread after the client has moved on."""
        deadline = time.monotonic() + timeout
        while True:
            if predicate(self):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    # --- server thread -------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # reported to start()
            self._error = exc
            self._ready.set()
        finally:
            loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", self._port)
        port = server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        tasks: set[asyncio.Task[None]] = set()
        self._tasks = tasks
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            with self._lock:
                conns = list(self._open.values())
            for conn in conns:
                conn.writer.transport.abort()
            if tasks:
                await asyncio.wait(list(tasks), timeout=0.5)
            for task in list(tasks):
                task.cancel()
            if tasks:
                await asyncio.wait(list(tasks), timeout=1.0)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Conn(next(self._conn_ids), reader, writer)
        with self._lock:
            self._accepted += 1
            self._open[conn.id] = conn
        try:
            while True:
                head = await conn.read_head(self.profile.idle_timeout)
                if head is None:
                    break
                keep = await self._serve_one(conn, head)
                if not keep:
                    break
        except (_Disconnected, ConnectionError):
            pass
        except asyncio.CancelledError:
            # Only stop() cancels handlers; ending quietly keeps asyncio's stream
            # callback from logging a CancelledError per open connection.
            pass
        finally:
            with self._lock:
                self._open.pop(conn.id, None)
            if not writer.transport.is_closing():
                writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve_one(self, conn: _Conn, head: bytes) -> bool:
        """Serve one request; False = close the connection afterwards."""
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, _version = lines[0].split(" ", 2)
        except ValueError:
            await conn.send(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return False
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body_bytes = await conn.read_body(int(headers.get("content-length", "0") or 0))
        path = target.split("?", 1)[0]
        auth = headers.pop("authorization", "")
        record = RequestRecord(
            method=method,
            path=path,
            connection_id=conn.id,
            headers=headers,
            started=time.monotonic(),
        )
        if body_bytes:
            try:
                record.body = json.loads(body_bytes)
            except ValueError:
                record.body = body_bytes.decode("utf-8", "replace")
        with self._lock:
            self._records.append(record)
        conn.requests += 1
        if conn.requests == 1 and self.profile.connect_delay > 0:
            await asyncio.sleep(self.profile.connect_delay)
        keep_alive = self.profile.keep_alive and headers.get("connection", "").lower() != "close"
        if self.profile.hang:
            return await self._hang(conn, record)

        if method == "HEAD":
            fault = self._take_fault("head", "")
            if fault is not None:
                record.fault = fault.kind
                await self._respond(conn, record, 200, b"", keep_alive=False, head_only=True)
                return False
            await self._respond(conn, record, 200, b"", keep_alive=keep_alive, head_only=True)
            return keep_alive

        if not self._authorized(auth):
            key = auth.removeprefix("Bearer ").strip()
            body = _error_body(
                f"Incorrect API key provided: {key}. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                "invalid_api_key",
            )
            await self._respond(conn, record, 401, body, keep_alive=keep_alive)
            return keep_alive

        if method == "GET" and path.rstrip("/").endswith("/models"):
            fault = self._take_fault("models", "")
            if fault is not None and fault.kind == "hang":
                return await self._hang(conn, record)
            if fault is not None and fault.kind == "status":
                record.fault = fault.kind
                await self._status_fault(conn, record, fault, keep_alive)
                return keep_alive
            data = {
                "object": "list",
                "data": [
                    {"id": m, "object": "model", "created": 1700000000, "owned_by": "fake"}
                    for m in self.models
                ],
            }
            await self._respond(conn, record, 200, json.dumps(data).encode(), keep_alive=keep_alive)
            return keep_alive

        if method == "POST" and path.rstrip("/").endswith("/chat/completions"):
            return await self._chat(conn, record, keep_alive)

        body = _error_body(f"Unknown path {method} {path}", "invalid_request_error", None)
        await self._respond(conn, record, 404, body, keep_alive=keep_alive)
        return keep_alive

    async def _hang(self, conn: _Conn, record: RequestRecord) -> bool:
        """Say nothing until the client gives up (its EOF ends the wait)."""
        record.fault = "hang"
        while await conn.fill():
            pass
        record.cancelled = True
        record.ended = time.monotonic()
        return False

    def _authorized(self, auth: str) -> bool:
        if self.api_key is None:
            return True
        return auth == f"Bearer {self.api_key}"

    def _take_fault(self, endpoint: Endpoint, question: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.endpoint != endpoint:
                    continue
                if fault.match is not None and fault.match not in question:
                    continue
                fault.times -= 1
                if fault.times <= 0:
                    self.faults.remove(fault)
                return fault
        return None

    async def _respond(
        self,
        conn: _Conn,
        record: RequestRecord,
        status: int,
        body: bytes,
        *,
        keep_alive: bool,
        head_only: bool = False,
        content_type: str = "application/json",
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        reason = _REASONS.get(status, "OK")
        extra = "".join(f"{k}: {v}\r\n" for k, v in (extra_headers or {}).items())
        head = (
            f"HTTP/1.1 {status} {reason}\r\n"
            f"{extra}"
            f"Content-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n"
            f"x-request-id: req_{len(self._records)}\r\n\r\n"
        ).encode()
        record.status = status
        await conn.send(head if head_only else head + body)
        record.finished = True
        record.ended = time.monotonic()

    async def _status_fault(
        self, conn: _Conn, record: RequestRecord, fault: Fault, keep_alive: bool
    ) -> None:
        kinds = {429: "requests", 401: "invalid_request_error", 400: "invalid_request_error"}
        codes = {429: "rate_limit_exceeded", 401: "invalid_api_key"}
        message = fault.message or {
            429: "Rate limit reached for requests. Please try again in 20ms.",
            401: "Incorrect API key provided.",
        }.get(fault.status, "The server had an error while processing your request.")
        body = _error_body(
            message, kinds.get(fault.status, "server_error"), codes.get(fault.status)
        )
        extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else None
        await self._respond(
            conn, record, fault.status, body, keep_alive=keep_alive, extra_headers=extra
        )

    async def _reject_param(
        self, conn: _Conn, record: RequestRecord, param: str, keep_alive: bool
    ) -> None:
        style = self.profile.reject_style
        status = 400
        if style == "param":
            body = _error_body(
                f"Unrecognized request argument supplied: {param}",
                "invalid_request_error",
                "unknown_parameter",
                param=param,
            )
        elif style == "message":
            body = _error_body(
                f"Unrecognized request argument supplied: {param}", "invalid_request_error", None
            )
        elif style == "detail":
            status = 422
            detail = [{"type": "extra_forbidden", "loc": ["body", param],
                       "msg": "Extra inputs are not permitted", "input": None}]
            body = json.dumps({"detail": detail}).encode()
        else:
            body = _error_body("Invalid request body", "invalid_request_error", None)
        await self._respond(conn, record, status, body, keep_alive=keep_alive)

    async def _chat(self, conn: _Conn, record: RequestRecord, keep_alive: bool) -> bool:
        req = record.body if isinstance(record.body, dict) else {}
        messages = req.get("messages") or []
        question = last_user_text(messages)
        profile = self.profile
        for param in profile.reject_params:
            if param in req:
                await self._reject_param(conn, record, param, keep_alive)
                return keep_alive
        if profile.refuse_images and has_image(messages):
            body = _error_body("Invalid content type. image_url is only supported by certain models.",
                               "invalid_request_error", None, "messages.[1].content.[1].type")
            await self._respond(conn, record, 400, body, keep_alive=keep_alive)
            return keep_alive
        model = req.get("model")
        if model not in self.models:
            body = _error_body(
                f"The model `{model}` does not exist or you do not have access to it.",
                "invalid_request_error",
                "model_not_found",
            )
            await self._respond(conn, record, 404, body, keep_alive=keep_alive)
            return keep_alive

        fault = self._take_fault("chat", question)
        record.fault = fault.kind if fault else None
        if fault is not None and fault.kind == "hang":
            return await self._hang(conn, record)
        if profile.queue_delay > 0:
            await asyncio.sleep(profile.queue_delay)
        if fault is not None and fault.kind == "status":
            await self._status_fault(conn, record, fault, keep_alive)
            return keep_alive
        if fault is not None and fault.kind == "reset_before":
            record.cancelled = False
            record.ended = time.monotonic()
            conn.abort()
            return False

        ptokens = prompt_tokens(messages)
        with self._lock:
            common = _common_prefix(ptokens, self._last_prompt)
            self._last_prompt = ptokens
        cached = common if common >= 1024 else 0
        limit = req.get("max_completion_tokens") or req.get("max_tokens") or 10**9
        n = min(profile.answer_tokens, int(limit))
        finish = "length" if int(limit) < profile.answer_tokens else "stop"
        tokens = answer_tokens(question, n)
        if fault is not None and fault.kind == "say":
            tokens, finish = re.findall(r"\s*\S+\s*?", fault.message or "") or [""], "stop"
        elif fault is not None and fault.kind == "endless":
            tokens, finish = answer_tokens(question, fault.size), "length"
        usage = {
            "prompt_tokens": len(ptokens),
            "completion_tokens": len(tokens),
            "total_tokens": len(ptokens) + len(tokens),
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }
        cid = f"chatcmpl-fake{record.connection_id}x{len(self._records)}"
        created = int(time.time())

        if not req.get("stream"):
            if profile.ttft > 0:
                await asyncio.sleep(profile.ttft)
            if profile.tokens_per_s > 0:
                await asyncio.sleep(len(tokens) / profile.tokens_per_s)
            data = {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "".join(tokens)},
                        "finish_reason": finish,
                    }
                ],
                "usage": usage,
            }
            record.tokens_sent = len(tokens)
            await self._respond(conn, record, 200, json.dumps(data).encode(), keep_alive=keep_alive)
            return keep_alive

        include_usage = bool((req.get("stream_options") or {}).get("include_usage"))
        return await self._stream(
            conn, record, keep_alive, fault, tokens, finish, usage if include_usage else None,
            {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model},
        )

    async def _stream(
        self,
        conn: _Conn,
        record: RequestRecord,
        keep_alive: bool,
        fault: Fault | None,
        tokens: list[str],
        finish: str,
        usage: dict[str, Any] | None,
        base: dict[str, Any],
    ) -> bool:
        profile = self.profile
        record.status = 200
        head = (
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: text/event-stream; charset=utf-8\r\n"
            "Cache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
        ).encode()
        # A client that goes away mid-stream is seen at once: EOF on the read side
        # (HTTP/1.1 clients send nothing while a response is in flight).
        watcher = asyncio.create_task(conn.fill())
        delay = 1.0 / profile.tokens_per_s if profile.tokens_per_s > 0 else 0.0

        def event(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            chunk = {
                **base,
                "system_fingerprint": "fp_fake",
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
                ],
            }
            if usage is not None:
                chunk["usage"] = None
            return b"data: " + json.dumps(chunk).encode() + b"\n\n"

        async def pause(seconds: float) -> None:
            if seconds <= 0:
                await asyncio.sleep(0)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(watcher), seconds)
            if _client_gone(watcher):
                raise _Disconnected

        cut_at = fault.after_tokens if fault is not None and fault.kind not in ("say", "endless") else None
        try:
            await conn.send(head)
            if fault is not None and fault.kind == "raw":
                return await self._raw_body(conn, record, fault)
            await pause(profile.ttft)
            await conn.send_chunk(event({"role": "assistant", "content": "", "refusal": None}))
            for i, token in enumerate(tokens):
                if cut_at is not None and i == cut_at:
                    break
                if i > 0:
                    await pause(delay)
                await conn.send_chunk(event({"content": token}))
                record.tokens_sent += 1
            else:
                cut_at = None
            if fault is not None and cut_at is not None:
                return await self._cut_stream(conn, record, fault, watcher)
            await conn.send_chunk(event({}, finish))
            if usage is not None:
                chunk = {**base, "system_fingerprint": "fp_fake", "choices": [], "usage": usage}
                await conn.send_chunk(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            await conn.send_chunk(b"data: [DONE]\n\n")
            # The end of the body in its own write, as real servers do: a client that
            # stops reading at [DONE] leaves this in the socket and must drain it.
            await asyncio.sleep(0)
            await conn.send(b"0\r\n\r\n")
            record.finished = True
            record.ended = time.monotonic()
            return keep_alive
        except _Disconnected:
            record.cancelled = True
            record.ended = time.monotonic()
            conn.eof = True
            return False
        finally:
            if not watcher.done():
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await watcher

    async def _cut_stream(
        self, conn: _Conn, record: RequestRecord, fault: Fault, watcher: asyncio.Task[bool]
    ) -> bool:
        record.ended = time.monotonic()
        if fault.kind == "reset_after":
            conn.abort()
            return False
        if fault.kind == "truncate":
            conn.writer.close()
            return False
        if fault.kind == "end_early":
            await conn.send(b"0\r\n\r\n")
            return True
        if fault.kind == "huge_line":
            await self._huge_line(conn, fault.size)
            await conn.send_chunk(b"data: [DONE]\n\n")
            await conn.send(b"0\r\n\r\n")
            return False
        if fault.kind in ("garbage", "binary"):
            sample = _GARBAGE if fault.kind == "garbage" else _BINARY
            await conn.send_chunk(fault.payload if fault.payload is not None else sample)
            await conn.send_chunk(b"data: [DONE]\n\n")
            await conn.send(b"0\r\n\r\n")
            return True
        # stall: keep the socket open and silent until the client gives up
        with contextlib.suppress(Exception):
            await asyncio.shield(watcher)
        record.cancelled = True
        record.ended = time.monotonic()
        return False


    @staticmethod
    async def _huge_line(conn: _Conn, size: int) -> None:
        """One ``data:`` line whose content delta is ``size`` bytes, in 64 KiB writes: a
        broken or hostile endpoint that never ends its line.  Never held whole here, so a
        test can measure what the client holds."""
        await conn.send_chunk(b'data: {"choices": [{"index": 0, "delta": {"content": "')
        piece = b"x" * 65536
        while size > 0:
            await conn.send_chunk(piece if size >= len(piece) else piece[:size])
            size -= len(piece)
        await conn.send_chunk(b'"}, "finish_reason": null}]}\n\n')

    async def _raw_body(self, conn: _Conn, record: RequestRecord, fault: Fault) -> bool:
        """The body exactly as ``fault.payload`` says, cut into chunks at ``fault.splits``."""
        body = fault.payload or b""
        cuts = [0, *sorted(c for c in fault.splits if 0 < c < len(body)), len(body)]
        for start, end in itertools.pairwise(cuts):
            if end > start:
                await conn.send_chunk(body[start:end])
                await asyncio.sleep(0)
        await conn.send(b"0\r\n\r\n")
        record.finished = True
        record.ended = time.monotonic()
        return False


_GARBAGE = b'data: {"id": "chatcmpl-x", "choices": [{"delta": {"content": "unterminated\n\n'
"""A ``data:`` line cut mid-JSON, as a buggy relay that splits events sends."""
_BINARY = b"\x1f\x8b\x08\x00\xff\xfe\x00binary\x89PNG\x00\x00\n\n"
"""Bytes that are not UTF-8 text: a gzip body a proxy forgot to decode."""


def _client_gone(watcher: asyncio.Task[bool]) -> bool:
    if not watcher.done():
        return False
    return watcher.cancelled() or watcher.exception() is not None or not watcher.result()


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


def has_image(messages: Sequence[Any]) -> bool:
    """Does any message carry an ``image_url`` content part?"""
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "image_url"
                                             for p in content):
            return True
    return False


def _error_body(message: str, kind: str, code: str | None, param: str | None = None) -> bytes:
    return json.dumps(
        {"error": {"message": message, "type": kind, "param": param, "code": code}}
    ).encode()


# --- CLI -------------------------------------------------------------------------------


def serve(argv: Sequence[str] | None = None) -> int:
    """Run a fake server in this process until SIGINT/SIGTERM; prints the base URL."""
    parser = argparse.ArgumentParser(prog="python -m devtools.fake_server")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="instant")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--api-key", default="test-key", help='"" accepts any key')
    parser.add_argument("--answer-tokens", type=int, default=None)
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile]
    if args.answer_tokens is not None:
        profile = dataclasses.replace(profile, answer_tokens=args.answer_tokens)
    server = FakeServer(profile, api_key=args.api_key or None, port=args.port)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print(server.start(), flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]))
