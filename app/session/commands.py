"""The ``session`` thread: the one thread that runs a session's commands, in the order
they were posted, and :class:`Controller`, the calls a front end makes that become them.

A front end's calls (Start, Stop, Answer now…) and what start-up hands over all become
commands here, so the session's state has one owner and the caller's thread never
emits an event or joins a thread: posting returns at once.  The thread is started by
the first command and ended by shutdown, which runs what is still queued and then
takes no more.

The queue's counts share one condition with the session's state (the Session passes it
in), so a headless caller can wait for "every command asked for so far has run, and the
session has settled" in one ``wait``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Protocol, TypeVar

from app.core.clock import SessionClock
from app.core.events import ErrorEvent, EventBus
from app.core.low_latency import LowLatency

T = TypeVar("T")
Command = Callable[[], None]


class Controller(Protocol):
    """What a front end (the window, a scripted demo) may ask of a running session.

    It never reaches into stages: it subscribes to ``bus`` for events and calls these
    methods, which are safe from any thread and return at once (the Session posts each
    as a command to its thread: :class:`SessionCommands`).
    """

    bus: EventBus
    clock: SessionClock
    """Stamp events you emit (e.g. ``painted``) with ``clock.now()``."""
    low_latency: LowLatency
    """Low-latency mode: observe it to show it; change it with :meth:`set_low_latency`."""

    def start(self) -> None:
        """Start listening (opens the audio source; starts the answer engine if needed)."""

    def stop(self) -> None:
        """Stop listening, also while starting; answers in flight finish."""

    def shutdown(self) -> None:
        """Stop everything (audio, ASR, answer engine, local LLM server) before exit; the
        one call that waits (each step bounded): the caller is about to exit."""

    def answer_now(self) -> None:
        """Force the endpoint: treat what was heard so far as the whole question."""

    def cancel_answer(self) -> None:
        """Stop the answer being streamed; its text stays."""

    def retract_answer(self) -> None:
        """Take the answer on screen back (it answered the wrong question)."""

    def regenerate(self) -> None:
        """Ask the last question again: a new answer block of the same turn."""

    def set_low_latency(self, on: bool) -> None:
        """Speculation on/off; takes effect from the next speculation opportunity."""

    def ask_written(self, text: str, images: Sequence[bytes] = (), *, captures: int = 1) -> None:
        """Ask a question read from the screen (``images``: its captures, PNG)."""

    @property
    def active(self) -> bool:
        """Starting or listening: what Stop would end."""
        ...


class SessionCommands:
    """The command queue and the ``session`` thread that drains it."""

    def __init__(self, changed: threading.Condition, bus: EventBus, clock: SessionClock) -> None:
        self._changed = changed
        """Guards the counts and ``_open``; notified when they move (the Session also
        notifies it when its state changes)."""
        self._bus = bus
        self._clock = clock
        self._queue: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        """The ``session`` thread: started by the first command, ended by :meth:`close`."""
        self._posted = self._done = 0
        self._open = True
        """Commands are taken (False once shutdown has drained the queue)."""

    @property
    def on_thread(self) -> bool:
        """The caller is the session thread."""
        return threading.current_thread() is self._thread

    def post(self, command: Command) -> bool:
        """Queue ``command`` for the session thread (started by the first one); dropped
        (False) once shutdown is over."""
        with self._changed:
            if not self._open:
                return False
            self._posted += 1
            self._queue.put(command)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="session", daemon=True)
                self._thread.start()
        return True

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the session thread and wait for its result (for a replay's caller,
        which the session thread never waits on)."""
        if self.on_thread:
            return fn()
        done: Future[T] = Future()

        def command() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:
                done.set_exception(exc)

        if not self.post(command):
            raise RuntimeError("the session is shut down")
        return done.result()

    def wait(self, settled: Callable[[], bool], timeout: float | None = None) -> None:
        """Block until the commands posted so far have run and ``settled()`` (called with
        the lock held) is true, or the queue is closed, or ``timeout`` is over."""
        with self._changed:
            asked = self._posted
            self._changed.wait_for(lambda: self._done >= asked and (not self._open or settled()), timeout)

    def close(self) -> None:
        """Run what is still queued (start-up's hand-overs: each sees the session is shut),
        then take no more; the session thread ends after the command calling this."""
        while True:
            with self._changed:
                try:
                    command = self._queue.get_nowait()
                except queue.Empty:
                    self._open = False
                    return
            self._run_one(command)

    def _run(self) -> None:
        while True:
            self._run_one(self._queue.get())
            with self._changed:
                if not self._open:
                    return

    def _run_one(self, command: Command) -> None:
        try:
            command()
        except Exception as exc:  # a bug in one command must not end the session's thread
            message = f"{type(exc).__name__}: {exc}"
            self._bus.emit(ErrorEvent(t=self._clock.now(), stage="app", message=message))
        finally:
            with self._changed:
                self._done += 1
                self._changed.notify_all()
