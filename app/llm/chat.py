"""One chat request, and what its stream yields: the shapes every part of the client shares.

A request is one frozen :class:`ChatRequest`, built once by :meth:`LlmClient.stream_chat`;
each attempt (first send, re-send, hedge) reads the same one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.core.events import Usage
from app.llm.timing import RequestTiming

Message = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """What one streamed answer asks for; the same for every attempt at it."""

    messages: Sequence[Message]
    max_tokens: int
    temperature: float
    prompt_cache_key: str | None = None
    """Sent as ``prompt_cache_key`` while the server takes it (see :mod:`app.llm.fields`)."""
    extra: Mapping[str, Any] | None = None
    """Extra body fields, sent as they are."""
    spare: int = 1
    """Attempts beyond the first before the first token: 0 or 1 (a re-send or a hedge)."""

    @staticmethod
    def of(messages: Sequence[Message], *, max_tokens: int, temperature: float,
           prompt_cache_key: str | None = None, extra: Mapping[str, Any] | None = None,
           extra_requests: int = 1) -> ChatRequest:
        return ChatRequest(messages, max_tokens, temperature, prompt_cache_key, extra,
                           min(1, max(0, extra_requests)))


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


class Truncated(Exception):
    """The SSE stream ended without a finish_reason (server or proxy cut it)."""

    def __init__(self, content_type: str = "", events: int = 1) -> None:
        super().__init__("the stream ended without a finish_reason")
        self.content_type = content_type
        self.not_sse = events == 0 and bool(content_type) and "event-stream" not in content_type
        """Nothing parsed from a body that does not even claim to be SSE (an HTML page)."""


def usage_of(raw: Any) -> Usage:
    """The server's usage object (OpenAI's shape, cached tokens included when sent)."""
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
