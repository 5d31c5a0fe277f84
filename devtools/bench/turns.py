"""``bench turns``: response latency of whole turns, per mode, in one run.

Each clip is replayed at real time through the full pipeline (FileSource → VAD →
streaming ASR → endpointer → answer engine) against an OpenAI-compatible endpoint —
by default our test server in a separate process with the "relay" profile (230 ms
connection set-up, 50 ms queue, 200 ms to the first token, 50 tokens/s).

Modes, measured on the same clips, every mode in turn on each clip (so a machine that
slows down for a while slows every mode alike); the baselines are peers and simple
policies of :mod:`devtools.bench.baselines` handed to the product's seams:

- ``naive``: a new client per request, no pre-warm, no speculation, no shorter wait after
  a question;
- ``user-fixes``: the user's four fixes — one warm pooled client, tokens shown unbuffered,
  speculation with the ``ratio ≥ 0.92`` reuse rule — but no shorter wait after a question;
- ``rules``: the product with the text-rules endpointer and no end-of-turn model, so the
  signals' gain is a ratio too;
- ``pluely``, ``glass``: the turn ends after a fixed 0.4 s (Pluely) or 2 s (Glass) of
  silence, nothing guessed, the product's answer path;
- ``product``: the product defaults.

A mode may change settings on top of the run's: ``product@vad.hangover_ms=30`` (several
``@SECTION.KEY=VALUE`` in a row), so a setting's effect is measured on the same clips in
the same run as the defaults, and printed as a ratio to ``product``.

``--against REV`` (a commit, or a folder holding another checkout) replays the same
clips with that tree's code as well, clip by clip in ABBA order, and reports each mode
twice (``MODE`` here, ``MODE^REV`` there) with the ratio of their medians and p95s: an
earlier behaviour of the product is measured at its commit (see :mod:`devtools.bench.against`).

``--candidate-track`` adds the candidate's side of the call (see :mod:`devtools.bench.candidate`)
and reports, beside the latency, the interviewer's partial cadence, requests written for
the candidate's words (must be 0), echo lines shown as "You" (must be 0) and how late the
candidate's own line comes.

``--load SETS`` (``1,call``: one spinning process; one video-call-like process, see
:mod:`devtools.load`) replays every clip unloaded and under each set, in ABBA order from
clip to clip, every mode in turn under each; a mode under a load is reported as
``MODE~SET``, with the ratio of its median to the same mode's unloaded (above 1: slower).

``--screen-load`` replays every clip also with a screen read in flight: the product's
reader (:class:`app.screen.ocr.Reader`, its own below-priority workers) reading a
1920x1080 problem screen again and again on a ``screen-read`` thread, as the capture panel
does, for as long as the clip plays; ABBA with the clip unloaded, each mode reported as
``MODE~screen`` with its ratio to ``MODE`` (above 1: the capture slowed the spoken answer).

Response latency = t(first shown token of the answer left on screen) − the end of the
whole question.  An answer left on screen is *stale* when it was written for less than
the whole question: its words differ from the turn's last final (fillers and trailing
tags aside), or it covers under three quarters of the words actually asked (a question
cut at a pause).  A *withdrawn* answer was on screen and taken back; its delay is
counted from the moment the interviewer's speech resumed.  *Flicker* is the share of
questions whose answer was shown and then withdrawn because the voice came back, with
how long it had been on screen.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, get_origin

from pydantic import BaseModel, ValidationError

from app.answer.engine import Strategy
from app.asr.decoder import WhisperDecoder, load_decoder
from app.core.config import Settings
from app.core.events import Event, EventBus, FinalEvent, PartialEvent, RequestEvent, SpeculateEvent
from app.core.text import question_key, tags_of, words
from app.llm.endpoint import LOCAL_MODEL, NO_KEY, LlmEndpoint
from app.observing.percentile import median, p95
from app.observing.timeline import Timeline, TurnStages
from app.session.listener import ListenerOptions
from app.session.session import Session, SessionOptions, Sources
from app.turns.endpointer import TurnPolicy
from devtools.bench import candidate, eot
from devtools.bench.baselines import (
    FixedSilencePolicy,
    FuzzyReuse,
    SmartTurnPolicy,
    TextRulesPolicy,
    fresh_client_per_request,
    smart_turn_alone,
    without_models,
    without_question_shortcut,
)
from devtools.bench.corpus import Clip, load_corpus, ms
from devtools.load import LoadSwitch, abba, parse_loads


@dataclass(frozen=True)
class Mode:
    strategy: Strategy = Strategy()
    policy: TurnPolicy | None = None
    """The end of a turn; None: the product's."""
    speculation: bool = True
    """False: the mode runs with ``answer.low_latency`` off (no guess is ever asked)."""
    adjust: Callable[[Settings], None] | None = None
    """Changes the mode makes to the run's settings (on a copy)."""


PRODUCT = "product"
MODES: dict[str, Mode] = {
    "naive": Mode(Strategy(clients=fresh_client_per_request), speculation=False,
                  adjust=without_question_shortcut),
    "user-fixes": Mode(Strategy(reuse=FuzzyReuse(0.92)), adjust=without_question_shortcut),
    "rules": Mode(policy=TextRulesPolicy(), adjust=without_models),
    "pluely": Mode(policy=FixedSilencePolicy(0.4), speculation=False, adjust=without_models),
    "glass": Mode(policy=FixedSilencePolicy(2.0), speculation=False, adjust=without_models),
    "smart-turn": Mode(policy=SmartTurnPolicy(), adjust=smart_turn_alone),
    PRODUCT: Mode(),
}


@dataclass
class TurnResult:
    clip: str
    mode: str
    final: str = ""
    finals: int = 0
    turns: list[int] = field(default_factory=list)
    response_latency: float | None = None
    final_to_first_token: float | None = None
    requests: int = 0
    hits: int = 0
    misses: int = 0
    cancelled: int = 0
    wasted_tokens: int = 0
    tokens: int = 0
    stale: int = 0
    """Answers left on screen that were written for less than the whole question."""
    withdrawn: int = 0
    withdraw_delays: list[float] = field(default_factory=list)
    """Seconds from the resumed speech to each withdrawal."""
    flicker: list[float] = field(default_factory=list)
    """Seconds each answer withdrawn because the voice came back had been on screen."""
    answer: str = field(default="", repr=False)
    # where the response latency went (seconds; None when the step did not happen)
    endpoint_wait: float | None = None
    """speech end → endpoint"""
    asr_final: float | None = None
    """endpoint → final transcript"""
    final_to_request: float | None = None
    """final → the answering request left (negative: it left speculatively, before)"""
    speech_to_request: float | None = None
    """the end of the question → the answering request left: our share of the latency,
    the relay's own time to first token aside"""
    request_to_first_token: float | None = None
    first_token_to_shown: float | None = None
    """first token arrived → shown (held until the turn was confirmed)"""
    cold: bool = False
    """The answer's request paid a connection set-up: no warm connection was free."""
    # both sides of the call (--candidate)
    guesses: list[str] = field(default_factory=list)
    """The interviewer's guesses, in order (what each speculative request was sent for)."""
    cadence: list[float] = field(default_factory=list)
    """Seconds between the interviewer's consecutive partials of the question."""
    candidate_answered: int = 0
    """Guesses and requests written for the candidate's words."""
    echo_lines: int = 0
    """The candidate's lines that repeat the question (the interviewer heard again)."""
    candidate_lines: int = 0
    candidate_lag: float | None = None
    """The candidate's speech end → their line's final."""
    pauses: list[float] = field(default_factory=list)
    """The lengths of the pauses inside the question (s), from the manifest."""
    cut_offs: list[bool] = field(default_factory=list)
    """For each pause: an answer reached the screen after it began, before the true end
    (see :mod:`devtools.bench.eot`)."""
    passes: int = 0
    decode_seconds: float = 0.0
    """The interviewer's recognition passes and their wall time: how fast the machine was
    while this clip played (the response latency moves with it)."""


def run(settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    if getattr(args, "against", None):
        from devtools.bench import against

        return against.run(args)
    clips = load_corpus(args.corpus, args.limit)
    if getattr(args, "clips", None):
        wanted = {name.strip() for name in args.clips.split(",")}
        clips = [c for c in clips if c.path.name in wanted or c.path.stem in wanted]
    if getattr(args, "pauses", False) and not any(c.pauses for c in clips):
        raise SystemExit(f"--pauses: {args.corpus}'s manifest lists no pauses inside its questions")
    decoder = load_decoder(settings.asr)
    if not (args.base_url or args.local):
        settings = as_remote(settings)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for mode in modes:
        mode_settings(settings, mode)  # a mistyped mode fails before the first clip
    variants = [v.strip() for v in getattr(args, "candidate_track", "off").split(",") if v.strip()]
    unknown = [v for v in variants if v not in candidate.VARIANTS]
    if unknown:
        raise SystemExit(f"--candidate-track: unknown {unknown}; choose from {', '.join(candidate.VARIANTS)}")
    try:
        loads = parse_loads(args.load) if getattr(args, "load", None) else []
    except ValueError as exc:
        raise SystemExit(f"--load: {exc}") from None
    results: dict[str, list[TurnResult]] = {}
    screen_levels = [ScreenLoad.NAME] if getattr(args, "screen_load", False) else []
    with (endpoint_for(args) as endpoint, tempfile.TemporaryDirectory() as tracks,
          LoadSwitch(loads) as load, ScreenLoad(bool(screen_levels)) as screen):
        print(f"endpoint: {endpoint.base_url} ({endpoint.model})", flush=True)
        for variant in variants:
            theirs = [candidate.build(clip, variant, i, Path(tracks)) for i, clip in enumerate(clips)]
            names = {mode: mode if variant == "off" else f"{mode}+{variant}" for mode in modes}
            # Clip by clip, every mode in turn: a machine that slows down for a minute
            # slows all modes alike, so the ratios compare like with like.
            for i, (clip, track) in enumerate(zip(clips, theirs, strict=True)):
                # --load: the clip unloaded and under each load, in ABBA order (see abba)
                for level in abba(i, [None, *(spec.name for spec in loads), *screen_levels]):
                    load.only(None if level == ScreenLoad.NAME else level)
                    screen.only(level == ScreenLoad.NAME)
                    for mode, name in names.items():
                        label = name if level is None else f"{name}~{level}"
                        results.setdefault(label, []).append(
                            _replay(settings, decoder, endpoint, clip, mode, track, label))
                load.only(None)
                screen.only(False)
    summary: dict[str, Any] = {mode: _summarise(rs) for mode, rs in results.items()}
    if screen_levels:
        summary["screen_reads_in_flight"] = screen.reads
        print(f"screen reads done while clips played: {screen.reads}", flush=True)
    summary["ratios"] = _ratios(summary)
    _print(results, summary)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    target = Path(args.out) / "bench-turns.json"
    turns = {m: [asdict(r) for r in rs] for m, rs in results.items()}
    report = {"summary": summary, "endpoint": endpoint.base_url, "turns": turns}
    target.write_text(json.dumps(report, indent=1))
    print(f"\nwritten: {target}")
    if getattr(args, "pauses", False):
        curve = Path(args.out) / "eot-curve.png"
        eot.draw([(Path(args.corpus).name, summary)], curve)
        print(f"written: {curve}")
    return summary


class ScreenLoad:
    """A screen read kept in flight while :meth:`only` says so (see the module): the reader
    is loaded and warmed before the first clip (the first capture's load is bench screen's
    to time), then reads one page after another on its own ``screen-read`` thread."""

    NAME = "screen"

    def __init__(self, enabled: bool) -> None:
        self.reads = 0
        self._on, self._stop = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None
        if not enabled:
            return
        from app.screen.ocr import Reader
        from devtools.screen_pages import full_screen

        self._reader, self._page = Reader(), full_screen()
        self._reader.read(self._page.image)
        self._thread = threading.Thread(target=self._run, name="screen-read", daemon=True)
        self._thread.start()

    def only(self, on: bool) -> None:
        if self._thread is None:
            return
        if on:
            self._on.set()
        else:
            self._on.clear()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._on.wait(0.05) and not self._stop.is_set():
                self._reader.read(self._page.image)
                self.reads += 1

    def __enter__(self) -> ScreenLoad:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)


def as_remote(settings: Settings) -> Settings:
    """The test server listens on loopback but stands for a remote provider: it gets the
    hedge and the re-warms a remote one gets ("auto" turns them off on loopback)."""
    remote = {key: "on" for key in ("hedge", "rewarm") if getattr(settings.llm, key) == "auto"}
    return settings.model_copy(update={"llm": settings.llm.model_copy(update=remote)})


def mode_settings(settings: Settings, mode: str) -> tuple[Mode, Settings]:
    """The mode named by ``mode`` and the settings it runs with: ``product@vad.hangover_ms=30``
    is ``product`` with that setting changed, on a copy, by the settings' own validation."""
    base, *changes = mode.split("@")
    if base not in MODES:
        raise SystemExit(f"--modes: unknown mode {base!r}; choose from {', '.join(MODES)}")
    spec = MODES[base]
    changed = settings.model_copy(deep=True)
    changed.answer.low_latency = spec.speculation
    if spec.adjust is not None:
        spec.adjust(changed)
    for change in changes:
        path, is_set, value = change.partition("=")
        section_name, _, key = path.partition(".")
        section = getattr(changed, section_name, None)
        if not is_set or not isinstance(section, BaseModel) or key not in type(section).model_fields:
            raise SystemExit(f"--modes: {change!r} is not SECTION.KEY=VALUE of a setting")
        given: str | list[str] = value
        if get_origin(type(section).model_fields[key].annotation) is list:
            given = value.split("+")  # product@turns.words_languages=en+zh: "," parts the modes
        try:
            setattr(section, key, given)
        except ValidationError as exc:
            raise SystemExit(f"--modes: {change!r}: {exc.errors()[0]['msg']}") from None
    return spec, changed


def _ratios(summary: dict[str, Any]) -> dict[str, float]:
    """Baseline median / product median, for response latency: how many times faster the
    product is; and product / a variant of it (``product@…``): above 1, the changed setting
    is faster."""
    ours = summary.get(PRODUCT, {}).get("response_latency_median_s")
    ratios: dict[str, float] = {}
    for base in (m for m in MODES if m != PRODUCT):
        theirs = summary.get(base, {}).get("response_latency_median_s")
        if ours and theirs:
            ratios[f"{base}/{PRODUCT}"] = round(theirs / ours, 2)
    for loaded in (m for m in summary if "~" in m):  # --load: loaded / unloaded, above 1 slower
        theirs, unloaded = (summary[loaded].get("response_latency_median_s"),
                            summary.get(loaded.rpartition("~")[0], {}).get("response_latency_median_s"))
        if theirs and unloaded:
            ratios[f"{loaded}/{loaded.rpartition('~')[0]}"] = round(theirs / unloaded, 2)
    for variant in (m for m in summary if m.startswith(f"{PRODUCT}@") and "~" not in m):
        theirs = summary[variant].get("response_latency_median_s")
        if ours and theirs:
            ratios[f"{PRODUCT}/{variant}"] = round(ours / theirs, 2)
    return ratios


class endpoint_for:
    """The endpoint for the run: --base-url, the embedded LLM (--local) or our test server."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._args = args
        self._process: subprocess.Popen[str] | None = None
        self._local: object | None = None

    def __enter__(self) -> LlmEndpoint:
        args = self._args
        if args.base_url:
            return LlmEndpoint(args.base_url, args.api_key or "not-needed", args.model or "gpt-4o-mini",
                            local=False)
        if args.local:
            from app.llm.local_server import LocalServer

            server = LocalServer()
            self._local = server
            return LlmEndpoint(server.start(), server.api_key, LOCAL_MODEL, local=True)
        # The checkout holding devtools goes on the child's path: `interview-copilot bench`
        # from an editable install finds devtools beside app, not through sys.path.
        root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "devtools.fake_server", "--profile", args.profile, "--api-key", ""],
            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": path})
        assert self._process.stdout is not None
        url = self._process.stdout.readline().strip()
        # any key: the server takes every one; never a word (every key is masked in all output)
        return LlmEndpoint(url, NO_KEY, "gpt-4o-mini", local=False)

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(10)
        if self._local is not None:
            self._local.stop()  # type: ignore[attr-defined]


def _replay(settings: Settings, decoder: WhisperDecoder, endpoint: LlmEndpoint, clip: Clip,
            mode: str, track: candidate.Track | None, name: str) -> TurnResult:
    spec, changed = mode_settings(settings, mode)
    events: list[Event] = []
    bus = EventBus()
    bus.subscribe(events.append)
    session = Session(changed, sources=Sources(clip.path, candidate_file=track.path if track else None),
                      options=SessionOptions(strategy=spec.strategy,
                                             listener_options=ListenerOptions(policy=spec.policy)),
                      llm=endpoint, bus=bus, decoder=decoder)
    try:
        session.run_file()
        listener = session.listener
        passes, decoding = (listener.passes, listener.decode_seconds) if listener else (0, 0.0)
    finally:
        session.shutdown()
    result = score(events, clip, name)
    result.passes, result.decode_seconds = passes, decoding
    if track is not None:
        _score_candidate(result, events, clip, track)
    print(f"{name:<14} {clip.path.name:<10} {ms(result.response_latency):>8}  "
          f"req {result.requests}  {result.final}", flush=True)
    return result


def _score_candidate(result: TurnResult, events: list[Event], clip: Clip, track: candidate.Track) -> None:
    """Both sides: requests about the candidate's words, echo lines, the candidate's lag."""
    theirs = [f for f in events if isinstance(f, FinalEvent) and f.speaker == "candidate"]
    mine = {f.turn for f in theirs}
    result.candidate_answered = sum(1 for e in events if isinstance(e, RequestEvent | SpeculateEvent)
                                    and e.turn in mine)
    asked = set(words(clip.text))
    for final in theirs:
        said = words(final.text)
        if len(said) >= 2 and sum(w in asked for w in said) / len(said) >= 0.6:
            result.echo_lines += 1  # mostly the question's words: the interviewer, heard again
            continue
        result.candidate_lines += 1
        if result.candidate_lag is None:
            result.candidate_lag = final.t - track.end_s


def _cadence(events: list[Event]) -> list[float]:
    """Gaps between the interviewer's consecutive partials of one turn."""
    partials = [e for e in events if isinstance(e, PartialEvent) and e.speaker == "interviewer"]
    return [b.t - a.t for a, b in itertools.pairwise(partials) if a.turn == b.turn]


def score(events: list[Event], clip: Clip, mode: str) -> TurnResult:
    result = TurnResult(clip=clip.path.name, mode=mode, cadence=_cadence(events),
                        guesses=[e.text for e in events if isinstance(e, SpeculateEvent)])
    timeline = Timeline.of(events)
    # every pause counts, answered or not: one with no answer on screen is no cut-off
    result.pauses = [length for _, length in clip.pauses]
    result.cut_offs = eot.cut_offs([t for a in timeline.answers() for t in (a.shown_at, a.put_up)],
                                   clip.pauses, clip.speech_end_s)
    asked = [s for s in timeline.stages() if s.finals]
    result.finals = sum(len(s.finals) for s in asked)
    result.turns = [s.number for s in asked]
    last = timeline.last_final
    if last is None:
        return result
    result.final = last.text
    result.requests = len(timeline.requests)
    on_screen = timeline.left_on_screen()
    if on_screen:
        answer = on_screen[-1]
        result.response_latency = answer.put_up - clip.speech_end_s
        result.final_to_first_token = answer.put_up - last.t
        result.answer = answer.text
    final_of = {s.number: s.finals[-1].text for s in asked}  # each turn's last (whole) final
    settings = Settings()
    tags = tags_of(settings.turns.all_words("end_words"))
    fillers = settings.turns.all_words("fillers")
    for shown in on_screen:
        request = timeline.requests[shown.request]
        written_for = question_key(request.text, fillers, tags)
        whole = question_key(final_of.get(request.turn, ""), fillers, tags)
        if written_for != whole or len(written_for) < 0.75 * len(words(clip.text)):
            result.stale += 1
    result.withdrawn = len(timeline.retractions)
    shown_at = {a.request: a.shown_at for a in timeline.answers()}
    result.flicker = [round(e.t - shown_at[e.request], 4) for e in timeline.retractions
                      if e.reason == "continued" and e.request in shown_at]
    for event in timeline.retractions:
        resumed = [start + length for start, length in clip.pauses if start + length <= event.t]
        if resumed:
            result.withdraw_delays.append(event.t - max(resumed))
    _breakdown(result, timeline.stages(last.turn)[0], clip)
    result.hits, result.misses, result.cancelled = (timeline.outcomes["hit"], timeline.outcomes["miss"],
                                                    timeline.outcomes["cancelled"])
    result.wasted_tokens = sum(s.wasted_prompt_tokens + s.wasted_completion_tokens for s in timeline.stats)
    result.tokens = sum(s.prompt_tokens + s.completion_tokens for s in timeline.stats)
    return result


def _breakdown(result: TurnResult, turn: TurnStages, clip: Clip) -> None:
    """Where the last question's response latency went, step by step."""
    final = turn.finals[-1]
    if turn.endpoints:
        result.endpoint_wait = turn.endpoints[0].t - clip.speech_end_s
        result.asr_final = final.t - turn.endpoints[0].t
    request = turn.answer
    if request is None:
        return
    result.final_to_request = request.t - final.t
    result.speech_to_request = request.t - clip.speech_end_s
    if request.first_token is not None:
        result.request_to_first_token = request.first_token.t - request.t
        result.cold = request.first_token.connect is not None
        if request.shown is not None:
            result.first_token_to_shown = request.shown - request.first_token.t


def _summarise(results: list[TurnResult]) -> dict[str, Any]:
    latencies = [r.response_latency for r in results if r.response_latency is not None]
    from_final = [r.final_to_first_token for r in results if r.final_to_first_token is not None]
    decided = sum(r.hits + r.misses for r in results)
    delays = [d for r in results for d in r.withdraw_delays]
    passes = sum(r.passes for r in results)
    return {
        "turns": len(results),
        "answered": len(latencies),
        "response_latency_median_s": median(latencies),
        "response_latency_p95_s": p95(latencies),
        "final_to_first_token_median_s": median(from_final),
        "final_to_first_token_p95_s": p95(from_final),
        "speech_to_request_median_s": median([r.speech_to_request for r in results
                                              if r.speech_to_request is not None]),
        "speculation_hit_rate": round(sum(r.hits for r in results) / decided, 3) if decided else None,
        "requests_per_turn": round(sum(r.requests for r in results) / len(results), 3) if results else None,
        "cold_answers": sum(r.cold for r in results),
        "wasted_tokens": sum(r.wasted_tokens for r in results),
        "tokens": sum(r.tokens for r in results),
        "stale_answers_left": sum(r.stale for r in results),
        "withdrawn_answers": sum(r.withdrawn for r in results),
        "withdraw_delay_median_s": median(delays),
        "withdraw_delay_p95_s": p95(delays),
        "flicker_rate": round(sum(bool(r.flicker) for r in results) / len(results), 3) if results else None,
        "flicker_shown_median_s": median([f for r in results for f in r.flicker]),
        "split_turns": sum(len({t for t in r.turns}) > 1 for r in results),
        "partial_cadence_median_s": median([c for r in results for c in r.cadence]),
        "asr_pass_mean_s": sum(r.decode_seconds for r in results) / passes if passes else None,
        "candidate_answered": sum(r.candidate_answered for r in results),
        "echo_lines": sum(r.echo_lines for r in results),
        "candidate_lines": sum(r.candidate_lines for r in results),
        "candidate_lag_median_s": median([r.candidate_lag for r in results if r.candidate_lag is not None]),
        "eot": eot.summary([r.pauses for r in results], [r.cut_offs for r in results],
                           [r.response_latency for r in results]),
    }


def _print(results: dict[str, list[TurnResult]], summary: dict[str, Any]) -> None:
    w = max(14, *(len(mode) for mode in results))
    print(f"\n{'mode':<{w}} {'resp med':>9} {'resp p95':>9} {'fin→tok med':>11} {'fin→tok p95':>11} "
          f"{'hit':>6} {'req/turn':>8} {'wasted':>7} {'stale':>5} {'withdrawn':>9} "
          f"{'wd med':>7} {'wd p95':>7} {'flicker':>7} {'shown':>6}")
    for mode in results:
        s = summary[mode]
        print(f"{mode:<{w}} {ms(s['response_latency_median_s']):>9} {ms(s['response_latency_p95_s']):>9} "
              f"{ms(s['final_to_first_token_median_s']):>11} {ms(s['final_to_first_token_p95_s']):>11} "
              f"{s['speculation_hit_rate']!s:>6} {s['requests_per_turn']!s:>8} {s['wasted_tokens']!s:>7} "
              f"{s['stale_answers_left']!s:>5} {s['withdrawn_answers']!s:>9} "
              f"{ms(s['withdraw_delay_median_s']):>7} {ms(s['withdraw_delay_p95_s']):>7} "
              f"{s['flicker_rate']!s:>7} {ms(s['flicker_shown_median_s']):>6}")
    print(f"\n{'mode':<{w}} {'→request':>8} {'cold':>5} {'cadence':>8} {'ASR pass':>8} {'you lines':>9} "
          f"{'you lag':>8} {'answered':>8} {'echo':>5}")
    for mode in results:
        s = summary[mode]
        print(f"{mode:<{w}} {ms(s['speech_to_request_median_s']):>8} {s['cold_answers']!s:>5} "
              f"{ms(s['partial_cadence_median_s']):>8} {ms(s['asr_pass_mean_s']):>8} "
              f"{s['candidate_lines']!s:>9} "
              f"{ms(s['candidate_lag_median_s']):>8} {s['candidate_answered']!s:>8} {s['echo_lines']!s:>5}")
    for name, ratio in summary["ratios"].items():
        print(f"response latency median, {name}: {ratio}x")
    if any(r.pauses for rs in results.values() for r in rs):
        print("\nmid-turn pauses (false cut-off: an answer on screen before the true end)")
        print("\n".join(eot.table(summary)))
