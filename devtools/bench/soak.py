"""``bench soak``: an hour in one process holds steady, and an empty room costs almost nothing.

A corpus's ``session.wav`` (all its questions in a row) is repeated into one long
recording of ``--minutes`` (45 by default), in one room: pink room tone at ``--room-db``
(-42 dBFS, a quiet office) under everything, and two stretches of nobody speaking
(``--silence-minutes`` each): one after the first two minutes, one in the middle.  It is
played at real time through one Session for the whole run — the path ``bench turns``
replays a clip through, with the test server answering — while a sampler
(:mod:`devtools.bench.sampler`) reads the process tree every ``--sample-s`` seconds: resident
memory, threads, open files, CPU seconds.  Each question is scored from the events of its
own stretch of the run, exactly as ``bench turns`` scores a clip (response latency, stale).

Reported against issue 44's goals: after the first two minutes resident memory grows by
at most 40 MB and threads and open files end where they were; the last 12 questions'
median latency is at most 1.15x the first 12's; no stale answer; and listening to room
tone costs at most 3 % of one core (CPU seconds per minute of silence, and of speech).
``--room-only`` plays nothing but room tone (the empty-room figure alone).
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import threading
import wave
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from app.asr.decoder import load_decoder
from app.audio.frames import SAMPLE_RATE
from app.core.config import Settings
from app.core.events import Event, EventBus, LevelEvent
from app.observing.percentile import median
from app.session.session import Session, Sources
from devtools.bench.corpus import Clip, ms, read_audio
from devtools.bench.sampler import Sample, TreeSampler, at, cpu_per_minute
from devtools.bench.synth import pink_noise
from devtools.bench.turns import as_remote, endpoint_for, score

BASELINE_S = 120.0
"""The goals count from the run's second minute: models loaded, pools warm, caches full."""
SETTLE_S = 20.0
"""A silence's CPU is counted from this long after its start: the last answer is done by then."""
COMPARED = 12
"""Questions at each end whose median latencies are compared."""
GOAL_RSS_MB = 40.0
GOAL_LATENCY_RATIO = 1.15
GOAL_SILENCE_CORE = 0.03
_CHUNK_S = 60.0
"""Room tone is made a minute at a time (a 45-minute array is 350 MB of float64)."""


@dataclass(frozen=True)
class Question:
    text: str
    start_s: float
    end_s: float
    pauses: tuple[tuple[float, float], ...] = ()
    """(start, length) of its pauses, seconds from the run's start."""


@dataclass
class Plan:
    """Where things are in the long recording, seconds from its start."""

    seconds: float
    baseline_s: float
    """The end of the warm-up: what the goals count from."""
    silences: list[tuple[float, float]] = field(default_factory=list)
    speech: list[tuple[float, float]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


@dataclass
class Scored:
    number: int
    text: str
    end_s: float
    latency: float | None
    stale: int
    heard: str


def build_session(corpus: str | Path, out: Path, minutes: float, *, silence_minutes: float = 3.0,
                  warmup_s: float | None = None, room_dbfs: float = -42.0,
                  silence_only: bool = False) -> Plan:
    """Write the long recording to ``out``; where its silences and questions are.

    Speech, silence, speech, silence, speech: the first speech lasts ``warmup_s`` (two
    minutes, a third of a shorter run), the other two share what is left; a silence is at
    most a sixth of the run.  A stretch of speech is the corpus's session repeated, the last
    copy cut before the first question that would not end inside it."""
    seconds = round(minutes * 60, 3)
    warmup_s = min(BASELINE_S, seconds / 3) if warmup_s is None else warmup_s
    plan = Plan(seconds, warmup_s)
    if silence_only:
        plan.silences = [(0.0, seconds)]
    else:
        quiet = min(silence_minutes * 60, seconds / 6)
        rest = (seconds - warmup_s - 2 * quiet) / 2
        if rest <= 0:
            raise SystemExit(f"--minutes {minutes}: too short for two silences of {silence_minutes} min "
                             f"after {warmup_s:.0f} s of speech")
        marks = np.cumsum([0.0, warmup_s, quiet, rest, quiet, rest]).tolist()
        spans = [(round(a, 3), round(b, 3)) for a, b in itertools.pairwise(marks)]
        plan.speech, plan.silences = spans[0::2], spans[1::2]
    voice, entries = _corpus_session(Path(corpus)) if not silence_only else (np.zeros(0), [])
    total = int(seconds * SAMPLE_RATE)
    with wave.open(str(out), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(SAMPLE_RATE)
        for i, begin in enumerate(range(0, total, int(_CHUNK_S * SAMPLE_RATE))):
            n = min(total - begin, int(_CHUNK_S * SAMPLE_RATE))
            chunk = pink_noise(n / SAMPLE_RATE, room_dbfs, seed=i)[:n]
            for start, end in plan.speech:
                _lay_voice(chunk, begin, voice, entries, start, end)
            wav.writeframes(np.clip(chunk, -32768, 32767).astype("<i2").tobytes())
    for start, end in plan.speech:  # the questions, in order (laid out chunk by chunk above)
        plan.questions += _questions(voice, entries, start, end)
    return plan


def _corpus_session(corpus: Path) -> tuple[npt.NDArray[np.float64], list[dict[str, Any]]]:
    entries = json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))
    if not all("session_offset_s" in e for e in entries):
        raise SystemExit(f"{corpus}: its manifest.json has no session_offset_s (no session.wav to repeat)")
    return read_audio(corpus / "session.wav").astype(np.float64), entries


def _copies(voice: npt.NDArray[np.float64], entries: list[dict[str, Any]],
            start: float, end: float) -> list[tuple[float, float]]:
    """(where, how long) each copy of the session goes in the stretch ``start``–``end``."""
    length = len(voice) / SAMPLE_RATE
    out: list[tuple[float, float]] = []
    at_s = start
    while at_s < end:
        room = end - at_s
        if room >= length:
            out.append((at_s, length))
        else:  # the last copy: up to the first question that would not end in the stretch
            cut = next((e["session_offset_s"] for e in entries
                        if e["session_offset_s"] + e["speech_end_s"] + 1.0 > room), room)
            if cut > 0:
                out.append((at_s, cut))
        at_s += length
    return out


def _questions(voice: npt.NDArray[np.float64], entries: list[dict[str, Any]],
               start: float, end: float) -> list[Question]:
    out: list[Question] = []
    for at_s, length in _copies(voice, entries, start, end):
        for e in entries:
            if e["session_offset_s"] + e["speech_end_s"] <= length:
                base = at_s + e["session_offset_s"]
                out.append(Question(e["text"], round(base + e.get("speech_start_s", 0.0), 3),
                                    round(base + e["speech_end_s"], 3),
                                    tuple((base + a, b) for a, b in e.get("pauses", ()))))
    return out


def _lay_voice(chunk: npt.NDArray[np.float64], begin: int, voice: npt.NDArray[np.float64],
               entries: list[dict[str, Any]], start: float, end: float) -> None:
    """Add the session's copies that overlap this chunk (``begin``: its first sample)."""
    for at_s, length in _copies(voice, entries, start, end):
        a = int(at_s * SAMPLE_RATE)
        b = a + int(length * SAMPLE_RATE)
        lo, hi = max(a, begin), min(b, begin + len(chunk))
        if lo < hi:
            chunk[lo - begin:hi - begin] += voice[lo - a:hi - a]


def run(settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    if not args.corpus and not args.room_only:
        raise SystemExit("bench soak: --corpus is needed (or --room-only)")
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "soak.wav"
        plan = build_session(args.corpus, wav, args.minutes, silence_minutes=args.silence_minutes,
                             room_dbfs=args.room_db, silence_only=args.room_only)
        print(f"soak: {args.minutes} min, {len(plan.questions)} questions, silences {plan.silences}",
              flush=True)
        samples, scored = _play(settings, args, wav, plan)
    summary = summarise(plan, samples, scored)
    _print(summary)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    target = Path(args.out) / "bench-soak.json"
    target.write_text(json.dumps({"summary": summary, "plan": asdict(plan),
                                  "samples": [asdict(s) for s in samples],
                                  "questions": [asdict(q) for q in scored]}, indent=1))
    print(f"\nwritten: {target}")
    return summary


class _Events:
    """The events of the run not yet scored (the ``level`` meter's are never kept)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[Event] = []

    def __call__(self, event: Event) -> None:
        if not isinstance(event, LevelEvent):
            with self._lock:
                self._events.append(event)

    def take_before(self, t: float) -> list[Event]:
        """The events before ``t``, forgotten here."""
        with self._lock:
            taken = [e for e in self._events if e.t < t]
            self._events = [e for e in self._events if e.t >= t]
        return taken


def _play(settings: Settings, args: argparse.Namespace, wav: Path,
          plan: Plan) -> tuple[list[Sample], list[Scored]]:
    decoder = load_decoder(settings.asr)
    settings = as_remote(settings)  # the test server stands for a remote provider, as in bench turns
    events = _Events()
    bus = EventBus()
    bus.subscribe(events)
    server = argparse.Namespace(base_url=None, local=False, profile=args.profile, api_key=None, model=None)
    scored: list[Scored] = []
    with endpoint_for(server) as endpoint:
        session = Session(settings, sources=Sources(wav), llm=endpoint, bus=bus, decoder=decoder)
        failure: list[BaseException] = []

        def replay() -> None:
            try:
                session.run_file(timeout=plan.seconds + 600)
            except BaseException as exc:  # reported on the main thread
                failure.append(exc)

        player = threading.Thread(target=replay, name="soak-replay", daemon=True)
        sampler = TreeSampler(every_s=args.sample_s, now=session.clock.now).start()
        player.start()
        pending = list(enumerate(plan.questions, 1))
        next_report = 60.0
        try:
            while player.is_alive():
                player.join(args.sample_s)
                now = session.clock.now()
                pending = _score_closed(pending, plan, events, scored, now, done=False)
                if now >= next_report:
                    _progress(now, sampler.samples, scored)
                    next_report += 60.0
        finally:
            samples = sampler.stop()  # its last sample: the run's end, the session still up
            session.shutdown()
        _score_closed(pending, plan, events, scored, float("inf"), done=True)
        if failure:
            raise failure[0]
    return samples, scored


def _score_closed(pending: list[tuple[int, Question]], plan: Plan, events: _Events, scored: list[Scored],
                  now: float, *, done: bool) -> list[tuple[int, Question]]:
    """Score each question whose stretch (up to the next question) is over, from its events alone."""
    while pending:
        number, question = pending[0]
        following = pending[1][1].start_s - 0.5 if len(pending) > 1 else plan.seconds + 60
        if not done and now < following + 5.0:
            break
        window = events.take_before(following)
        clip = Clip(Path(f"q{number:03d}"), question.text, question.end_s, question.start_s, question.pauses)
        result = score(window, clip, "product")
        scored.append(Scored(number, question.text, question.end_s, result.response_latency, result.stale,
                             result.final))
        pending = pending[1:]
    return pending


def _progress(now: float, samples: list[Sample], scored: list[Scored]) -> None:
    last = samples[-1] if samples else None
    latencies = [q.latency for q in scored[-COMPARED:] if q.latency is not None]
    memory = f"rss {last.rss_mb:.1f} MB  threads {last.threads}  fds {last.fds}" if last else ""
    print(f"{now / 60:5.1f} min  {memory}  questions {len(scored)}  "
          f"latest median {ms(median(latencies))}", flush=True)


def summarise(plan: Plan, samples: list[Sample], scored: list[Scored]) -> dict[str, Any]:
    """The run against the goals (None where the run was too short to say)."""
    base = at(samples, plan.baseline_s)
    # the end: the last sample while the recording played (the source's thread is over after)
    end = next((s for s in reversed(samples) if s.t <= plan.seconds), None)
    later = [s for s in samples if base is not None and s.t >= base.t]
    silence = cpu_per_minute(samples, [(a + SETTLE_S, b) for a, b in plan.silences])
    speech = cpu_per_minute(samples, [(max(a, 30.0), b) for a, b in plan.speech])
    answered = [q.latency for q in scored if q.latency is not None]
    first, last = median(answered[:COMPARED]), median(answered[-COMPARED:])
    growth = end.rss_mb - base.rss_mb if base and end else None
    ratio = round(last / first, 3) if first and last else None
    out: dict[str, Any] = {
        "minutes": plan.seconds / 60,
        "baseline_s": base.t if base else None,
        "rss_baseline_mb": base.rss_mb if base else None,
        "rss_end_mb": end.rss_mb if end else None,
        "rss_growth_mb": growth,
        "rss_max_mb": max((s.rss_mb for s in later), default=None),
        "threads_baseline": base.threads if base else None,
        "threads_end": end.threads if end else None,
        "threads_max": max((s.threads for s in later), default=None),
        "fds_baseline": base.fds if base else None,
        "fds_end": end.fds if end else None,
        "fds_max": max((s.fds for s in later), default=None),
        "cpu_s_per_min_silence": silence,
        "core_share_silence": silence / 60 if silence is not None else None,
        "cpu_s_per_min_speech": speech,
        "core_share_speech": speech / 60 if speech is not None else None,
        "questions": len(scored),
        "answered": len(answered),
        "latency_first12_median_s": first,
        "latency_last12_median_s": last,
        "latency_ratio_last_first": ratio,
        "stale": sum(q.stale for q in scored),
    }
    asked = bool(plan.questions)
    out["goals"] = {  # None: the run cannot say (no questions in an empty room)
        "rss_growth<=40MB": growth is not None and growth <= GOAL_RSS_MB,
        "threads_back": base is not None and end is not None and end.threads <= base.threads,
        "fds_back": base is not None and end is not None and end.fds <= base.fds,
        "latency_ratio<=1.15": ratio is not None and ratio <= GOAL_LATENCY_RATIO if asked else None,
        "stale==0": out["stale"] == 0 if asked else None,
        "silence<=3%core": silence is not None and silence / 60 <= GOAL_SILENCE_CORE,
    }
    return out


def _print(s: dict[str, Any]) -> None:
    def mb(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f} MB"

    def share(x: float | None) -> str:
        return "-" if x is None else f"{x * 100:.2f} % of a core"

    baseline = "-" if s["baseline_s"] is None else f"{s['baseline_s']:.0f} s"
    print(f"\nsoak, {s['minutes']:.1f} min (baseline at {baseline})")
    print(f"rss      {mb(s['rss_baseline_mb'])} → {mb(s['rss_end_mb'])}  growth {mb(s['rss_growth_mb'])}  "
          f"max {mb(s['rss_max_mb'])}")
    print(f"threads  {s['threads_baseline']} → {s['threads_end']}  (max {s['threads_max']})")
    print(f"fds      {s['fds_baseline']} → {s['fds_end']}  (max {s['fds_max']})")
    silence, speech = s["cpu_s_per_min_silence"], s["cpu_s_per_min_speech"]
    print(f"cpu      silence {silence and round(silence, 2)} s/min ({share(s['core_share_silence'])}),  "
          f"speech {speech and round(speech, 2)} s/min ({share(s['core_share_speech'])})")
    print(f"latency  first {COMPARED} {ms(s['latency_first12_median_s'])}, last {COMPARED} "
          f"{ms(s['latency_last12_median_s'])}, ratio {s['latency_ratio_last_first']}  "
          f"({s['answered']}/{s['questions']} answered, {s['stale']} stale)")
    verdicts = {True: "ok", False: "MISSED", None: "n/a"}
    print("goals    " + ", ".join(f"{k} {verdicts[v]}" for k, v in s["goals"].items()))
