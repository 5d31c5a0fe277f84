"""Busy processes that load the cores, for tests and benchmarks that must hold on a busy
machine (a shared CI runner, a laptop running the video call).

Two kinds of load:

- a *busy* process spins on one core for as long as it lives (the worst case: a core
  taken away);
- a *call-like* process works ``CALL_BUSY_S`` out of every ``CALL_PERIOD_S`` (60 % of one
  core in 20 ms bursts), the shape of a video call on a laptop: it encodes and decodes a
  frame of audio and video every 20 ms, and a call took most of a core on the users'
  laptops.  Its bursts are timed on the wall clock (a burst the scheduler interrupts
  still ends on time), and a period it overruns is skipped, never made up.

``bench turns --load SETS`` compares each set against no load in one sitting: the load
processes live for the whole run and are suspended while a clip is replayed unloaded
(:class:`LoadSwitch`).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psutil

BUSY_LOOP = "while True: pass"

CALL_PERIOD_S = 0.020
"""A call's frame: audio codecs (Opus) and video pipelines work in 20 ms steps."""
CALL_BUSY_S = 0.012
"""60 % of one core: "most of a core" as the users saw a video call take it on a laptop."""
CALL_LOOP = f"""
import time
period, busy = {CALL_PERIOD_S!r}, {CALL_BUSY_S!r}
tick = time.perf_counter()
while True:
    stop = tick + busy
    while time.perf_counter() < stop:
        pass
    tick += period
    now = time.perf_counter()
    if now >= tick:  # overran the frame: skip to the next one, never catch up
        tick += (now - tick) // period * period + period
    time.sleep(max(0.0, tick - now))
"""


@contextmanager
def busy_processes(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` processes spinning on the CPU for as long as the block runs, then killed."""
    with _processes([BUSY_LOOP] * count) as procs:
        yield procs


@contextmanager
def call_like_processes(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` call-like processes (each ~60 % of one core in 20 ms bursts) for as long as
    the block runs, then killed."""
    with _processes([CALL_LOOP] * count) as procs:
        yield procs


@contextmanager
def _processes(programs: list[str]) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs = [subprocess.Popen([sys.executable, "-c", program]) for program in programs]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


@dataclass(frozen=True)
class LoadSpec:
    """One set of load processes: ``busy`` spinning ones and ``calls`` call-like ones."""

    name: str
    busy: int = 0
    calls: int = 0

    def programs(self) -> list[str]:
        return [BUSY_LOOP] * self.busy + [CALL_LOOP] * self.calls


LOAD_SYNTAX = "N (N processes spinning on a core each) or call / callN (N call-like processes)"
_SPEC = re.compile(r"^(?:(?P<busy>\d+)|call(?P<calls>\d*))$")


def parse_loads(text: str) -> list[LoadSpec]:
    """``"1,call"`` → one busy process; one call-like process.  Raises ValueError."""
    specs: list[LoadSpec] = []
    for item in (part.strip() for part in text.split(",")):
        match = _SPEC.match(item)
        if not item or match is None:
            raise ValueError(f"{item!r} is not a load: give {LOAD_SYNTAX}")
        if match["busy"] is not None:
            spec = LoadSpec(item, busy=int(match["busy"]))
        else:
            spec = LoadSpec(item, calls=int(match["calls"] or 1))
        if spec.busy + spec.calls == 0:
            raise ValueError(f"{item!r} is no load at all (no load is always measured)")
        specs.append(spec)
    return specs


class LoadSwitch:
    """Every set's processes, started once and suspended; :meth:`only` lets one set run.

    Started once for the whole run, so switching a clip's load on and off costs no process
    start (a Python interpreter takes ~50 ms of a core to start, which would land on the
    clip's first second) — the processes are suspended and resumed (psutil: SIGSTOP/SIGCONT,
    NtSuspendProcess on Windows)."""

    def __init__(self, specs: list[LoadSpec]) -> None:
        self._procs: dict[str, list[psutil.Popen]] = {}
        for spec in specs:
            procs = [psutil.Popen([sys.executable, "-c", p]) for p in spec.programs()]
            for proc in procs:
                proc.suspend()
            self._procs[spec.name] = procs
        self._running: str | None = None

    def only(self, name: str | None) -> None:
        """Let the set ``name`` run (None: no load), every other set suspended."""
        if name == self._running:
            return
        if self._running is not None:
            for proc in self._procs[self._running]:
                proc.suspend()
        if name is not None:
            for proc in self._procs[name]:
                proc.resume()
        self._running = name

    def close(self) -> None:
        for procs in self._procs.values():
            for proc in procs:
                proc.kill()
        for procs in self._procs.values():
            for proc in procs:
                proc.wait()
        self._procs.clear()

    def __enter__(self) -> LoadSwitch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def abba(clip_index: int, loads: list[str | None]) -> list[str | None]:
    """The order of the loads for a clip: as given on even clips, reversed on odd ones, so a
    machine that speeds up or slows down across a clip's replays favours no load."""
    return loads if clip_index % 2 == 0 else loads[::-1]
