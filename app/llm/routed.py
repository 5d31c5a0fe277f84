"""A transport that asks, before each request, where it may go now.

For the embedded server (:class:`app.llm.server_watch.ServerWatch`): its child may have
died and another program taken its port, or a restarted child may listen elsewhere.  Each
request, warm-ups and ``/models`` included, awaits ``route()`` first, which returns the
base URL of a child that proved it is ours (or raises :class:`~app.llm.errors.LlmError`),
and is sent to that URL's scheme, host and port.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx2

Route = Callable[[], Awaitable[str]]
"""Where requests go now: a base URL (only its scheme, host and port are used)."""


class RoutedTransport(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, route: Route) -> None:
        self._inner = inner
        self._route = route

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        target = httpx2.URL(await self._route())
        request.url = request.url.copy_with(scheme=target.scheme, host=target.host, port=target.port)
        request.headers["Host"] = target.netloc.decode("ascii")
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
