"""What a process tree holds and has spent, sampled every few seconds (``bench soak``).

A sample sums the process and its live children (the test server, an embedded LLM):
resident memory, threads, open file descriptors (handles on Windows) and CPU seconds
(user + system).  A child that ended takes its CPU seconds with it, so the CPU of a window
that saw a child end is not to be trusted; ``bench soak`` keeps its children for the run.

Stretches of a run (silence, speech) are attributed whole sample windows:
:func:`cpu_per_minute` counts the CPU spent between two consecutive samples only when both
fall inside one stretch.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class Sample:
    t: float
    """When, on the clock the sampler was given (``bench soak``: the session clock)."""
    rss_mb: float
    threads: int
    fds: int
    """Open file descriptors (POSIX) or handles (Windows)."""
    cpu_s: float
    """CPU seconds so far, user + system."""
    processes: int


class TreeSampler:
    """Samples ``pid``'s process tree on a thread of its own every ``every_s`` seconds."""

    def __init__(self, pid: int | None = None, every_s: float = 5.0,
                 now: Callable[[], float] = time.monotonic) -> None:
        self._root = psutil.Process(pid)
        self._every = every_s
        self._now = now
        self._samples: list[Sample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> Sample:
        """One reading of the tree, now (also kept with the thread's)."""
        rss = threads = fds = processes = 0
        cpu = 0.0
        for process in [self._root, *self._root.children(recursive=True)]:
            try:
                with process.oneshot():
                    rss += process.memory_info().rss
                    threads += process.num_threads()
                    fds += _open_files(process)
                    times = process.cpu_times()
                    cpu += times.user + times.system
                    processes += 1
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue  # a child that ended while we looked: its share is gone
        sample = Sample(self._now(), rss / 2**20, threads, fds, cpu, processes)
        with self._lock:
            self._samples.append(sample)
        return sample

    @property
    def samples(self) -> list[Sample]:
        with self._lock:
            return list(self._samples)

    def start(self) -> TreeSampler:
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[Sample]:
        """Stop, with one last sample; every sample taken."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.sample()
        return self.samples

    def __enter__(self) -> TreeSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self._every):
                return


def at(samples: list[Sample], t: float) -> Sample | None:
    """The first sample taken at or after ``t`` (None if none was)."""
    return next((s for s in samples if s.t >= t), None)


def cpu_per_minute(samples: list[Sample], stretches: Iterable[tuple[float, float]]) -> float | None:
    """CPU seconds per minute inside ``stretches`` ((start, end) on the samples' clock):
    the CPU of each window between consecutive samples that lies wholly inside one."""
    spans = list(stretches)
    cpu = seconds = 0.0
    for a, b in itertools.pairwise(samples):
        if any(start <= a.t and b.t <= end for start, end in spans):
            cpu += b.cpu_s - a.cpu_s
            seconds += b.t - a.t
    return cpu / seconds * 60 if seconds > 0 else None


def _open_files(process: psutil.Process) -> int:
    """File descriptors, or handles on Windows (which has no descriptors to count)."""
    if sys.platform == "win32":
        return process.num_handles()
    return process.num_fds()
