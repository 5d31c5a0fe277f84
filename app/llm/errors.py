"""The one error type the LLM layer raises, phrased for the person at the keyboard.

Every failure of a request ends up as an :class:`LlmError` whose ``kind`` lets the caller
decide what to do (retry, show a settings hint, keep a partial answer, wait
``retry_after`` seconds) and whose message says what happened and how to fix it.  Messages
are built from server replies, which can echo credentials back (OpenAI's 401 quotes the
key it was given), so every message passes through :func:`app.platform.redact.redact`.
"""

from __future__ import annotations

from typing import Literal

from app.platform.redact import redact

ErrorKind = Literal[
    "auth",
    "not_found",
    "rate_limit",
    "server",
    "network",
    "timeout",
    "not_answering",
    "bad_stream",
    "stream_cut",
    "bad_request",
]
"""``timeout``: connect time-out, or the stream stalled after text arrived (text kept).
``not_answering``: no first token within the first-token deadline, hedge included.
``bad_stream``: the reply is not an OpenAI-compatible SSE stream (garbage, binary)."""

_RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "network", "timeout", "not_answering"})


class LlmError(Exception):
    """A failed LLM request or set-up step.

    ``retryable`` says whether sending the same request again could succeed without the
    user changing anything (rate limits, 5xx, network blips); auth, not-found and bad
    requests need a fix first, and a cut stream must not be re-sent blindly because part
    of the answer is already on screen.

    ``retry_after`` is the wait in seconds the server asked for (``Retry-After`` on a 429
    or 503), already capped, or None; ``partial`` is True when text had been yielded
    before the failure (it is kept on screen); ``attempts`` counts the HTTP requests
    sent (re-send and hedge included); ``host`` is the display form of the endpoint.
    """

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        retryable: bool | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        partial: bool = False,
        attempts: int = 1,
        host: str = "",
    ) -> None:
        self.kind: ErrorKind = kind
        self.message: str = redact(message)
        self.retryable: bool = kind in _RETRYABLE if retryable is None else retryable
        self.status: int | None = status
        self.retry_after: float | None = retry_after
        self.partial: bool = partial
        self.attempts: int = attempts
        self.host: str = host
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"LlmError(kind={self.kind!r}, retryable={self.retryable}, message={self.message!r})"
