"""The API key: where it is looked up, where it is stored, and keeping it out of logs.

Lookup order, first hit wins: an explicit key from the caller (``--api-key``,
``--api-key-file``, ``--api-key -``); ``INTERVIEW_COPILOT_API_KEY``, for any server;
``OPENAI_API_KEY``, only for ``https://api.openai.com`` or the endpoint in ``OPENAI_BASE_URL``
(scheme, host and port) and never for a server on this machine; then the OS keychain
(service ``interview-copilot``, username the base URL's origin, ``https://host`` or
``http://host:port``, so a key saved for one origin is never sent to another). A key saved
under a bare host is read for that host's ``https://`` default port.

Design notes: decision 0038.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

import keyring
import keyring.errors

from app.platform.loopback import is_loopback
from app.platform.redact import redact, register_secret

SERVICE = "interview-copilot"
APP_ENV_VAR = "INTERVIEW_COPILOT_API_KEY"
OPENAI_ENV_VAR = "OPENAI_API_KEY"
OPENAI_HOST = "api.openai.com"
OPENAI_ORIGIN = f"https://{OPENAI_HOST}"
_ENV_HINT = f"set {APP_ENV_VAR} in the environment or pass --api-key-file PATH instead"
_URL_HINT = "put the URL with its credentials in OPENAI_BASE_URL or pass --base-url instead"


class SecretStoreError(Exception):
    """The keychain could not be used; ``str()`` is a sentence for the user, without the key."""


DEFAULT_PORTS = {"https": 443, "http": 80}


def keychain_username(base_url: str | None) -> str:
    """The keychain entry name for a server: its origin, lower-case, the scheme's default port
    left out (``https://api.openai.com``, ``http://127.0.0.1:8080``), or "default".  A URL
    without a scheme is taken as https, as Settings completes it."""
    origin = _origin(base_url)
    if origin is None:
        return "default"
    scheme, host, port = origin
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" + ("" if port == DEFAULT_PORTS.get(scheme) else f":{port}")


def _origin(base_url: str | None) -> tuple[str, str, int] | None:
    """(scheme, host, port) of ``base_url``, or None when it names no host."""
    url = (base_url or "").strip()
    if not url:
        return None
    try:
        parts = urlsplit(url if "//" in url else f"https://{url}")
        host, port = parts.hostname, parts.port
    except ValueError:  # malformed, e.g. an unclosed IPv6 bracket or a port that is no number
        return None
    scheme = (parts.scheme or "https").lower()
    if not host:
        return None
    return scheme, host.lower(), port if port is not None else DEFAULT_PORTS.get(scheme, 0)


def _legacy_username(base_url: str | None) -> str | None:
    """Where earlier versions kept the key of ``base_url`` (the bare host), when that entry
    may serve it: only a host's ``https://`` default port, which is where they were used."""
    origin = _origin(base_url)
    if origin is None or origin[0] != "https" or origin[2] != DEFAULT_PORTS["https"]:
        return None
    return origin[1]


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
            register_secret(candidate.strip())
            return candidate.strip()
    openai_key = (env.get(OPENAI_ENV_VAR) or "").strip()
    if openai_key and reads_openai_env(base_url, env):
        register_secret(openai_key)
        return openai_key
    stored = _read(keychain_username(base_url), _legacy_username(base_url), "the API key", base_url)
    register_secret(stored)
    return stored or None


def reads_openai_env(base_url: str | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether :func:`get_api_key` honours ``OPENAI_API_KEY`` for ``base_url``: only for
    ``https://api.openai.com`` and the origin of ``OPENAI_BASE_URL``, never on loopback."""
    env = os.environ if environ is None else environ
    origin = keychain_username(base_url)
    if origin == "default" or is_loopback(base_url or ""):
        return False
    return origin in {OPENAI_ORIGIN, keychain_username(env.get("OPENAI_BASE_URL"))}


def key_hint(base_url: str | None, environ: Mapping[str, str] | None = None) -> str:
    """Where to put a valid key for ``base_url``, naming only sources that are read for it.

    For the 401/403 message: Settings (saved to the keychain under the origin) and this
    app's own variable work for any endpoint; ``OPENAI_API_KEY`` only where it is read.
    """
    origin = keychain_username(base_url)
    where = f"for {origin} " if origin != "default" else ""
    env = f"{APP_ENV_VAR}"
    if reads_openai_env(base_url, environ):
        env = f"{OPENAI_ENV_VAR} or {APP_ENV_VAR}"
    return (
        f"set a valid key {where}in Settings (saved in the system keychain), "
        f"or in {env}, or pass --api-key-file PATH"
    )


def set_api_key(base_url: str | None, key: str) -> None:
    """Store ``key`` for ``base_url``'s origin in the OS keychain."""
    key = key.strip()
    if not key:
        raise ValueError("the API key is empty")
    origin = keychain_username(base_url)
    _store(origin, key, "the API key", origin)


def delete_api_key(base_url: str | None) -> None:
    """Forget the stored key for ``base_url``'s origin (and an earlier version's entry that
    served it); nothing stored is not an error."""
    origin = keychain_username(base_url)
    for account in (origin, _legacy_username(base_url)):
        if account is not None:
            _forget(account, "the API key", origin)


# --- credentials in the base URL ----------------------------------------------------------


def split_url_credentials(url: str) -> tuple[str, str]:
    """``url`` without its user-info, and that user-info (``user:password`` or a token; "" if none).

    The user-info ends at the last "@" of the authority, as :mod:`app.platform.redact` reads
    it: a password may hold a raw "@".
    """
    text = url.strip()
    try:
        netloc = urlsplit(text).netloc
    except ValueError:  # malformed: left as typed, the caller's validation says why
        return text, ""
    userinfo, at, _host = netloc.rpartition("@")
    if not at:
        return text, ""
    return text.replace(f"{userinfo}@", "", 1), userinfo


def url_with_credentials(url: str | None) -> str | None:
    """``url`` with the credentials kept in the keychain for its host put back into it.

    A URL that carries user-info of its own keeps it. Raises :class:`SecretStoreError` when
    the keychain fails.
    """
    if not url or split_url_credentials(url)[1]:
        return url
    userinfo = get_url_credentials(url)
    scheme, sep, rest = url.strip().partition("://")
    return f"{scheme}{sep}{userinfo}@{rest}" if userinfo and sep else url


def get_url_credentials(base_url: str | None) -> str | None:
    """The user-info stored for ``base_url``'s origin, or None (registered for redaction)."""
    legacy = _legacy_username(base_url)
    stored = _read(_credentials_account(keychain_username(base_url)),
                   _credentials_account(legacy) if legacy is not None else None,
                   "the base URL's credentials", base_url, hint=_URL_HINT)
    if stored:
        user, colon, password = stored.partition(":")
        register_secret(password if colon else user)
    return stored or None


def set_url_credentials(base_url: str | None, userinfo: str) -> None:
    """Store the user-info of a base URL (``user:password`` or a token) for its origin."""
    if not userinfo:
        raise ValueError("the credentials are empty")
    origin = keychain_username(base_url)
    _store(_credentials_account(origin), userinfo, "the base URL's credentials", origin, hint=_URL_HINT)


def delete_url_credentials(base_url: str | None) -> None:
    """Forget the base URL credentials stored for ``base_url``'s origin, if any."""
    origin = keychain_username(base_url)
    for account in (origin, _legacy_username(base_url)):
        if account is not None:
            _forget(_credentials_account(account), "the base URL's credentials", origin, hint=_URL_HINT)


def _credentials_account(origin: str) -> str:
    return f"{origin} (base URL credentials)"


def _read(account: str, legacy: str | None, what: str, base_url: str | None, *,
          hint: str = _ENV_HINT) -> str | None:
    """The entry ``account``, else ``legacy`` (an earlier version's name for it), or None."""
    try:
        for name in (account, legacy):
            if name is not None and (stored := keyring.get_password(SERVICE, name)):
                return stored
    except Exception as exc:  # any backend failure: D-Bus, locked, no backend
        raise SecretStoreError(_describe(f"read {what} from", keychain_username(base_url), exc,
                                         hint=hint)) from None
    return None


def _store(account: str, secret: str, what: str, host: str, *, hint: str = _ENV_HINT) -> None:
    try:
        keyring.set_password(SERVICE, account, secret)
    except Exception as exc:
        raise SecretStoreError(_describe(f"save {what} to", host, exc, secret, hint=hint)) from None


def _forget(account: str, what: str, host: str, *, hint: str = _ENV_HINT) -> None:
    """Delete one entry; nothing stored is not an error."""
    try:
        if keyring.get_password(SERVICE, account) is None:
            return
        keyring.delete_password(SERVICE, account)
    except keyring.errors.PasswordDeleteError:
        return  # vanished between the check and the delete
    except Exception as exc:
        raise SecretStoreError(_describe(f"delete {what} from", host, exc, hint=hint)) from None


def _describe(action: str, host: str, exc: Exception, *secrets: str, hint: str = _ENV_HINT) -> str:
    if isinstance(exc, keyring.errors.NoKeyringError):
        why = "no keychain service is available on this system"
    elif isinstance(exc, keyring.errors.KeyringLocked):
        why = "the keychain is locked; unlock it and try again"
    else:
        detail = redact(str(exc), *secrets).strip().rstrip(".")
        why = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return f"Could not {action} the system keychain for {host} ({why}); {hint}."
