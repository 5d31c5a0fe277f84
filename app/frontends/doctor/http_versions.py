"""Check: HTTP/1.1 against HTTP/2, time to first token here — which one to set, measured, not guessed."""

from __future__ import annotations

import statistics

from app.frontends.checks import CheckResult
from app.frontends.doctor.check import LlmCheck
from app.frontends.doctor.llm_common import client_for, llm_failure, timed_request
from app.frontends.doctor.options import DoctorOptions
from app.frontends.doctor.target import Target
from app.llm.errors import LlmError

NAME = "http/2"


async def check_http_versions(target: Target, opts: DoctorOptions, n: int = 3) -> CheckResult:
    """HTTP/1.1 vs HTTP/2 time to first token here: which one to set, measured, not guessed."""
    name = NAME
    if not target.base_url.lower().startswith("https://"):
        return CheckResult(name, "skip", "plain-HTTP endpoint: HTTP/2 is only negotiated over TLS, so "
                           "HTTP/1.1 is used either way")
    medians: dict[str, float] = {}
    versions: dict[str, str | None] = {}
    for label, h2 in (("http1", False), ("http2", True)):
        try:
            client = client_for(target, opts, http2=h2)
        except ImportError:
            return CheckResult(name, "warn", "HTTP/2 support is not installed, so it could not be compared",
                               "pip install 'interview-copilot[http2]' (httpx2[http2])")
        try:
            await timed_request(client, "Reply with the word ok.", 4)  # connect outside the sample
            samples = [await timed_request(client, f"Reply with the word ok. ({i})", 4) for i in range(n)]
        except LlmError as exc:
            return llm_failure(name, exc)
        finally:
            await client.aclose()
        medians[label] = statistics.median(t.first_token or 0.0 for t in samples)
        versions[label] = samples[-1].http_version
    data = {"first_token_median_s": medians, "negotiated": versions}
    detail = (f"first token median: HTTP/1.1 {medians['http1'] * 1000:.0f} ms, with HTTP/2 enabled "
              f"{medians['http2'] * 1000:.0f} ms (negotiated {versions['http2'] or '?'})")
    if versions["http2"] != "HTTP/2":
        return CheckResult(name, "pass", detail + " — the server does not offer HTTP/2; keep HTTP/1.1",
                           data=data)
    if medians["http2"] < medians["http1"] - 0.020:
        return CheckResult(name, "warn", detail + " — HTTP/2 is faster here",
                           "turn it on: --http2 or llm.http2 = true in settings", data)
    return CheckResult(name, "pass", detail + " — no gain from HTTP/2; keep the default", data=data)


CHECK = LlmCheck(NAME, check_http_versions)
