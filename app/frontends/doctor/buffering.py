"""Check: is something between us and the model holding the stream back? (nginx ``proxy_buffering``)"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass

from app.frontends.checks import CheckResult
from app.frontends.doctor.check import LlmCheck
from app.frontends.doctor.llm_common import FIX_BY_KIND, RELAY_RECIPE, llm_failure, messages
from app.frontends.doctor.options import DoctorOptions
from app.frontends.doctor.target import Target
from app.llm.body_cap import async_hook
from app.llm.errors import LlmError
from app.platform.redact import redact

NAME = "stream buffering"
BURST_GAP_S = 0.002
"""Reads closer together than this are one burst (one flush of a buffer, split by read size)."""
BIG_BURST_EVENTS = 4
"""A burst carrying this many SSE events at once was held back somewhere."""


@dataclass(frozen=True)
class Arrival:
    """One read from the response body: when (s from the request), how much, how many SSE events."""

    t: float
    nbytes: int
    events: int


@dataclass(frozen=True)
class BufferingStats:
    events: int
    reads: int
    bursts: int
    big_burst_byte_share: float
    """Share of bytes that arrived in bursts of ≥ BIG_BURST_EVENTS events at once."""
    largest_burst_byte_share: float
    spread_s: float
    """First to last body byte."""
    buffered: bool
    conclusive: bool


def analyse_arrivals(arrivals: Sequence[Arrival], *, burst_gap_s: float = BURST_GAP_S,
                     big_burst_events: int = BIG_BURST_EVENTS, min_events: int = 8) -> BufferingStats:
    """Did the stream arrive spread out, or held back and released in a few lumps?

    An unbuffered token stream arrives one SSE event (sometimes two or three) per read,
    whatever the token rate.  A buffering hop (nginx's ``proxy_buffering``, a CDN, gzip)
    releases a whole buffer at once: few reads, each carrying many events.  So the
    verdict is the share of *bytes* that came in multi-event lumps.  A server that
    writes the whole answer in one go looks the same, which the caller words carefully.
    """
    ordered = sorted(arrivals, key=lambda a: a.t)
    bursts: list[list[Arrival]] = []
    for arrival in ordered:
        if bursts and arrival.t - bursts[-1][-1].t <= burst_gap_s:
            bursts[-1].append(arrival)
        else:
            bursts.append([arrival])
    total_bytes = sum(a.nbytes for a in ordered) or 1
    events = sum(a.events for a in ordered)
    burst_bytes = [sum(a.nbytes for a in b) for b in bursts]
    big = sum(nb for b, nb in zip(bursts, burst_bytes, strict=True)
              if sum(a.events for a in b) >= big_burst_events)
    big_share = big / total_bytes
    conclusive = events >= min_events
    return BufferingStats(
        events=events,
        reads=len(ordered),
        bursts=len(bursts),
        big_burst_byte_share=round(big_share, 3),
        largest_burst_byte_share=round(max(burst_bytes, default=0) / total_bytes, 3),
        spread_s=round(ordered[-1].t - ordered[0].t, 4) if ordered else 0.0,
        buffered=conclusive and big_share >= 0.5,
        conclusive=conclusive,
    )


async def measure_arrivals(target: Target, opts: DoctorOptions, max_tokens: int = 64) -> list[Arrival]:
    """Stream one answer with a raw HTTP client and time every read of the body."""
    import httpx2

    body = {
        "model": target.model,
        "messages": messages("Count from 1 to 60 in words, separated by spaces."),
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": True,
    }
    headers = {"Accept": "text/event-stream"}
    if target.api_key:
        headers["Authorization"] = f"Bearer {target.api_key}"
    timeout = httpx2.Timeout(opts.timeout_s, connect=opts.connect_timeout_s)
    arrivals: list[Arrival] = []
    from app.llm.loopback import trust_env  # a loopback endpoint is reached directly, never through a proxy

    async with httpx2.AsyncClient(timeout=timeout, trust_env=trust_env(target.base_url),
                                  event_hooks={"response": [async_hook]}) as http:
        started = time.perf_counter()
        async with http.stream("POST", target.base_url.rstrip("/") + "/chat/completions", json=body,
                               headers=headers) as response:
            if response.status_code >= 400:
                text = (await response.aread()).decode("utf-8", "replace")[:200]
                raise LlmError("bad_request" if response.status_code < 500 else "server",
                               redact(f"streaming request failed ({response.status_code}): {text}",
                                      target.api_key), status=response.status_code)
            async for chunk in response.aiter_bytes():
                arrivals.append(Arrival(time.perf_counter() - started, len(chunk), chunk.count(b"data:")))
    return arrivals


async def check_buffering(target: Target, opts: DoctorOptions,
                          measure: Callable[[], Awaitable[list[Arrival]]] | None = None) -> CheckResult:
    """Is something between us and the model holding the stream back? (nginx proxy_buffering)"""
    name = NAME
    try:
        arrivals = await (measure() if measure is not None else measure_arrivals(target, opts))
    except LlmError as exc:
        return llm_failure(name, exc)
    except Exception as exc:  # httpx2 transport errors: unreachable mid-check
        return CheckResult(name, "fail", f"streaming request failed: {exc!r}", FIX_BY_KIND["network"])
    stats = analyse_arrivals(arrivals)
    data = asdict(stats)
    data["first_event_s"] = next((round(a.t, 4) for a in arrivals if a.events), None)
    first = data["first_event_s"]
    desc = (f"{stats.events} SSE events in {stats.bursts} burst{'s' if stats.bursts != 1 else ''} over "
            f"{stats.spread_s * 1000:.0f} ms, first after {(first or 0) * 1000:.0f} ms; "
            f"{stats.big_burst_byte_share:.0%} of bytes arrived in lumps of ≥{BIG_BURST_EVENTS} events")
    if not stats.conclusive:
        return CheckResult(name, "warn", f"inconclusive: the answer was too short ({stats.events} events)",
                           "re-run doctor with a model that follows the counting prompt", data)
    if stats.buffered:
        return CheckResult(name, "warn", desc + " — the stream is buffered on the way (or the server "
                           "writes the whole answer at once): tokens reach the screen in jumps, the first "
                           "one late",
                           "if you run a relay: proxy_buffering off; proxy_cache off; gzip off; send "
                           f"X-Accel-Buffering: no (recipe: {RELAY_RECIPE}); otherwise ask the provider/"
                           "proxy admin, or bypass the corporate proxy for the API host", data)
    return CheckResult(name, "pass", desc + " — streamed as generated", data=data)


CHECK = LlmCheck(NAME, check_buffering)
