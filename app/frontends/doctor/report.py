"""How doctor says what it found: a line per check with its fix, the counts, or ``--json``.

Everything written goes through the one redaction: details quote URLs and server replies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import IO

from app.frontends.checks import CheckResult
from app.platform.redact import redact, redact_data

_MARK = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", "skip": "SKIP"}


def format_result(result: CheckResult) -> str:
    """One check as text, through the one redaction: details quote URLs and server replies."""
    text = f"{_MARK[result.status]}  {result.name:<17} {result.detail}"
    if result.fix and result.status in ("warn", "fail"):
        text += f"\n      fix: {result.fix}"
    return redact(text)


def write_summary(results: Sequence[CheckResult], out: IO[str]) -> None:
    """The last line of the text report: how many checks passed, warned, failed, were skipped."""
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "warn", "fail", "skip")}
    out.write(f"\n{counts['pass']} passed, {counts['warn']} warnings, {counts['fail']} failed, "
              f"{counts['skip']} skipped\n")


def write_json(results: Sequence[CheckResult], out: IO[str]) -> None:
    """``--json``: ``ok``, then every check's fields in order — what bug reports carry and
    scripts read, so its keys and their order stay (tests/frontends/test_doctor_checks.py pins them)."""
    report = {"ok": not any(r.failed for r in results), "checks": [asdict(r) for r in results]}
    json.dump(redact_data(json.loads(json.dumps(report, default=str))), out, indent=1)
    out.write("\n")
