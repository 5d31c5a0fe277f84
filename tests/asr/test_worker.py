"""The shared decoding thread: the interviewer's jobs always go first."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from app.asr.worker import DecodeWorker, Job
from tests.patience import NEVER_S


class FakeRecognizer:
    """Counts jobs wanted; each job runs ``work`` and logs the recogniser's name."""

    def __init__(self, name: str, priority: int, log: list[str], worker: DecodeWorker,
                 work: Callable[[], object] = lambda: time.sleep(0.01)) -> None:
        self.name, self.priority, self._log, self._worker, self._work = name, priority, log, worker, work
        self.pending = 0
        self.busy = False

    def want(self, n: int) -> None:
        with self._worker.cond:
            self.pending += n
            self._worker.wake()

    def take_job(self) -> Job | None:
        if self.busy or not self.pending:
            return None
        self.pending -= 1
        self.busy = True
        return self._run

    def job_done(self) -> None:
        self.busy = False

    def _run(self) -> None:
        self._work()
        self._log.append(self.name)


def test_the_interviewer_goes_first_and_the_thread_ends_with_the_last_client() -> None:
    worker = DecodeWorker()
    log: list[str] = []
    release, holding = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        assert release.wait(NEVER_S)

    holder = FakeRecognizer("holder", -1, log, worker, work=hold)
    interviewer = FakeRecognizer("interviewer", 0, log, worker)
    candidate = FakeRecognizer("candidate", 1, log, worker)
    for client in (candidate, holder, interviewer):
        worker.attach(client)
    holder.want(1)  # keeps the thread busy while both voices queue work
    assert holding.wait(NEVER_S)
    candidate.want(3)
    interviewer.want(3)
    release.set()
    deadline = time.monotonic() + NEVER_S
    while len(log) < 7 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert log == ["holder"] + ["interviewer"] * 3 + ["candidate"] * 3
    for client in (holder, interviewer, candidate):
        worker.detach(client)
    assert not any(t.name == "asr-worker" and t.is_alive() for t in threading.enumerate())
