"""The embedded server, watched: a dead child is noticed before the next request, and
nothing goes to its port until a new child has proved it is ours.

A child that dies leaves its port to whoever binds it next, and a client that kept its
base URL would hand that program the prompt, the interview's words and the run's
credential, and show its reply as the answer.  So every request to the embedded server
first asks :meth:`ServerWatch.route` where to go: the child's URL while it lives (a
``poll()`` of the process, no I/O), else it waits for the restart, which sends nothing to
the port before the new child answered the identity challenge
(:func:`app.llm.server_identity.prove`, again for each child).  A watcher thread notices a
death between requests too, says so and restarts at once. Design notes: decision 0039.
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from app.llm.errors import LlmError
from app.llm.local_server import LocalServer

POLL_S = 0.1
"""How often the watcher thread looks at the child between requests: a banner a tenth of a
second late costs nothing, and each look is one ``waitpid``.  (Requests do not wait for it:
each one looks itself.)"""
RESTARTS = 1
"""A child that died once may have met a passing fault (memory pressure, a signal); one that
dies again after a fresh start will keep dying."""
FALLBACK = "Captions keep working; answers need an endpoint."
"""What a session without a local model does, said the same way here."""


class ServerWatch:
    """Starts ``server``, watches its child, restarts it once, then answers "gone".

    ``say(message)`` reports a death, the restart and the fall-back (a banner: the
    session's :class:`~app.core.events.ErrorEvent`); it is called from the watcher's
    threads, never under the lock.
    """

    def __init__(self, server: LocalServer, say: Callable[[str], None], *, restarts: int = RESTARTS) -> None:
        self.server = server
        self._say = say
        self._restarts = restarts
        self._lock = threading.Condition()
        """Guards the four fields below; notified when ``_up`` or ``_gone`` change."""
        self._child: subprocess.Popen[bytes] | None = None
        """The child whose identity was proved, while it is believed alive."""
        self._gone: LlmError | None = None
        """Set once no child will serve again (a second death, a failed restart, :meth:`stop`)."""
        self._restarting = False

    def start(self) -> str:
        """Start the server (raises what :meth:`LocalServer.start` raises); its base URL."""
        url = self.server.start()
        self._adopt()
        return url

    def route(self, timeout: float | None = None) -> str:
        """The base URL of a child that proved it is ours and is alive now; waits (up to
        ``timeout``, default the server's start time) while one restarts.  Raises
        :class:`LlmError` once none will serve."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.server.start_timeout + 5)
        with self._lock:
            while True:
                url = self._live_url()
                if url is not None:
                    return url
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LlmError("timeout", "The local LLM server is restarting and is not back yet; "
                                   "ask again in a moment.", retryable=True)
                self._lock.wait(left)

    async def aroute(self) -> str:
        """:meth:`route` for the event loop: no thread unless the child must be waited for."""
        with self._lock:
            url = self._live_url()
        return url if url is not None else await asyncio.to_thread(self.route)

    def stop(self) -> None:
        """The session is over: no restart from now on, then the server stops."""
        with self._lock:
            self._gone = self._gone or LlmError("server", "The local LLM server was stopped.",
                                                retryable=False)
            self._child = None
            self._lock.notify_all()
        self.server.stop()

    # --- under the lock ------------------------------------------------------------------

    def _live_url(self) -> str | None:
        """The URL to use now, None while a restart runs; raises once gone.  A child found
        dead here (before the watcher saw it) is handled as the watcher would."""
        if self._gone is not None:
            raise self._gone
        child = self._child
        if child is None:
            return None
        if child.poll() is not None:
            self._died_locked(child)
            return None
        return self.server.base_url

    def _died_locked(self, child: subprocess.Popen[bytes]) -> None:
        if child is not self._child:
            return  # said already
        self._child = None
        code = child.returncode
        if self._gone is not None:
            return
        if self._restarts > 0 and not self._restarting:
            self._restarts -= 1
            self._restarting = True
            threading.Thread(target=self._restart, args=(code,), name="server-restart", daemon=True).start()
        else:
            self._give_up_locked(f"The local LLM server stopped again (exit code {code}): answers are off "
                                 f"for the rest of this session. {FALLBACK}")

    def _give_up_locked(self, message: str) -> None:
        self._gone = LlmError("not_found", message, retryable=False)
        self._lock.notify_all()
        threading.Thread(target=self._say, args=(message,), name="server-gone", daemon=True).start()

    # --- the watcher's threads -----------------------------------------------------------

    def _adopt(self) -> None:
        """Watch the child :meth:`LocalServer.start` just proved."""
        child = self.server.process
        if child is None:
            return
        with self._lock:
            if self._gone is not None:
                return
            self._child = child
            self._lock.notify_all()
        threading.Thread(target=self._watch, args=(child,), name="server-watch", daemon=True).start()

    def _watch(self, child: subprocess.Popen[bytes]) -> None:
        """Looks under the lock, like :meth:`_live_url`: on POSIX ``poll()`` answers None
        ("running") while another thread is inside its ``waitpid``, so two lookers at once
        could route a request to a dead child's port."""
        while True:
            with self._lock:
                if child.poll() is not None:
                    self._died_locked(child)
                    return
            time.sleep(POLL_S)

    def _restart(self, code: int | None) -> None:
        self._say(f"The local LLM server stopped (exit code {code}); restarting it. Nothing is sent to "
                  "its port until the new one proves it is this app's own.")
        try:
            self.server.start()
        except LlmError as exc:
            with self._lock:
                self._restarting = False
                if self._gone is None:
                    self._give_up_locked(f"The local LLM server could not be restarted: {exc.message} "
                                         f"{FALLBACK}")
            return
        with self._lock:
            self._restarting = False
        self._adopt()
        if self._child is not None:
            self._say(f"The local LLM server is back (at {_host(self.server.base_url)}); answers resume.")


def _host(url: str) -> str:
    return urlsplit(url).netloc
