"""Check: three requests on a cold client — what a new connection costs, and whether it is kept."""

from __future__ import annotations

from typing import Any

from app.frontends.checks import CheckResult
from app.frontends.doctor.check import LlmCheck
from app.frontends.doctor.llm_common import RELAY_RECIPE, client_for, llm_failure, timed_request
from app.frontends.doctor.options import DoctorOptions
from app.frontends.doctor.target import Target
from app.llm.client import RequestTiming
from app.llm.errors import LlmError

NAME = "request timing"


def _ms(value: float | None) -> str:
    return "reused" if value is None else f"{value * 1000:.0f} ms"


async def check_request_timing(target: Target, opts: DoctorOptions, n: int = 3) -> CheckResult:
    """Three requests on a cold client: what a new connection costs and whether it is kept."""
    name = NAME
    client = client_for(target, opts)
    timings: list[RequestTiming] = []
    try:
        for i in range(n):
            timings.append(await timed_request(client, f"Reply with the word ok. ({i})", 8))
    except LlmError as exc:
        return llm_failure(name, exc)
    finally:
        await client.aclose()
    rows = [{"connect_s": t.connect, "tls_s": t.tls, "headers_s": t.headers, "first_byte_s": t.first_byte,
             "first_token_s": t.first_token, "total_s": t.total, "http_version": t.http_version,
             "reused": t.connect is None} for t in timings]
    parts = [f"#{i + 1}: connect {_ms(t.connect)}" + (f" (TLS {_ms(t.tls)})" if t.tls is not None else "")
             + f", headers {_ms(t.headers)}, first token {_ms(t.first_token)}" for i, t in enumerate(timings)]
    detail = "; ".join(parts)
    data: dict[str, Any] = {"requests": rows}
    if n > 1 and any(t.connect is not None for t in timings[1:]):
        return CheckResult(name, "warn", detail + " — the connection was NOT reused: every answer pays "
                           "connect + TLS again", "the server or a relay closes connections after each "
                           f"response: enable keep-alive (nginx: keepalive_timeout > 0, upstream keepalive; "
                           f"see {RELAY_RECIPE})", data)
    return CheckResult(name, "pass", detail + " — connection reused", data=data)


CHECK = LlmCheck(NAME, check_request_timing)
