"""The one place secrets are taken out of text, before anything is shown, logged or written.

Everything the app outputs — error messages, status lines, the session file, the events
stream, traces, ``doctor`` output, log records — passes through :func:`redact`, so a key
or a credential in a base URL cannot leak through one output that was forgotten.  It
removes registered secrets, URL credentials and anything shaped like one.  Design notes:
decision 0038.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit, urlunsplit

from app.core.terminal import printable

REDACTED = "***"
_MIN_SECRET = 4
"""Shorter registered secrets are ignored: removing "ab" everywhere would garble text."""

_lock = threading.Lock()
_registered: tuple[str, ...] = ()  # longest first, so a secret containing another goes whole

# A URL with a scheme, up to whitespace or a character that cannot end a URL in prose.
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s\"'<>`]+")
# (substrings one of which must be in the lower-cased text, pattern, replacement): the
# substring test skips most patterns for ordinary text, which is nearly all text.
_PATTERNS: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    # API keys: OpenAI/Anthropic-style (also partly masked ones such as "sk-abc1****xyz9"),
    # Google, GitHub, Hugging Face, Slack.
    (("sk-", "rk-", "pk-", "sess-"), re.compile(r"\b(?:sk|rk|pk|sess)-[A-Za-z0-9_\-*]{8,}"), REDACTED),
    (("aiza",), re.compile(r"\bAIza[A-Za-z0-9_\-]{20,}"), REDACTED),
    (
        ("gh", "github_pat_", "hf_", "xox"),
        re.compile(r"\b(?:gh[pousr]_|github_pat_|hf_|xox[abprs]-)[A-Za-z0-9_\-]{10,}"),
        REDACTED,
    ),
    # Authorization / Proxy-Authorization header values, keeping the scheme word.
    (
        ("authoriz",),
        re.compile(
            r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
            r"(?:(?:bearer|basic|token|digest|apikey)\s+)?)[^\s,;\"']+"
        ),
        rf"\1{REDACTED}",
    ),
    # A bearer token anywhere else ("Bearer abc…"); 8+ characters so prose survives.
    (("bearer",), re.compile(r"(?i)\b(bearer)\s+(?!\*\*\*)[A-Za-z0-9._~+/\-]{8,}=*"), rf"\1 {REDACTED}"),
    # key/value pairs: api_key=…, "api-key": "…", x-api-key: …, password=…, and token=…
    # (a "token" value needs 8+ characters: "first token: 250 ms" is a measurement).
    (
        ("key", "token", "secret", "pass", "pwd"),
        re.compile(
            r"(?i)\b((?:x-)?(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token"
            r"|id[_-]?token|secret|client[_-]?secret|password|passwd|pwd)[\"']?\s*[:=]\s*[\"']?)"
            r"(?!\*\*\*)[^\s,;\"'&#]+"
        ),
        rf"\1{REDACTED}",
    ),
    (
        ("token",),
        re.compile(r"(?i)\b(token[\"']?\s*[:=]\s*[\"']?)(?!\*\*\*)[^\s,;\"'&#]{8,}"),
        rf"\1{REDACTED}",
    ),
    # A query fragment outside a full URL: "?key=…", "&sig=…".
    (("=",), re.compile(r"([?&][A-Za-z0-9_.\-]+=)(?!\*\*\*)[^\s&#\"'<>]+"), rf"\1{REDACTED}"),
)


def register_secret(secret: str | None) -> None:
    """Remove ``secret`` from everything :func:`redact` sees from now on (thread-safe).

    Every form it can take in an output is registered (:func:`secret_forms`): a password
    typed into a base URL shows up encoded in the URL and decoded in a server's echo, and a
    key with a quote or a backslash reaches the session file JSON-escaped.
    """
    if not secret or len(secret.strip()) < _MIN_SECRET:
        return
    global _registered
    forms = secret_forms(secret.strip())
    with _lock:
        merged = set(_registered) | {f for f in forms if len(f) >= _MIN_SECRET}
        _registered = tuple(sorted(merged, key=len, reverse=True))


def secret_forms(secret: str) -> set[str]:
    """``secret`` as typed, URL-encoded (a path's and a form's way) and decoded, and each of
    those JSON-escaped (ASCII-only, as most encoders write, and as-is, as our own logs are)."""
    spelled = {secret, unquote(secret), quote(secret, safe=""), quote(secret), quote_plus(secret)}
    escaped = {json.dumps(form, ensure_ascii=ascii_only)[1:-1]
               for form in spelled for ascii_only in (True, False)}
    return spelled | escaped | {form.replace("/", "\\/") for form in escaped}


def register_url(url: str | None) -> None:
    """Register the credentials carried by ``url``: its password, its query values and the
    path segments shaped like a token (a relay's ``/k/TOKEN/v1``, :func:`secret_segment`).

    Not the user name (often "user" or "admin": removing it everywhere would garble text;
    :func:`redact` drops it from URLs anyway) and not short query values such as "json".
    """
    if not url:
        return
    try:
        parts = urlsplit(url.strip())
        register_secret(parts.password)
        for name, value in parse_qsl(parts.query, keep_blank_values=False):
            if len(value) >= 8 or _SECRET_NAME.search(name):
                register_secret(value)
        for segment in parts.path.split("/"):
            if secret_segment(segment):
                register_secret(segment)
    except ValueError:
        return


_SECRET_NAME = re.compile(r"(?i)key|token|secret|pass|pwd|sig|auth|cred|session")
_SEGMENT = re.compile(r"[A-Za-z0-9._~-]*")
_PIECE_SPLIT = re.compile(r"[._~-]")
_WORD_PIECE = re.compile(r"[a-z]*|[A-Z]*|[A-Z][a-z]*|[0-9]{1,8}|[A-Za-z0-9]{1,3}|v[0-9]+[a-z]*[0-9]*")
"""A piece of a path's word: a word in one case (or capitalised), a number of up to eight
digits (a date), a version (``v1beta1``), or a piece of up to three letters and digits
(``4o``, ``8b``)."""


def secret_segment(segment: str) -> bool:
    """Whether a URL path segment may be a credential: anything but the words of an API's
    path (``v1``, ``openai``, ``deployments``) and of deployment and model names, which are
    pieces of those shapes between ``-``, ``.``, ``_`` (``gpt-4o-mini-2024-07-18``,
    ``llama-3.1-8b-instruct``).  A token of any length mixes letters and digits, or cases,
    in one piece (``Zq3xK9mPa2Lr7Tb``, ``sk-proj-…``'s tail, a UUID), or holds a character
    a word does not (base64's ``+``, ``=``): it is one."""
    text = unquote(segment)
    if not _SEGMENT.fullmatch(text):
        return True
    return not all(_WORD_PIECE.fullmatch(piece) for piece in _PIECE_SPLIT.split(text))


def forget_secrets() -> None:
    """Drop every registered secret (tests; a new session with another key)."""
    global _registered
    with _lock:
        _registered = ()


def shown(text: str) -> str:
    """``text`` as it may leave the app for a person (a terminal, a banner, a status line):
    controls and escape sequences stripped (:func:`app.core.terminal.printable`), then
    secrets masked (a key split by an escape sequence is whole again once it is gone)."""
    return redact(printable(text))


def redact(text: str, *secrets: str | None) -> str:
    """``text`` without registered secrets, ``secrets``, URL credentials or key-shaped words."""
    if not text:
        return text
    extra = sorted({form for s in secrets if s and len(s.strip()) >= _MIN_SECRET
                    for form in secret_forms(s.strip()) if len(form) >= _MIN_SECRET}, key=len, reverse=True)
    text = _without(text, (*extra, *_registered))
    if "://" in text:
        text = _URL.sub(_redact_url_match, text)
    low = text.lower()
    for triggers, pattern, replacement in _PATTERNS:
        if any(t in low for t in triggers):
            text = pattern.sub(replacement, text)
    return text


def _without(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every occurrence of ``secrets`` (longest first) masked, again while a
    mask and its neighbours spell one anew (``"**" + secret + "**"`` for a secret of
    stars): each pass shortens the text, so this ends."""
    while True:
        found = False
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
                found = True
        if not found:
            return text


def redact_data(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings) with every string passed through :func:`redact`.

    For records written whole (session files, events lines): keys are kept, values redacted.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v) for v in value]
    return value


def display_url(url: str) -> str:
    """``url`` as shown to people: scheme, host, port and path; no user-info, no query, and
    no path segment shaped like a token (``https://relay.example/k/***/v1``)."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
    except ValueError:
        return "(invalid URL)"
    if not parts.scheme and not host:
        return redact(url.split("?", 1)[0])
    path = "/".join(REDACTED if secret_segment(s) else s for s in parts.path.rstrip("/").split("/"))
    return urlunsplit((parts.scheme, host, path, "", ""))


def display_host(url: str) -> str:
    """Only ``host[:port]`` of ``url`` (for short messages); the display URL if it has none."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        if host and parts.port is not None:
            host = f"{host}:{parts.port}"
    except ValueError:
        return "(invalid URL)"
    return host or display_url(url)


def _redact_url_match(match: re.Match[str]) -> str:
    url = match.group(0)
    scheme, sep, rest = url.partition("://")
    # User-info ends at the last "@" before the path: a password may contain a raw "@".
    authority_end = len(rest)
    for ch in "/?#":
        index = rest.find(ch)
        if index != -1:
            authority_end = min(authority_end, index)
    authority, tail = rest[:authority_end], rest[authority_end:]
    if "@" in authority:
        authority = f"{REDACTED}@" + authority.rsplit("@", 1)[1]
    if "?" in tail:
        path, _, query = tail.partition("?")
        query, hash_sep, fragment = query.partition("#")
        masked = "&".join(
            f"{item.split('=', 1)[0]}={REDACTED}" if "=" in item else item for item in query.split("&")
        )
        tail = f"{path}?{masked}{hash_sep}{fragment}"
    return f"{scheme}{sep}{authority}{tail}"


# --- logging ---------------------------------------------------------------------------


class RedactingFilter(logging.Filter):
    """Rewrites log records through :func:`redact`; never drops a record.

    Python applies a *logger's* filters only to records logged on that very logger, not to
    records propagating from child loggers, so :func:`install_redaction` also puts the
    filter on the root logger's handlers; handlers added later need ``addFilter`` too.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        for secret in secrets:
            register_secret(secret)

    def add_secret(self, secret: str | None) -> None:
        register_secret(secret)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # bad %-args: redact the raw parts instead of losing the record
            message = f"{record.msg} {record.args}"
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
            record.exc_info = None  # formatters would re-render the raw traceback from it
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def install_redaction(
    secrets: Iterable[str] = (), logger: logging.Logger | None = None
) -> RedactingFilter:
    """Attach one :class:`RedactingFilter` to ``logger`` (root by default) and its handlers.

    Installing again (each command line run in one process) reuses the filter already
    there and only adds it to handlers created since.
    """
    target = logger or logging.getLogger()
    log_filter = next((f for f in target.filters if isinstance(f, RedactingFilter)), None)
    if log_filter is None:
        log_filter = RedactingFilter()
        target.addFilter(log_filter)
    for secret in secrets:
        log_filter.add_secret(secret)
    for handler in target.handlers:
        if log_filter not in handler.filters:
            handler.addFilter(log_filter)
    return log_filter
