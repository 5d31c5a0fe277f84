"""Is it our own child that answers on the port?  Asked before it is sent anything.

The parent hands the embedded server a port, and where that port is chosen by binding and
closing a socket (Windows; see :data:`app.llm.local_server.HAND_OVER_SOCKET`) another local
program may take it first.  Whatever answers there would then be sent the run's credential,
the résumé and the transcript.  So before the first request that carries either, the parent
asks ``GET /copilot/identity?nonce=N`` and expects ``HMAC-SHA256(credential, N)``: only a
process that knows the credential can answer, and the question reveals nothing of it (a
fresh nonce each time, so an answer seen once is worth nothing).  The child's side is
:mod:`app.llm.server_guard`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

import httpx2

from app.llm.body_cap import BodyTooLarge

IDENTITY_PATH = "/copilot/identity"
_CONTEXT = b"interview-copilot embedded server identity\0"
"""Binds a proof to this one use of the credential."""
_NONCE = re.compile(r"[A-Za-z0-9_-]{16,128}")


class NotOurServer(Exception):
    """Something answered on the port without proving it holds the run's credential."""


def proof(key: str, nonce: str) -> str:
    """What only the holder of ``key`` can answer to ``nonce`` (hex HMAC-SHA256)."""
    return hmac.new(key.encode(), _CONTEXT + nonce.encode(), hashlib.sha256).hexdigest()


def valid_nonce(nonce: str) -> bool:
    return _NONCE.fullmatch(nonce) is not None


def prove(http: httpx2.Client, root: str, key: str) -> bool:
    """Ask the server at ``root`` (``http://127.0.0.1:PORT``) to prove it holds ``key``.

    True: it did.  False: nothing answers yet (refused, or no answer within ``http``'s
    time-out: the child is still loading its model).  Raises :class:`NotOurServer` when
    something answers without the proof; the key is never sent.
    """
    nonce = secrets.token_urlsafe(32)
    try:
        reply = http.get(f"{root}{IDENTITY_PATH}", params={"nonce": nonce})
    except httpx2.TransportError:
        return False
    except BodyTooLarge as exc:  # a client built with app.llm.body_cap's hook
        raise NotOurServer("it answered with a body no proof of identity needs") from exc
    try:
        data = reply.json()
    except ValueError:
        data = None
    answer = data.get("proof") if isinstance(data, dict) else None
    if reply.status_code != 200 or not isinstance(answer, str):
        raise NotOurServer(f"it answered HTTP {reply.status_code} without a proof of identity")
    if not hmac.compare_digest(answer.encode(), proof(key, nonce).encode()):
        raise NotOurServer("its proof of identity is wrong")
    return True
