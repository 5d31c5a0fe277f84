"""What the embedded server lets through: this app's requests, nothing from a browser.

Runs in the child, in front of ``llama_cpp.server``'s FastAPI app (an ASGI wrapper built
by :mod:`app.llm.bundle_server`, which also removes the ``CORSMiddleware(allow_origins=
["*"])`` that ``create_app`` installs).  Each request is refused from a browser, answers
the identity challenge, or
needs the run's key, in that order.  Design notes: decision 0039.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

from app.llm.server_identity import IDENTITY_PATH, proof, valid_nonce

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost"})
BROWSER_HEADERS = (b"origin", b"sec-fetch-site")


class Guard:
    """The ASGI app the child serves: ``app`` behind the three checks above."""

    def __init__(self, app: Asgi, key: str) -> None:
        self.app = app
        self._bearer = f"Bearer {key}".encode()
        self._key = key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # websockets: the server has none
            await send({"type": "websocket.close", "code": 1008})
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers") or [])
        if not _from_this_app(headers):
            await _reply(send, 403, "forbidden", "This server answers the Interview Copilot app only.")
        elif scope.get("path") == IDENTITY_PATH:
            await self._identity(scope, send)
        elif not any(name == b"authorization" and hmac.compare_digest(value, self._bearer)
                     for name, value in headers):
            await _reply(send, 401, "invalid_api_key", "Invalid API key.", [(b"www-authenticate", b"Bearer")])
        else:
            await self.app(scope, receive, send)

    async def _identity(self, scope: Scope, send: Send) -> None:
        query = parse_qs(bytes(scope.get("query_string") or b"").decode("latin-1"))
        nonces = query.get("nonce", [])
        if scope.get("method") != "GET" or len(nonces) != 1 or not valid_nonce(nonces[0]):
            usage = f"ask GET {IDENTITY_PATH}?nonce=N (16 to 128 URL-safe characters)"
            await _reply(send, 400, "bad_request", usage)
            return
        await _send(send, 200, {"proof": proof(self._key, nonces[0])})


def _from_this_app(headers: list[tuple[bytes, bytes]]) -> bool:
    hosts = [value for name, value in headers if name == b"host"]
    if len(hosts) != 1 or _hostname(hosts[0].decode("latin-1")) not in LOOPBACK_HOSTS:
        return False
    return not any(name in BROWSER_HEADERS for name, _ in headers)


def _hostname(host: str) -> str:
    """``host[:port]`` → ``host``, lowercased (an IPv6 literal keeps its brackets)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


async def _reply(send: Send, status: int, code: str, message: str,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """An OpenAI-style error, so the app's client words it like any provider's."""
    await _send(send, status, {"error": {"message": message, "type": "invalid_request_error", "code": code}},
                extra)


async def _send(send: Send, status: int, body: object,
                extra: list[tuple[bytes, bytes]] | None = None) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
               *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
