"""How much of an HTTP body the app reads: a cap on everything but an answer's stream.

A models list, Ollama's tags, the identity proof and every error body are read whole
before they are parsed (the SDK's ``models.list()``, ``response.json()``, an
``APIStatusError``'s message).  An endpoint whose ``/models`` never ended took ``doctor``
past 1 GB, and a headless listen past 2 GB in 12 s.  So each client the app builds gets a
response hook (:func:`async_hook`, :func:`sync_hook`) that refuses a body declared or
grown past :data:`MAX_BODY_BYTES` with one :class:`BodyTooLarge`; the one exception is a
chat completion's event stream, bounded per event and per answer by :mod:`app.llm.limits`.
A hook rather than a transport, so a client that reaches a remote endpoint through the
environment's proxy (a mount of its own) is capped too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2

from app.llm.errors import LlmError
from app.platform.redact import display_url

MAX_BODY_BYTES = 8 * 2**20
"""8 MiB.  The largest body an endpoint honestly sends here is a models list: OpenRouter's,
every model with its description and prices, is ~1-2 MB; an error or Ollama's tags are a
few KB.  Four times the largest, and a bound on what a body that never ends can cost."""


class BodyTooLarge(LlmError):
    """A response body passed :data:`MAX_BODY_BYTES`."""

    def __init__(self, url: str, limit: int = MAX_BODY_BYTES) -> None:
        super().__init__(
            "bad_stream",
            f"{display_url(url)} sent more than {limit // 2**20} MiB where a models list or an error is a "
            "few KB; the rest was not read — the endpoint (or a proxy in between) is broken, or the base "
            "URL is not an OpenAI-compatible API.",
            retryable=False,
        )


def _exempt(response: httpx2.Response) -> bool:
    """An answer's event stream: bounded by app.llm.limits, as it may rightly be long."""
    kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return (response.is_success and kind == "text/event-stream"
            and response.request.url.path.rstrip("/").endswith("/chat/completions"))


def _check_length(response: httpx2.Response, limit: int) -> None:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(str(response.request.url), limit)


class _Capped(httpx2.AsyncByteStream, httpx2.SyncByteStream):
    """``stream``'s chunks, until they add up past ``limit``: then :class:`BodyTooLarge`."""

    def __init__(self, stream: Any, url: str, limit: int) -> None:
        self._stream = stream
        self._url = url
        self._limit = limit
        self._seen = 0

    def _count(self, chunk: bytes) -> bytes:
        self._seen += len(chunk)
        if self._seen > self._limit:
            raise BodyTooLarge(self._url, self._limit)
        return chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield self._count(chunk)

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._stream:
            yield self._count(chunk)

    async def aclose(self) -> None:
        await self._stream.aclose()

    def close(self) -> None:
        self._stream.close()

    def __getattr__(self, name: str) -> Any:  # the client's own stream keeps its timings
        return getattr(self._stream, name)


def cap(response: httpx2.Response, limit: int = MAX_BODY_BYTES) -> None:
    """Make ``response``'s body (not read yet) refuse more than ``limit`` bytes."""
    if _exempt(response):
        return
    _check_length(response, limit)
    response.stream = _Capped(response.stream, str(response.request.url), limit)


async def async_hook(response: httpx2.Response) -> None:
    """``event_hooks={"response": [async_hook]}`` for an ``httpx2.AsyncClient``."""
    cap(response)


def sync_hook(response: httpx2.Response) -> None:
    """``event_hooks={"response": [sync_hook]}`` for an ``httpx2.Client``."""
    cap(response)

