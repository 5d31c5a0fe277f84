"""One decoding thread for every recogniser of a session, the interviewer's first.

Two voices share one Whisper model and two CPU cores: decoding them on two threads would
make each pass slower and the interviewer's captions (which drive the answer) late.
So one worker takes the next job from the recognisers in priority order — whatever the
interviewer's recogniser needs (a final, then the newest partial) before anything of
the candidate's; the candidate's captions lag instead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from app.platform import priority

Job = Callable[[], None]


class Client(Protocol):
    priority: int
    """Lower runs first."""

    def take_job(self) -> Job | None:
        """The next decoding job, or None; called with :attr:`DecodeWorker.cond` held."""

    def job_done(self) -> None:
        """The job taken last has finished (successfully or not); ``cond`` held."""


@runtime_checkable
class Holding(Protocol):
    """A client that may hold a job back until a time (a partial pass spaced out)."""

    def ready_at(self) -> float | None:
        """``time.monotonic()`` when a held job becomes due, or None; ``cond`` held."""


class DecodeWorker:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        """Guards every attached recogniser's state as well as the worker's own."""
        self._clients: list[Client] = []
        self._thread: threading.Thread | None = None

    def attach(self, client: Client) -> None:
        with self.cond:
            self._clients = sorted([*self._clients, client], key=lambda c: c.priority)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="asr-worker", daemon=True)
                self._thread.start()
            self.cond.notify_all()

    def detach(self, client: Client, timeout: float = 10.0) -> None:
        """Stop serving ``client``; the thread ends with the last one (a job running finishes)."""
        with self.cond:
            self._clients = [c for c in self._clients if c is not client]
            thread = self._thread if not self._clients else None
            if thread is not None:
                self._thread = None
            self.cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def wake(self) -> None:
        """Something may be ready (``cond`` held by the caller)."""
        self.cond.notify_all()

    def _work(self) -> None:
        with priority.for_thread("decode"):
            self._serve()

    def _serve(self) -> None:
        me = threading.current_thread()
        while True:
            with self.cond:
                found = self._next()
                while found is None and self._thread is me:
                    self.cond.wait(self._until_due())
                    found = self._next()
                if self._thread is not me or found is None:
                    return
            client, job = found
            try:
                job()
            finally:
                with self.cond:
                    client.job_done()

    def _until_due(self) -> float | None:
        """Seconds until the first job a client holds back becomes due (None: none is held)."""
        due = [t for c in self._clients if isinstance(c, Holding) and (t := c.ready_at()) is not None]
        return max(0.0, min(due) - time.monotonic()) if due else None

    def _next(self) -> tuple[Client, Job] | None:
        for client in self._clients:
            job = client.take_job()
            if job is not None:
                return client, job
        return None
