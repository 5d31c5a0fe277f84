"""What the LLM checks share: a client with short time-outs, one timed request, a failure with its fix."""

from __future__ import annotations

import contextlib
from typing import Any

from app.frontends.checks import CheckResult
from app.frontends.doctor.options import DoctorOptions
from app.frontends.doctor.target import Target
from app.llm.client import ClientTuning, Done, LlmClient, RequestTiming
from app.llm.errors import LlmError
from app.platform.secrets import key_hint

RELAY_RECIPE = "packaging/relay/nginx.conf"

FIX_BY_KIND = {
    "not_found": "check the base URL (usually ends in /v1) and the model name (--model)",
    "network": "check the base URL, that the server is running, and any proxy (HTTPS_PROXY)",
    "timeout": "check the network path to the endpoint; a VPN or proxy may be dropping packets",
    "rate_limit": "wait, or check the plan and quota of this key",
    "server": "the provider is failing; try again later or use another endpoint",
    "not_answering": "the endpoint accepts connections but does not answer: check the service status, "
                     "the base URL and any relay or proxy in between",
    "bad_stream": "the base URL does not lead to an OpenAI-compatible API (it usually ends in /v1), "
                  "or a proxy in between rewrites the stream",
}


def client_for(target: Target, opts: DoctorOptions, *, http2: bool = False) -> LlmClient:
    # The first-token deadline is the read time-out: a hedged second request would blur
    # the timings this command exists to measure.
    return LlmClient(target.base_url, target.api_key, target.model,
                     ClientTuning(http2=http2, connect_timeout=opts.connect_timeout_s, timeout=opts.timeout_s,
                                  first_token_timeout=opts.timeout_s, rewarm_idle_s=None,
                                  spare_connections=0))


def llm_failure(name: str, exc: LlmError, data: dict[str, Any] | None = None) -> CheckResult:
    # The key hint names only the sources read for this host (OPENAI_API_KEY is not, for most).
    fix = FIX_BY_KIND.get(exc.kind, "check the endpoint settings")
    if exc.kind == "auth":
        fix = key_hint(exc.host)
    return CheckResult(name, "fail", exc.message, fix,
                       {"error": exc.kind, **(data or {})})


def messages(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are a terse assistant."},
            {"role": "user", "content": question}]


async def timed_request(client: LlmClient, question: str, max_tokens: int) -> RequestTiming:
    done: Done | None = None
    async with contextlib.aclosing(client.stream_chat(messages(question), max_tokens=max_tokens,
                                                      temperature=0.0)) as stream:
        async for item in stream:
            if isinstance(item, Done):
                done = item
    assert done is not None
    return done.timing
