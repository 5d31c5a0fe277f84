"""What an OpenAI-compatible server said, read for the person at the keyboard.

Pure functions over SDK exceptions and raw bytes, kept apart from the client's
connection logic: the server's own error message, the request field a strict relay
rejected, how long a 429 asks to wait (``Retry-After`` in seconds or as an HTTP date,
``retry-after-ms``, OpenAI's "try again in 20ms"), and a safe rendering of bytes that
are not an SSE stream.  Everything shown passes through :func:`app.platform.redact.redact`.
"""

from __future__ import annotations

import contextlib
import email.utils
import errno
import json
import re
import time
from collections.abc import Sequence
from typing import Any

import openai

from app.platform.redact import redact

_RETRY_AFTER_MAX_S = 3600.0
"""Larger ``Retry-After`` values are clamped (a bogus date must not read as a day)."""


class NotAChunk(Exception):
    """A JSON event that is not a chat completion chunk (``data: 42``)."""

    def __init__(self, raw: str) -> None:
        super().__init__(raw)
        self.raw = raw


def server_message(exc: openai.APIStatusError) -> str:
    """The server's own words (``error.message``), at most 300 characters."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])[:300]
        if isinstance(body.get("message"), str):
            return str(body["message"])[:300]
    return (exc.message or exc.__class__.__name__)[:300]


def rejected_param(exc: openai.APIStatusError, candidates: Sequence[str]) -> str | None:
    """The request field a 400/422 names: OpenAI's ``param``, else its message or body
    (relays: "Unrecognized request argument supplied: X"; FastAPI: ``loc: [body, X]``)."""
    if exc.param in candidates:
        return exc.param
    text = f"{server_message(exc)} {exc.body!r} {exc.message}"
    return next((c for c in candidates if c in text), None)


_FIELD_WORDS = re.compile(
    r"(?i)unrecogni[sz]ed|unknown|unsupported|not (?:permitted|allowed|supported)|extra|"
    r"invalid (?:request|argument|param|field|body)|additional propert"
)


def about_fields(exc: openai.APIStatusError) -> bool:
    """Whether a 400/422 that names no field could be about one (worth one bare re-send)."""
    text = f"{server_message(exc)} {exc.body!r}"
    return exc.status_code == 422 or bool(_FIELD_WORDS.search(text))


def chunk_choices(chunk: Any) -> list[Any]:
    """A chunk's choices; raises :class:`NotAChunk` for JSON that is not a chunk."""
    choices = getattr(chunk, "choices", None)
    if isinstance(choices, list):
        return choices
    if choices is None and getattr(chunk, "usage", None) is not None:
        return []
    raise NotAChunk(repr(chunk))


def asked_wait(exc: openai.APIStatusError) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, ``Retry-After`` (seconds or an
    HTTP date), else OpenAI's "Please try again in 1.5s" / "in 20ms"; None when silent."""
    headers = exc.response.headers
    value: float | None = None
    with contextlib.suppress(ValueError, TypeError):
        if (ms := headers.get("retry-after-ms")) is not None:
            value = float(ms) / 1000
    raw = headers.get("retry-after")
    if value is None and raw:
        try:
            value = float(raw)
        except ValueError:
            with contextlib.suppress(TypeError, ValueError, IndexError):
                when = email.utils.parsedate_to_datetime(raw)
                value = when.timestamp() - time.time()
    if value is None:
        found = re.search(r"(?i)try again in (\d+(?:\.\d+)?)\s*(ms|s)\b", server_message(exc))
        if found:
            value = float(found.group(1)) / (1000 if found.group(2).lower() == "ms" else 1)
    if value is None or value != value:  # NaN
        return None
    return min(max(0.0, value), _RETRY_AFTER_MAX_S)


def seconds_text(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{round(value, 1):g}"


def not_a_stream(exc: BaseException) -> str | None:
    """The first bytes of what broke the SSE parser, shown safely; None if it wasn't that."""
    raw: bytes | str
    if isinstance(exc, json.JSONDecodeError):
        raw = exc.doc
    elif isinstance(exc, UnicodeDecodeError):
        raw = exc.object
    elif isinstance(exc, NotAChunk):
        raw = exc.raw
    else:
        return None
    return show_bytes(raw)


def show_bytes(raw: bytes | str, limit: int = 40) -> str:
    """``raw`` as printable ASCII (others as ``\\xNN``), cut at ``limit`` and redacted."""
    data = raw.encode("utf-8", "replace") if isinstance(raw, str) else bytes(raw)
    out = []
    for byte in data[:limit]:
        ch = chr(byte)
        out.append(ch if 32 <= byte < 127 and ch != "\\" else f"\\x{byte:02x}")
    text = "".join(out) + ("…" if len(data) > limit else "")
    return redact(f"'{text}'")


def describe(exc: BaseException) -> str:
    """The innermost useful cause, e.g. "ConnectionResetError: [Errno 104] …"."""
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    for item in reversed(seen):
        text = str(item)
        if text and not isinstance(item, openai.APIConnectionError):
            return redact(f"{type(item).__name__}: {text}")[:200]
    return type(exc).__name__


def refused(exc: BaseException) -> bool:
    cur: BaseException | None = exc
    for _ in range(8):
        if cur is None:
            return False
        if isinstance(cur, ConnectionRefusedError) or getattr(cur, "errno", None) == errno.ECONNREFUSED:
            return True
        if "refused" in str(cur).lower():
            return True
        cur = cur.__cause__ or cur.__context__
    return False
