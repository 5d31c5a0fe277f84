"""The API key: where it is looked up, where it is stored, and keeping it out of logs.

Lookup order, first hit wins:

1. an explicit key passed by the caller (the ``--api-key`` CLI flag): the user just typed it;
2. ``INTERVIEW_COPILOT_API_KEY``: this app's own variable, used for any server;
3. ``OPENAI_API_KEY``, but only for api.openai.com or the host in ``OPENAI_BASE_URL`` (the
   pair the OpenAI SDK uses), so a globally exported OpenAI key is never sent to another
   provider the user configured in Settings;
4. the OS keychain: service ``interview-copilot``, username = the base URL's host (or
   ``default`` when there is no base URL), so each server keeps its own key.

Environment beats keychain because setting a variable is a deliberate, per-shell override.
No error message from this module ever contains a key.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

import keyring
import keyring.errors

SERVICE = "interview-copilot"
APP_ENV_VAR = "INTERVIEW_COPILOT_API_KEY"
OPENAI_ENV_VAR = "OPENAI_API_KEY"
OPENAI_HOST = "api.openai.com"
REDACTED = "[REDACTED]"
_ENV_HINT = f"set {APP_ENV_VAR} in the environment or pass --api-key instead"


class SecretStoreError(Exception):
    """The keychain could not be used; ``str()`` is a sentence for the user, without the key."""


def keychain_username(base_url: str | None) -> str:
    """The keychain entry name for a server: its lower-case host, or "default"."""
    if not base_url or not base_url.strip():
        return "default"
    url = base_url.strip()
    try:
        host = urlsplit(url if "//" in url else f"//{url}").hostname
    except ValueError:  # malformed, e.g. an unclosed IPv6 bracket
        host = None
    return host.lower() if host else "default"


def get_api_key(
    base_url: str | None,
    *,
    explicit: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """The key to send to ``base_url`` (the effective URL actually requested), or None.

    Raises :class:`SecretStoreError` only when the keychain has to be consulted and fails.
    """
    env = os.environ if environ is None else environ
    for candidate in (explicit, env.get(APP_ENV_VAR)):
        if candidate and candidate.strip():
            return candidate.strip()
    openai_key = (env.get(OPENAI_ENV_VAR) or "").strip()
    host = keychain_username(base_url)
    if openai_key and host in {OPENAI_HOST, keychain_username(env.get("OPENAI_BASE_URL"))} - {
        "default"
    }:
        return openai_key
    try:
        stored = keyring.get_password(SERVICE, host)
    except Exception as exc:  # any backend failure: D-Bus, locked, no backend
        raise SecretStoreError(_describe("read the API key from", host, exc)) from None
    return stored or None


def set_api_key(base_url: str | None, key: str) -> None:
    """Store ``key`` for ``base_url``'s host in the OS keychain."""
    key = key.strip()
    if not key:
        raise ValueError("the API key is empty")
    host = keychain_username(base_url)
    try:
        keyring.set_password(SERVICE, host, key)
    except Exception as exc:
        raise SecretStoreError(_describe("save the API key to", host, exc, key)) from None


def delete_api_key(base_url: str | None) -> None:
    """Forget the stored key for ``base_url``'s host; nothing stored is not an error."""
    host = keychain_username(base_url)
    try:
        if keyring.get_password(SERVICE, host) is None:
            return
        keyring.delete_password(SERVICE, host)
    except keyring.errors.PasswordDeleteError:
        return  # vanished between the check and the delete
    except Exception as exc:
        raise SecretStoreError(_describe("delete the API key from", host, exc)) from None


def _describe(action: str, host: str, exc: Exception, *secrets: str) -> str:
    if isinstance(exc, keyring.errors.NoKeyringError):
        why = "no keychain service is available on this system"
    elif isinstance(exc, keyring.errors.KeyringLocked):
        why = "the keychain is locked; unlock it and try again"
    else:
        detail = redact(str(exc), secrets).strip().rstrip(".")
        why = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return f"Could not {action} the system keychain for {host} ({why}); {_ENV_HINT}."


# --- redaction ------------------------------------------------------------------------

_PATTERNS = (
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"), REDACTED),
    (re.compile(r"\b(Bearer)\s+[A-Za-z0-9._~+/\-]+=*", re.IGNORECASE), rf"\1 {REDACTED}"),
)


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every known secret and anything shaped like a key replaced.

    Known secrets go first, longest first, so a key that contains another is removed whole.
    """
    for secret in sorted({s.strip() for s in secrets if s and s.strip()}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RedactingFilter(logging.Filter):
    """Rewrites log records so no key reaches a handler; never drops a record.

    Python applies a *logger's* filters only to records logged on that very logger, not to
    records propagating from child loggers, so :func:`install_redaction` also puts the
    filter on the root logger's handlers; handlers added later need ``addFilter`` too.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._secrets: frozenset[str] = frozenset()
        for secret in secrets:
            self.add_secret(secret)

    def add_secret(self, secret: str | None) -> None:
        if secret and secret.strip():
            with self._lock:
                self._secrets = self._secrets | {secret.strip()}

    def redact(self, text: str) -> str:
        return redact(text, self._secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # bad %-args: redact the raw parts instead of losing the record
            message = f"{record.msg} {record.args}"
        record.msg, record.args = self.redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
            record.exc_info = None  # formatters would re-render the raw traceback from it
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


def install_redaction(
    secrets: Iterable[str] = (), logger: logging.Logger | None = None
) -> RedactingFilter:
    """Attach one :class:`RedactingFilter` to ``logger`` (root by default) and its handlers."""
    target = logger or logging.getLogger()
    log_filter = RedactingFilter(secrets)
    target.addFilter(log_filter)
    for handler in target.handlers:
        handler.addFilter(log_filter)
    return log_filter
