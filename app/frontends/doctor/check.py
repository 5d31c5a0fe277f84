"""The one shape of a doctor check, so that the runner is a list of them.

A check is its name (the report's line, and what a skip or a missed deadline is reported
as) and how to run it, returning a :class:`~app.frontends.checks.CheckResult`.  There are
two kinds, by what they need.  A *local* check (audio, ASR) is given the :class:`Run` —
the options, the settings and what the checks before it found — and runs on the caller's
thread.  An *LLM* check is given the endpoint and the options and is awaited on the LLM
group's one event loop, under a deadline, once the endpoint check has passed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from app.frontends.checks import CheckResult
from app.frontends.doctor.options import DoctorOptions
from app.frontends.doctor.target import Target

if TYPE_CHECKING:
    from app.core.config import Settings

Group = Literal["audio", "asr", "llm"]
"""What ``--skip`` names."""


@dataclass
class Run:
    """One doctor run, as a local check sees it."""

    opts: DoctorOptions
    settings: Settings
    results: list[CheckResult] = field(default_factory=list)
    """Every result so far, in order."""

    def result(self, name: str) -> CheckResult | None:
        return next((r for r in self.results if r.name == name), None)


@dataclass(frozen=True)
class LocalCheck:
    name: str
    group: Group
    run: Callable[[Run], CheckResult]


@dataclass(frozen=True)
class LlmCheck:
    name: str
    run: Callable[[Target, DoctorOptions], Awaitable[CheckResult]]
