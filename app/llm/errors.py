"""The one error type the LLM layer raises, phrased for the person at the keyboard.

Every failure of a request ends up as an :class:`LlmError` whose ``kind`` lets the caller
decide what to do (retry, show a settings hint, keep a partial answer) and whose message
says what happened and how to fix it.  Messages are built from server replies, which can
echo credentials back (OpenAI's 401 quotes the key it was given), so everything that goes
into a message passes through :func:`redact` first.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

ErrorKind = Literal[
    "auth", "not_found", "rate_limit", "server", "network", "timeout", "stream_cut", "bad_request"
]

_RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "network", "timeout"})

# Things that look like credentials: OpenAI-style keys (also partially masked ones such as
# "sk-abc1***********xyz9"), bearer tokens and generic long tokens after "key"/"token".
_SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b(?:sk|rk|pk|sess)-[A-Za-z0-9_\-*]{4,}"),
    re.compile(r"(?i)\bbearer\s+[^\s,;\"']+"),
    re.compile(r"(?i)(authorization\s*[:=]\s*)[^\s,;\"']+"),
    re.compile(r"(?i)((?:api[_-]?key|token)\s*[:=]\s*)[^\s,;\"']+"),
)


class LlmError(Exception):
    """A failed LLM request or set-up step.

    ``retryable`` says whether sending the same request again could succeed without the
    user changing anything (rate limits, 5xx, network blips); auth, not-found and bad
    requests need a fix first, and a cut stream must not be re-sent blindly because part
    of the answer is already on screen.
    """

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        retryable: bool | None = None,
        status: int | None = None,
        secrets: tuple[str | None, ...] = (),
    ) -> None:
        self.kind: ErrorKind = kind
        self.message: str = redact(message, *secrets)
        self.retryable: bool = kind in _RETRYABLE if retryable is None else retryable
        self.status: int | None = status
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"LlmError(kind={self.kind!r}, retryable={self.retryable}, message={self.message!r})"


def redact(text: str, *secrets: str | None) -> str:
    """Remove the given secrets and anything credential-shaped from ``text``.

    The exact secrets are removed first (they may not match any pattern, e.g. a relay's
    custom token); the patterns catch keys the server quotes in a masked or altered form.
    """
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(_mask, text)
    return text


def _mask(match: re.Match[str]) -> str:
    """Keep a "Authorization: "/"token=" label (group 1), replace the secret."""
    return (match.group(1) if match.re.groups else "") + "***"


def display_url(url: str) -> str:
    """``url`` without user:password and query string, fit for an error message."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(invalid URL)"
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))
