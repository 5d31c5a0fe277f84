"""A request that asks where to go while the watcher is looking at the child is never sent
to a dead child's port.

POSIX ``Popen.poll()`` answers None ("running") whenever another thread is inside its own
``waitpid`` on the same child: without one owner of the looking, a request asked at that
moment would go to the old port, where another program may listen by now (the real
server's test, ``test_server_watch.py``, met it once in a CI run).  Here the child is a
stand-in with that same rule, and the watcher is caught inside its look.
"""

from __future__ import annotations

import threading
from typing import Any

from app.llm import server_watch
from app.llm.server_watch import ServerWatch
from tests.patience import NEVER_S


class Child:
    """Like ``subprocess.Popen`` on POSIX: ``poll()`` says None while another thread polls."""

    def __init__(self) -> None:
        self.returncode: int | None = None
        self._waitpid = threading.Lock()
        self.dead = False
        self.watcher_inside = threading.Event()
        self.let_watcher_out = threading.Event()

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        if not self._waitpid.acquire(blocking=False):
            return None  # "something else is busy calling waitpid": CPython's answer
        try:
            if threading.current_thread().name == "server-watch" and self.dead:
                self.watcher_inside.set()
                self.let_watcher_out.wait(NEVER_S)  # descheduled inside waitpid
            if self.dead:
                self.returncode = -9
            return self.returncode
        finally:
            self._waitpid.release()


class Server:
    """A LocalServer stand-in: each start is a new child on a new port."""

    start_timeout = 5.0

    def __init__(self) -> None:
        self.children = [Child(), Child()]
        self.process: Child | None = None
        self.base_url = ""

    def start(self) -> str:
        self.process = self.children.pop(0)
        self.base_url = f"http://127.0.0.1:{9000 + len(self.children)}/v1"
        return self.base_url

    def stop(self) -> None:
        pass


def test_a_route_asked_while_the_watcher_looks_at_a_dead_child_waits_for_the_new_one(
        monkeypatch: Any) -> None:
    monkeypatch.setattr(server_watch, "POLL_S", 0.01)
    server = Server()
    watch = ServerWatch(server, lambda message: None)  # type: ignore[arg-type]
    old = watch.start()
    child = server.process
    assert child is not None
    child.dead = True  # killed; the watcher's next look finds it inside waitpid
    assert child.watcher_inside.wait(NEVER_S)
    routed: list[str] = []
    asking = threading.Thread(target=lambda: routed.append(watch.route(timeout=NEVER_S)))
    asking.start()
    asking.join(0.3)  # long enough to have answered had it been told "running"
    child.let_watcher_out.set()
    asking.join(NEVER_S)
    assert routed and routed[0] != old  # the restarted child's, never the dead one's
    watch.stop()
