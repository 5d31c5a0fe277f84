"""Check: reachable, key accepted, model listed — the three reasons nothing ever answers."""

from __future__ import annotations

import time

from app.frontends.checks import CheckResult
from app.frontends.doctor.check import LlmCheck
from app.frontends.doctor.llm_common import client_for, llm_failure
from app.frontends.doctor.options import DoctorOptions
from app.frontends.doctor.target import Target
from app.llm.errors import LlmError
from app.platform.redact import display_url

NAME = "endpoint"


async def check_endpoint(target: Target, opts: DoctorOptions) -> CheckResult:
    """Reachable, key accepted, model listed — the three reasons nothing ever answers."""
    name = NAME
    client = client_for(target, opts)
    where = display_url(target.base_url)
    try:
        started = time.perf_counter()
        await client.start()
        start_s = time.perf_counter() - started
        models = await client.list_models()
    except LlmError as exc:
        return llm_failure(name, exc, {"base_url": where})
    finally:
        await client.aclose()
    data = {"base_url": where, "model": target.model, "models": models[:50], "start_s": round(start_s, 3)}
    if target.model not in models:
        shown = ", ".join(models[:8]) + (" …" if len(models) > 8 else "")
        return CheckResult(name, "fail", f"{where} is reachable and the key works, but model "
                           f"'{target.model}' is not listed (available: {shown or 'none'})",
                           "pick a listed model with --model (or COPILOT_MODEL)", data)
    return CheckResult(name, "pass", f"{where}: key accepted, '{target.model}' available "
                       f"({len(models)} models; warm-up {start_s * 1000:.0f} ms)", data=data)


CHECK = LlmCheck(NAME, check_endpoint)
