"""How much one answer's stream may make the client hold: one SSE event, one answer.

The OpenAI SDK reads a stream "without imposing a line or event size limit", and nothing
else stopped an endpoint that kept streaming: a broken relay or a hostile server could
send one endless line (buffered whole before it is parsed) or an answer that never ends,
until the app ran out of memory or the window froze under the text.  Two bounds, each
ending the answer with one clear :class:`~app.llm.errors.LlmError` and the text so far
kept:

* :data:`MAX_SSE_EVENT_BYTES` on one SSE event (its lines, counted before the SDK buffers
  them): :class:`GuardedOpenAI` gives the SDK a decoder that counts;
* :func:`answer_cap` on one answer's characters: :class:`AnswerText` collects the answer
  where the client turns chunks into deltas.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator

import openai
from openai._streaming import ServerSentEvent, SSEDecoder

from app.llm.errors import LlmError

MAX_SSE_EVENT_BYTES = 2**20
"""One SSE event (all its lines) at most 1 MiB.  A provider's event is one chunk of JSON:
~250 bytes for a token (id, model, fingerprint, the delta), a few KB for the usage chunk,
a tool call's arguments or a reasoning summary.  1 MiB is hundreds of times the largest
seen and still bounds what one unended line can make the client hold."""

CHARS_PER_TOKEN = 16
"""Characters one token may stand for, generously: English averages ~4 a token, code
and other languages fewer (CJK ~1-2); the longest tokens (runs of spaces or dashes in
code) reach 16 and more only rarely.  4x the English average, so an honest answer
that spends its whole ``max_tokens`` stays far below the cap."""

MIN_ANSWER_CHARS = 4096
"""The cap's floor: a one-token keep-alive ping answered by a server that ignores
``max_tokens`` with a short sentence is no reason for an error."""


def answer_cap(max_tokens: int) -> int:
    """The most characters one answer asked for with ``max_tokens`` may bring."""
    return max(MIN_ANSWER_CHARS, max_tokens * CHARS_PER_TOKEN)


class StreamTooLarge(LlmError):
    """An SSE event passed :data:`MAX_SSE_EVENT_BYTES` without ending."""

    def __init__(self, limit: int = MAX_SSE_EVENT_BYTES) -> None:
        super().__init__(
            "bad_stream",
            f"The stream was stopped: one SSE event from the endpoint passed {_size(limit)} without "
            "ending, where a provider's are a few KB — the endpoint or a proxy in between is broken. "
            "What arrived of the answer is kept.",
            retryable=False,
        )
        self.limit = limit


class AnswerTooLong(LlmError):
    """The answer passed :func:`answer_cap` characters: the endpoint kept streaming."""

    def __init__(self, cap: int, max_tokens: int) -> None:
        super().__init__(
            "stream_cut",
            f"The answer was cut at {cap:,} characters: the endpoint kept streaming past what "
            f"max_tokens {max_tokens} allows (at most {CHARS_PER_TOKEN} characters a token). "
            "What arrived is kept; ask again to regenerate.",
            retryable=False,
            partial=True,
        )
        self.cap = cap


class AnswerText:
    """The fragments of one answer, refusing the one that would pass :func:`answer_cap`.

    What was accepted stays (it is on screen); the refused fragment raises
    :class:`AnswerTooLong`, so the client stops reading and closes the stream.
    """

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.cap = answer_cap(max_tokens)
        self.chars = 0
        self._fragments: list[str] = []

    def append(self, fragment: str) -> None:
        if self.chars + len(fragment) > self.cap:
            raise AnswerTooLong(self.cap, self.max_tokens)
        self.chars += len(fragment)
        self._fragments.append(fragment)

    def __iter__(self) -> Iterator[str]:
        return iter(self._fragments)

    def __len__(self) -> int:
        return len(self._fragments)


_LINE_END = re.compile(rb"[\r\n]")


class EventSizeGuard:
    """Counts the bytes of the SSE event being received, lines as the SDK splits them.

    A line ends at CR, LF or CRLF (a CRLF split across two reads is one end, as the SDK
    reads it); an empty line ends the event.  :meth:`feed` raises
    :class:`StreamTooLarge` as soon as the event's line bytes (terminators not counted)
    pass ``limit``: before the SDK has buffered more than ``limit`` plus one read.
    """

    def __init__(self, limit: int = MAX_SSE_EVENT_BYTES) -> None:
        self.limit = limit
        self._event = 0
        """Bytes of the event's finished lines."""
        self._line = 0
        """Bytes of the line being received."""
        self._skip_lf = False

    def feed(self, chunk: bytes) -> None:
        start = 0
        for match in _LINE_END.finditer(chunk):
            end = match.start()
            if self._skip_lf and end == start and chunk[end] == 0x0A:
                self._skip_lf = False  # the LF of a CRLF
                start = end + 1
                continue
            self._skip_lf = chunk[end] == 0x0D
            line = self._line + end - start
            self._line = 0
            self._event = 0 if line == 0 else self._event + line
            self._check(self._event)
            start = end + 1
        if start < len(chunk):
            self._skip_lf = False
            self._line += len(chunk) - start
            self._check(self._event + self._line)

    def _check(self, size: int) -> None:
        if size > self.limit:
            raise StreamTooLarge(self.limit)


class BoundedSSEDecoder(SSEDecoder):
    """The SDK's SSE decoder, fed through an :class:`EventSizeGuard`."""

    def __init__(self, limit: int = MAX_SSE_EVENT_BYTES) -> None:
        super().__init__()
        self.limit = limit

    def iter_bytes(self, iterator: Iterator[bytes]) -> Iterator[ServerSentEvent]:
        guard = EventSizeGuard(self.limit)

        def checked() -> Iterator[bytes]:
            for chunk in iterator:
                guard.feed(chunk)
                yield chunk

        return super().iter_bytes(checked())

    async def aiter_bytes(self, iterator: AsyncIterator[bytes]) -> AsyncIterator[ServerSentEvent]:
        guard = EventSizeGuard(self.limit)

        async def checked() -> AsyncIterator[bytes]:
            async for chunk in iterator:
                guard.feed(chunk)
                yield chunk

        async for event in super().aiter_bytes(checked()):
            yield event


class GuardedOpenAI(openai.AsyncOpenAI):
    """The SDK's client, reading streams through :class:`BoundedSSEDecoder`.

    ``_make_sse_decoder`` is the SDK's own hook for the decoder its streams use; the bytes
    it is fed are the decoded body (after any gzip), so the bound holds whatever the
    transfer encoding.
    """

    def _make_sse_decoder(self) -> SSEDecoder:
        return BoundedSSEDecoder()


def _size(limit: int) -> str:
    if limit >= 2**20 and limit % 2**20 == 0:
        return f"{limit // 2**20} MB"
    return f"{limit:,} bytes"
