"""Which checks run, in what order, and when one waits on another: doctor's list of checks.

The local checks first (audio, then ASR), each timed.  Then the LLM group against one
endpoint (:mod:`~app.frontends.doctor.target`): the endpoint check, and the others only once
it answers, each under a deadline so that a black-holed endpoint costs seconds, not minutes;
last, which model answered, from the request timing check's figures.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from app.frontends.checks import CheckResult
from app.frontends.doctor import (
    asr,
    audio_devices,
    buffering,
    endpoint,
    http_versions,
    input_level,
    prompt_cache,
    request_timing,
)
from app.frontends.doctor.check import LlmCheck, LocalCheck, Run
from app.frontends.doctor.model_in_use import check_model_in_use
from app.frontends.doctor.options import DoctorOptions
from app.frontends.doctor.target import Target, resolve_target

if TYPE_CHECKING:
    from app.core.config import Settings

LOCAL_CHECKS: tuple[LocalCheck, ...] = (audio_devices.CHECK, input_level.CHECK, asr.CHECK)
LLM_CHECKS: tuple[LlmCheck, ...] = (endpoint.CHECK, request_timing.CHECK, http_versions.CHECK,
                                    buffering.CHECK, prompt_cache.CHECK)
"""The endpoint check first: the others only make sense once it answers."""


def collect(opts: DoctorOptions, settings: Settings | None = None,
            emit: Callable[[CheckResult], None] | None = None) -> list[CheckResult]:
    """Run every check not skipped, in order, reporting each as it finishes."""
    from app.core.config import Settings

    run = Run(opts, settings if settings is not None else Settings())

    def add(result: CheckResult) -> None:
        run.results.append(result)
        if emit is not None:
            emit(result)

    for check in LOCAL_CHECKS:
        if check.group not in opts.skip:
            add(_timed(check, run))
    if "llm" not in opts.skip:
        _check_llm(run, add)
    return run.results


def _timed(check: LocalCheck, run: Run) -> CheckResult:
    started = time.perf_counter()
    result = check.run(run)
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def _check_llm(run: Run, add: Callable[[CheckResult], None]) -> None:
    """The LLM group: find (or start) the endpoint, check it, stop what was started for it."""
    target, server, missing = resolve_target(run.opts, run.settings)
    try:
        if target is None:
            assert missing is not None
            add(missing)
            return
        if target.local:
            add(CheckResult(endpoint.NAME, "skip", "no endpoint configured: checking the embedded "
                            f"local LLM at {target.base_url} instead"))
        results = asyncio.run(run_llm_checks(target, run.opts, add))
        add(check_model_in_use(target, next((r for r in results if r.name == request_timing.NAME), None)))
    finally:
        if server is not None:
            server.stop()


async def run_llm_checks(target: Target, opts: DoctorOptions,
                         emit: Callable[[CheckResult], None] | None = None) -> list[CheckResult]:
    """Endpoint first; the timing checks only make sense once it answers."""
    results: list[CheckResult] = []
    for check in LLM_CHECKS:
        if results and results[0].failed:  # the endpoint check
            result = CheckResult(check.name, "skip", "skipped: the endpoint check failed")
        else:
            result = await _with_deadline(check.name, check.run(target, opts), opts.check_deadline_s)
        results.append(result)
        if emit is not None:
            emit(result)
    return results


async def _with_deadline(name: str, coro: Awaitable[CheckResult], seconds: float) -> CheckResult:
    started = time.perf_counter()
    try:
        result = await asyncio.wait_for(coro, seconds)
    except TimeoutError:
        result = CheckResult(name, "fail", f"no result within {seconds:g} s",
                             "the endpoint or network stalls; check the base URL and any proxy/VPN")
    result.seconds = round(time.perf_counter() - started, 3)
    return result
