"""How many threads llama.cpp should get beside the recogniser (see :mod:`app.platform.cores`).

Two measurements, each at every thread count in one run (so the machine's mood is the
same for all), alone and beside a recognition loop (tiny.en decoding a 4 s utterance pass
after pass, as while the interviewer speaks):

- the embedded answer server: time to the first token and to the end of a 40-token
  answer, one server per thread count, the questions asked of each in turn;
- the words model: one end-of-turn score.

::

    python -m devtools.bench.cores                 # --threads 2,1 (the first is the baseline)

An answer still streaming after ``--timeout`` seconds is cut and counted as that long.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2

from app.asr.decoder import load_decoder
from app.core.config import AsrConfig
from app.frontends.checks import demo_audio
from app.llm.local_server import LocalServer
from app.observing.percentile import median, p95
from app.prompt.builder import PromptBuilder
from devtools.bench.corpus import ms, read_audio

QUESTIONS = (
    "Why are you interested in this role?",
    "Tell me a little about yourself.",
    "How would you design a URL shortener?",
    "What is your biggest weakness?",
    "Where do you see yourself in five years?",
    "What is the difference between a process and a thread?",
    "How do you handle a disagreement with your manager?",
    "Explain how a hash map works.",
)


@contextmanager
def recognising(busy: bool) -> Iterator[None]:
    """A recognition loop on its own thread while the block runs (nothing when not busy)."""
    if not busy:
        yield
        return
    decoder = load_decoder(AsrConfig())
    audio = read_audio(demo_audio())[: 16_000 * 4]
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            decoder.decode(audio)

    thread = threading.Thread(target=loop, name="recognition-load", daemon=True)
    thread.start()
    time.sleep(1.0)
    try:
        yield
    finally:
        stop.set()
        thread.join()


def answer(http: httpx2.Client, server: LocalServer, question: str, timeout: float) -> tuple[float, float]:
    """(seconds to the first token, seconds to the end) of one streamed answer."""
    body = {"model": server.model, "messages": PromptBuilder(None, None, None).messages(question),
            "max_tokens": 40, "temperature": 0.0, "stream": True}
    started = time.perf_counter()
    first = None
    with http.stream("POST", f"{server.base_url}/chat/completions", json=body,
                     headers=server.auth_headers) as response:
        for line in response.iter_lines():
            elapsed = time.perf_counter() - started
            if first is None and line.startswith("data: {") and _content(line):
                first = elapsed
            if elapsed > timeout:
                break
    end = min(time.perf_counter() - started, timeout)
    return (first if first is not None else end), end


def _content(line: str) -> bool:
    return bool(json.loads(line[6:])["choices"][0]["delta"].get("content"))


Samples = dict[int, list[float]]
"""Seconds measured, per thread count."""


def bench_server(counts: list[int], busy: bool, timeout: float) -> tuple[Samples, Samples]:
    """(first token, whole answer) per thread count."""
    servers = {n: LocalServer(n_ctx=1024, n_threads=n) for n in counts}
    firsts: Samples = {n: [] for n in counts}
    ends: Samples = {n: [] for n in counts}
    try:
        for server in servers.values():
            server.start()
        with httpx2.Client(timeout=httpx2.Timeout(timeout + 5), trust_env=False) as http:
            for server in servers.values():
                answer(http, server, "ping", timeout)  # the prompt's prefix into its cache
            with recognising(busy):
                for question in QUESTIONS:
                    for n, server in servers.items():
                        first, end = answer(http, server, question, timeout)
                        firsts[n].append(first)
                        ends[n].append(end)
    finally:
        for server in servers.values():
            server.stop()
    return firsts, ends


def bench_words(counts: list[int], busy: bool) -> Samples:
    from app.turns.words import WordsScorer

    scorers = {n: WordsScorer(threads=n) for n in counts}
    results: Samples = {n: [] for n in counts}
    with recognising(busy):
        for i in range(30):
            for n, scorer in scorers.items():
                started = time.perf_counter()
                scorer.log_p_end(f"tell me about a time you had to learn something quickly {i}")
                results[n].append(time.perf_counter() - started)
                time.sleep(0.05)
    return results


def report(label: str, counts: list[int], samples: Samples) -> None:
    base = median(samples[counts[0]]) or 0.0
    for n in counts:
        data = samples[n]
        med = median(data) or 0.0
        ratio = f"{base / med:.2f}x" if med else "-"
        print(f"{label:<42} {n} thr  median {ms(med):>9}  p95 {ms(p95(data)):>9}  "
              f"max {ms(max(data)):>9}  vs {counts[0]} thr {ratio}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="2,1", help="thread counts; the first is the baseline")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds before an answer is cut")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.threads.split(",")]
    for busy in (False, True):
        where = "beside recognition" if busy else "alone"
        firsts, ends = bench_server(counts, busy, args.timeout)
        report(f"server first token, {where}", counts, firsts)
        report(f"server 40-token answer, {where}", counts, ends)
        report(f"words model score, {where}", counts, bench_words(counts, busy))


if __name__ == "__main__":
    main()
