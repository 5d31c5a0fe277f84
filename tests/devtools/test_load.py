"""The load ``bench turns --load`` puts beside the app: what each set is, that a call-like
process takes about the share of a core it claims, and that a suspended set takes none."""

from __future__ import annotations

import time

import psutil
import pytest

from devtools.bench.turns import _ratios
from devtools.load import (
    CALL_BUSY_S,
    CALL_PERIOD_S,
    LoadSpec,
    LoadSwitch,
    abba,
    busy_processes,
    call_like_processes,
    parse_loads,
)


def _cpu_share(proc: psutil.Process, seconds: float) -> float:
    """The share of one core ``proc`` used over the next ``seconds`` of wall time."""
    before, start = proc.cpu_times(), time.perf_counter()
    time.sleep(seconds)
    after, wall = proc.cpu_times(), time.perf_counter() - start
    return (after.user + after.system - before.user - before.system) / wall


def test_load_sets_parse_into_busy_and_call_like_processes() -> None:
    assert parse_loads("1, call,call2,3") == [LoadSpec("1", busy=1), LoadSpec("call", calls=1),
                                              LoadSpec("call2", calls=2), LoadSpec("3", busy=3)]


@pytest.mark.parametrize("text", ["", "0", "calls", "busy", "1,,2", "-1", "call0"])
def test_a_mistyped_load_is_refused_with_the_syntax(text: str) -> None:
    with pytest.raises(ValueError, match="load"):
        parse_loads(text)


def test_a_call_like_process_takes_most_of_a_core_not_all_of_it() -> None:
    """Measured against a spinning process beside it, so a busy machine (which gives both
    less) does not move the share: the call's bursts are timed on the wall clock, so it
    takes ~60 % of what a spinner gets, however much that is."""
    assert round(CALL_BUSY_S / CALL_PERIOD_S, 3) == 0.6
    with call_like_processes(1) as (call,), busy_processes(1) as (spin,):
        procs = [psutil.Process(call.pid), psutil.Process(spin.pid)]
        time.sleep(0.3)  # the interpreters' start-up is not the load
        befores, start = [p.cpu_times() for p in procs], time.perf_counter()
        time.sleep(3.0)
        used = [p.cpu_times().user + p.cpu_times().system - b.user - b.system
                for p, b in zip(procs, befores, strict=True)]
    assert used[1] > 0.03 * (time.perf_counter() - start), used  # the machine gave them some time
    # broad: the machine is shared, but a spin (1.0) or a sleeper (0.0) is out
    assert 0.3 <= used[0] / used[1] <= 0.9, used


def test_a_load_set_runs_only_while_switched_on() -> None:
    with LoadSwitch(parse_loads("1,call")) as switch:
        procs = {name: [psutil.Process(p.pid) for p in switch._procs[name]] for name in ("1", "call")}
        time.sleep(0.3)
        assert _cpu_share(procs["1"][0], 0.5) < 0.02  # started suspended
        switch.only("1")
        assert _cpu_share(procs["1"][0], 1.0) > 0.02  # some of a core, however busy the machine
        assert _cpu_share(procs["call"][0], 0.5) < 0.02
        switch.only(None)
        time.sleep(0.05)
        assert _cpu_share(procs["1"][0], 0.5) < 0.02
    assert all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for ps in procs.values() for p in ps)


def test_loads_alternate_abba_from_clip_to_clip() -> None:
    order = [None, "1", "call"]
    assert [abba(i, order) for i in range(3)] == [order, order[::-1], order]


def test_each_loaded_mode_is_reported_as_a_ratio_to_itself_unloaded() -> None:
    summary = {"product": {"response_latency_median_s": 0.4},
               "product~call": {"response_latency_median_s": 0.46},
               "rules": {"response_latency_median_s": 0.5}, "rules~call": {"response_latency_median_s": 0.6}}
    assert _ratios(summary) == {"rules/product": 1.25, "product~call/product": 1.15, "rules~call/rules": 1.2}
