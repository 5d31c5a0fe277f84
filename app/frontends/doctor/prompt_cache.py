"""Check: does the provider cache the long prefix every question repeats (résumé, job description)?"""

from __future__ import annotations

import contextlib

from app.frontends.checks import CheckResult
from app.frontends.doctor.check import LlmCheck
from app.frontends.doctor.llm_common import client_for, llm_failure
from app.frontends.doctor.options import DoctorOptions
from app.frontends.doctor.target import Target
from app.llm.client import Done
from app.llm.errors import LlmError

NAME = "prompt cache"
CACHE_PREFIX_WORDS = 1400
"""Over the 1024-token minimum of OpenAI-style automatic prompt caching, with margin."""


def cache_prefix(words: int = CACHE_PREFIX_WORDS) -> str:
    """A long, fixed system prompt (like a résumé + job description) that providers cache."""
    vocab = ("experience", "python", "latency", "design", "team", "project", "service", "metrics",
             "testing", "deployment", "customers", "architecture", "reliability", "mentoring")
    return "Candidate notes: " + " ".join(f"{vocab[i % len(vocab)]}{i}" for i in range(words)) + "."


async def check_prompt_cache(target: Target, opts: DoctorOptions) -> CheckResult:
    """Does the provider report cached_tokens on a repeated ≥1024-token prefix?

    The résumé and job description are the same on every question; a provider that
    caches that prefix answers sooner and bills less, and ``cached_tokens`` is how we know.
    """
    name = NAME
    if target.local:  # a prefix long enough for a provider to cache overflows the bundled 2,048-token context
        return CheckResult(name, "skip", "the embedded server keeps the last prompt's state itself: there "
                           "is no provider cache to check", "nothing to fix")
    client = client_for(target, opts)
    prefix = cache_prefix()
    usages = []
    try:
        for question in ("Reply with the word ok.", "Reply with the word yes."):
            done: Done | None = None
            messages = [{"role": "system", "content": prefix}, {"role": "user", "content": question}]
            async with contextlib.aclosing(client.stream_chat(messages, max_tokens=4, temperature=0.0,
                                                              prompt_cache_key="doctor-cache-check")) as s:
                async for item in s:
                    if isinstance(item, Done):
                        done = item
            usages.append(done.usage if done is not None else None)
    except LlmError as exc:
        return llm_failure(name, exc)
    finally:
        await client.aclose()
    second = usages[-1]
    if second is None:
        return CheckResult(name, "warn", "the server sends no token usage in streams, so caching cannot be "
                           "seen (costs are estimated locally)", "nothing to fix in the app; if a relay "
                           "is in between, check it forwards the final usage chunk", {"usage": None})
    data = {"prompt_tokens": second.prompt_tokens, "cached_tokens": second.cached_tokens}
    if second.cached_tokens > 0:
        return CheckResult(name, "pass", f"repeat of a {second.prompt_tokens}-token prompt: "
                           f"{second.cached_tokens} tokens served from the provider's cache", data=data)
    return CheckResult(name, "warn", f"repeat of a {second.prompt_tokens}-token prompt reported 0 "
                       "cached tokens — the résumé/job-description prefix is reprocessed for every question",
                       "use a provider with automatic prefix caching, or check your relay forwards "
                       "prompt_cache_key and usage.prompt_tokens_details", data)


CHECK = LlmCheck(NAME, check_prompt_cache)
