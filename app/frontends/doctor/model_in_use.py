"""Check: which model answers, and its time to first token (from the request timing check's figures)."""

from __future__ import annotations

import statistics

from app.frontends.checks import CheckResult
from app.frontends.doctor.target import Target

NAME = "model"


def check_model_in_use(target: Target, timing: CheckResult | None) -> CheckResult:
    """Which model answers and its time to first token, from the request timing check's
    figures (their median: the first request also pays for a new connection)."""
    name = NAME
    what = target.label or target.model
    rows = (timing.data or {}).get("requests", []) if timing is not None else []
    firsts = [r["first_token_s"] for r in rows if r.get("first_token_s") is not None]
    if timing is None or timing.status not in ("pass", "warn") or not firsts:
        return CheckResult(name, "skip", f"answers from {what}; no first-token time (the request timing "
                           "check did not pass)", data={"model": target.model, "label": what})
    median = statistics.median(firsts)
    return CheckResult(name, "pass", f"answers from {what}: first token {median * 1000:.0f} ms "
                       f"(median of {len(firsts)})",
                       data={"model": target.model, "label": what, "first_token_s": median})
