"""The API key: where it is looked up, where it is stored, and keeping it out of logs.

Lookup order, first hit wins:

1. an explicit key passed by the caller (the ``--api-key`` CLI flag): the user just typed it;
2. ``INTERVIEW_COPILOT_API_KEY``: this app's own variable, used for any server;
3. ``OPENAI_API_KEY``, but only for api.openai.com or the host in ``OPENAI_BASE_URL`` (the
   pair the OpenAI SDK uses), so a globally exported OpenAI key is never sent to another
   provider the user configured in Settings;
4. the OS keychain: service ``interview-copilot``, username = the base URL's host (or
   ``default`` when there is no base URL), so each server keeps its own key.

Design notes: decision 0038.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

import keyring
import keyring.errors

from app.platform.redact import redact, register_secret

SERVICE = "interview-copilot"
APP_ENV_VAR = "INTERVIEW_COPILOT_API_KEY"
OPENAI_ENV_VAR = "OPENAI_API_KEY"
OPENAI_HOST = "api.openai.com"
_ENV_HINT = f"set {APP_ENV_VAR} in the environment or pass --api-key instead"
_URL_HINT = "put the URL with its credentials in OPENAI_BASE_URL or pass --base-url instead"


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
            register_secret(candidate.strip())
            return candidate.strip()
    openai_key = (env.get(OPENAI_ENV_VAR) or "").strip()
    host = keychain_username(base_url)
    if openai_key and reads_openai_env(base_url, env):
        register_secret(openai_key)
        return openai_key
    try:
        stored = keyring.get_password(SERVICE, host)
    except Exception as exc:  # any backend failure: D-Bus, locked, no backend
        raise SecretStoreError(_describe("read the API key from", host, exc)) from None
    register_secret(stored)
    return stored or None


def reads_openai_env(base_url: str | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether :func:`get_api_key` honours ``OPENAI_API_KEY`` for ``base_url``: only for
    api.openai.com and the host of ``OPENAI_BASE_URL``."""
    env = os.environ if environ is None else environ
    host = keychain_username(base_url)
    return host in {OPENAI_HOST, keychain_username(env.get("OPENAI_BASE_URL"))} - {"default"}


def key_hint(base_url: str | None, environ: Mapping[str, str] | None = None) -> str:
    """Where to put a valid key for ``base_url``, naming only sources that are read for it.

    For the 401/403 message: Settings (saved to the keychain under the host) and this
    app's own variable work for any host; ``OPENAI_API_KEY`` only where it is read.
    """
    host = keychain_username(base_url)
    where = f"for {host} " if host != "default" else ""
    env = f"{APP_ENV_VAR}"
    if reads_openai_env(base_url, environ):
        env = f"{OPENAI_ENV_VAR} or {APP_ENV_VAR}"
    return (
        f"set a valid key {where}in Settings (saved in the system keychain), "
        f"or in {env}, or pass --api-key"
    )


def set_api_key(base_url: str | None, key: str) -> None:
    """Store ``key`` for ``base_url``'s host in the OS keychain."""
    key = key.strip()
    if not key:
        raise ValueError("the API key is empty")
    host = keychain_username(base_url)
    _store(host, key, "the API key", host)


def delete_api_key(base_url: str | None) -> None:
    """Forget the stored key for ``base_url``'s host; nothing stored is not an error."""
    host = keychain_username(base_url)
    _forget(host, "the API key", host)


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
    """The user-info stored for ``base_url``'s host, or None (registered for redaction)."""
    host = keychain_username(base_url)
    try:
        stored = keyring.get_password(SERVICE, _credentials_account(host))
    except Exception as exc:
        raise SecretStoreError(_describe("read the base URL's credentials from", host, exc,
                                         hint=_URL_HINT)) from None
    if stored:
        user, colon, password = stored.partition(":")
        register_secret(password if colon else user)
    return stored or None


def set_url_credentials(base_url: str | None, userinfo: str) -> None:
    """Store the user-info of a base URL (``user:password`` or a token) for its host."""
    if not userinfo:
        raise ValueError("the credentials are empty")
    host = keychain_username(base_url)
    _store(_credentials_account(host), userinfo, "the base URL's credentials", host, hint=_URL_HINT)


def delete_url_credentials(base_url: str | None) -> None:
    """Forget the base URL credentials stored for ``base_url``'s host, if any."""
    host = keychain_username(base_url)
    _forget(_credentials_account(host), "the base URL's credentials", host, hint=_URL_HINT)


def _credentials_account(host: str) -> str:
    return f"{host} (base URL credentials)"


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
