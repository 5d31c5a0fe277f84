"""The turn timeline: events → what happened to each turn, when, in one place.

Every stage stamps its events with ``t`` on the session clock, so where a turn's time
went can be rebuilt from the event stream alone, live or from a log.  :class:`Timeline`
is that one reduction; the window's status bar and latency view, the Markdown export,
the OpenTelemetry tracer and ``bench turns`` all read it instead of keeping their own
bookkeeping.  Feed it every event in order (``feed``), then read its stages, latencies,
answers and totals.  Design notes: decision 0039.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from app.core.events import (
    AnswerDoneEvent,
    CutEvent,
    EndpointEvent,
    Event,
    FinalEvent,
    FirstTokenEvent,
    PaintedEvent,
    PartialEvent,
    RequestEvent,
    RestoredEvent,
    RetractedEvent,
    RetractReason,
    SpeculateEvent,
    SpeculationEvent,
    TokenEvent,
    TurnStatsEvent,
    VadEvent,
    WrittenQuestionEvent,
)

# --- raw stages ------------------------------------------------------------------------


@dataclass(slots=True)
class RequestStages:
    """One LLM request: sent, first token received, verdict (speculative), shown, done."""

    id: int
    turn: int
    kind: str
    t: float
    text: str
    speculate: SpeculateEvent | None = None
    """The guess a speculative request was sent for (same text)."""
    first_token: FirstTokenEvent | None = None
    verdicts: list[SpeculationEvent] = field(default_factory=list)
    end: float | None = None
    """When it stopped: answer done, or its guess was discarded."""
    shown: float | None = None
    """Its first token handed to the window."""
    done: AnswerDoneEvent | None = None

    @property
    def verdict(self) -> SpeculationEvent | None:
        """The verdict that decided its fate: the first, unless a hit was later revised."""
        out: SpeculationEvent | None = None
        for v in self.verdicts:
            if out is None or out.outcome == "hit":
                out = v
        return out


@dataclass(slots=True)
class TurnStages:
    """What happened to one turn, as events: the material for a trace or a breakdown."""

    number: int
    speech_start: float | None = None
    """The voice onset that began it (bound to the first turn event after the onset)."""
    first_seen: float | None = None
    last_t: float = 0.0
    endpoints: list[EndpointEvent] = field(default_factory=list)
    finals: list[FinalEvent] = field(default_factory=list)
    speculates: list[SpeculateEvent] = field(default_factory=list)
    requests: dict[int, RequestStages] = field(default_factory=dict)
    first_shown: float | None = None
    """The first token of any of its answers handed to the window."""
    painted: PaintedEvent | None = None
    """The paint that put its first words up."""
    done: AnswerDoneEvent | None = None
    """Its latest ``answer_done``."""
    verdict: SpeculationEvent | None = None
    """Its latest speculation verdict (any request)."""
    hit: int | None = None
    """The request of its latest speculation hit."""
    written: WrittenQuestionEvent | None = None
    """The question read from the screen, when the turn is one (without its pictures)."""

    @property
    def endpoint(self) -> EndpointEvent | None:
        """The endpoint that closed the question (the last, if speech resumed)."""
        return self.endpoints[-1] if self.endpoints else None

    @property
    def final(self) -> FinalEvent | None:
        """The first final transcript (what the first answer was written for)."""
        return self.finals[0] if self.finals else None

    @property
    def speech_end(self) -> float | None:
        """The last voiced frame before the endpoint (endpoint time − its silence)."""
        ep = self.endpoint
        return ep.t - ep.silence if ep is not None else None

    @property
    def answer(self) -> RequestStages | None:
        """The request whose ``answer_done`` came last."""
        return self.requests.get(self.done.request) if self.done is not None else None

    def see(self, t: float) -> None:
        if self.first_seen is None or t < self.first_seen:
            self.first_seen = t
        self.last_t = max(self.last_t, t)


@dataclass(slots=True)
class AnswerShown:
    """An answer that reached the window, and what became of it."""

    request: int
    turn: int
    shown_at: float
    """Its first token handed to the window."""
    text: str = ""
    put_up: float = 0.0
    """The last time it was put on screen (first token, or restored)."""
    regenerated: bool = False
    """It followed another answer of the same turn still standing."""
    cut: bool = False
    retracted: RetractReason | None = None
    """Why it is taken back; None while it stands (or once restored)."""


# --- what the user sees: milestones of an answered turn ---------------------------------

Outcome = Literal["hit", "miss", "none"]
"""A turn's speculation, as the session view colours it: a guess was shown (``hit``), guesses
were sent and thrown away (``miss``, which includes ``cancelled``), or none was sent."""

SegmentKey = Literal["endpoint", "final", "llm", "held", "paint"]

SEGMENT_LABELS: dict[SegmentKey, str] = {
    "endpoint": "endpoint wait",
    "final": "final transcript",
    "llm": "LLM",
    "held": "held",
    "paint": "paint",
}


@dataclass(frozen=True)
class Segment:
    """One stretch of a turn's timeline, seconds after the origin, named by what it waited on."""

    key: SegmentKey
    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def label(self) -> str:
        return SEGMENT_LABELS[self.key]


@dataclass
class TurnLatency:
    """Milestones of one turn, in seconds after the interviewer fell silent.

    The figure that matters to the user is how long after the interviewer fell silent the
    first words of the answer were on screen.  Every milestone is therefore an offset from
    the last ``vad speech=false`` before the endpoint, so the parts read as a timeline and
    a speculative request that left *before* the endpoint shows as an earlier milestone,
    not as a negative duration hidden inside a sum.
    """

    turn: int
    silence_at: float
    """Session time the timeline is measured from (speech end, or the request itself)."""
    endpoint: float | None = None
    final: float | None = None
    """The final transcript of the utterance the endpoint closed (the answer's question)."""
    utterance: int | None = None
    """That utterance, so a final that lands after the first token still finds its turn."""
    request: float | None = None
    request_kind: str | None = None
    first_token: float | None = None
    token: float | None = None
    """First TokenEvent (handed to the window)."""
    shown: float | None = None
    """First paint of the answer (token time + paint latency)."""
    speculation: str | None = None
    origin: str = "silence"
    """What the milestones count from: "silence", or "request" (regenerate, no endpoint)."""

    @property
    def response(self) -> float | None:
        """Silence → first words on screen; falls back to the token hand-over if unpainted."""
        return self.shown if self.shown is not None else self.token

    @property
    def outcome(self) -> Outcome:
        """The turn's last speculation verdict (a hit is never followed by a later verdict)."""
        if not self.speculation:
            return "none"
        return "hit" if self.speculation.startswith("hit") else "miss"

    @property
    def llm_span(self) -> tuple[float, float] | None:
        """Request sent → its first token: the whole LLM wait, which may start before the endpoint."""
        if self.request is None or self.first_token is None:
            return None
        return (self.request, self.first_token)

    def segments(self) -> list[Segment]:
        """The timeline origin → painted, cut into consecutive parts that add up to ``response``.

        Each boundary is the later of its milestone and the previous boundary, so the parts
        never overlap and never go negative: endpoint wait (origin → endpoint), final
        transcript (endpoint → final), LLM (final → first token), held (first token →
        handed to the window: a speculative answer waits for its confirmation here) and
        paint (hand-over → painted).  The LLM part is therefore only the wait the user
        still *saw* after the question was final; when a speculative request left earlier,
        the rest of its time ran hidden under the endpoint wait, and :attr:`llm_span` gives
        the whole request → first token span for drawing that overlap.  Missing milestones
        (no endpoint for a regenerated answer, no paint yet) drop their part.
        """
        marks: list[tuple[SegmentKey, float | None]] = [
            ("endpoint", self.endpoint),
            ("final", self.final),
            ("llm", self.first_token),
            ("held", self.token),
            ("paint", self.shown),
        ]
        out: list[Segment] = []
        at = 0.0
        for key, mark in marks:
            if mark is None:
                continue
            end = max(at, mark)
            out.append(Segment(key, at, end))
            at = end
        return out

    def describe(self) -> str:
        """One line for the status bar: total, then the milestones."""
        total = self.response
        head = "Last turn: …" if total is None else f"Last turn {_ms(total)}:"
        parts: list[str] = []
        if self.endpoint is not None:
            parts.append(f"endpoint {_num(self.endpoint)}")
        if self.request is not None:
            kind = ""
            if self.request_kind == "speculative":
                kind = " spec. " + (self.speculation.split(" ")[0] if self.speculation else "")
            elif self.speculation:
                kind = f" (spec. {self.speculation.split(' ')[0]})"
            parts.append(f"request {_num(self.request)}{kind.rstrip()}")
        if self.first_token is not None:
            parts.append(f"1st token {_num(self.first_token)}")
        if self.shown is not None:
            parts.append(f"shown {_num(self.shown)}")
        if not parts:
            return head.rstrip(":")
        return f"{head} {' · '.join(parts)}"


def _num(seconds: float) -> str:
    """A milestone: signed milliseconds after the origin (silence, or the request)."""
    return f"{seconds * 1000:+.0f}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:+.0f} ms" if seconds < 0 else f"{seconds * 1000:.0f} ms"


@dataclass
class SessionTotals:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    wasted_cost: float = 0.0
    estimated: bool = False

    def describe(self) -> str:
        tokens = self.prompt_tokens + self.completion_tokens
        approx = "≈" if self.estimated else ""
        text = f"{approx}{tokens:,} tok · ${self.cost:.4f}"
        if self.wasted_cost > 0:
            text += f" (spec. waste ${self.wasted_cost:.4f})"
        return text


_TURN_EVENTS = (PartialEvent, SpeculateEvent, EndpointEvent, FinalEvent, RequestEvent, FirstTokenEvent,
                SpeculationEvent, TokenEvent, PaintedEvent, AnswerDoneEvent, WrittenQuestionEvent)
"""The events that place a turn in time (cut/retract/stats only change what it shows)."""


@dataclass
class Timeline:
    """Feed it every event in order; see the module docstring for what to read.

    ``keep_turns`` bounds the per-turn stages kept (the oldest turn goes first), for a
    listener that lives as long as the app.

    Which request's tokens were shown is inferred for :class:`TurnLatency`: a speculation
    ``hit`` names it, else the newest non-speculative request of the turn, else the newest
    request.  Totals come from ``answer_done`` until the turn's ``turn_stats`` arrives,
    which then replaces them (turn_stats counts wasted speculative work too).
    """

    keep_turns: int | None = None
    last: TurnLatency | None = None
    """The latest answered turn's milestones."""
    totals: SessionTotals = field(default_factory=SessionTotals)
    requests: dict[int, RequestStages] = field(default_factory=dict)
    """Every request of the session by id."""
    last_final: FinalEvent | None = None
    """The interviewer's latest final."""
    said: list[FinalEvent] = field(default_factory=list)
    """The candidate's finals: context, never a turn to answer (so never a stage)."""
    outcomes: Counter[str] = field(default_factory=Counter)
    """Speculation verdicts of the session: hit / miss / cancelled."""
    retractions: list[RetractedEvent] = field(default_factory=list)
    stats: list[TurnStatsEvent] = field(default_factory=list)
    _stages: dict[int, TurnStages] = field(default_factory=dict)
    _answers: dict[int, AnswerShown] = field(default_factory=dict)
    _speech_end: float | None = None
    _speaking: bool = False
    _in_utterance: bool = False
    _pending_onset: float | None = None
    _endpoint_t: float | None = None
    _endpoint_silence_from: float | None = None
    _endpoint_utterance: int | None = None
    _latency: dict[int, TurnLatency] = field(default_factory=dict)
    _per_turn: dict[int, tuple[int, int, float, float, bool]] = field(default_factory=dict)

    @classmethod
    def of(cls, events: Iterable[Event]) -> Timeline:
        """The timeline of a whole recorded session (a log read back, a benchmark run)."""
        timeline = cls()
        for event in events:
            timeline.feed(event)
        return timeline

    # --- reading --------------------------------------------------------------------------

    def stages(self, turn: int | None = None) -> list[TurnStages]:
        """Every turn's stages in turn order (or just ``turn``'s, if kept)."""
        if turn is not None:
            return [self._stages[turn]] if turn in self._stages else []
        return [self._stages[n] for n in sorted(self._stages)]

    def forget(self, turn: int) -> TurnStages | None:
        """Drop a turn's stages (a tracer that has built its trace); returns them."""
        return self._stages.pop(turn, None)

    def turn(self, turn: int) -> TurnLatency | None:
        return self._latency.get(turn)

    def turns(self) -> list[TurnLatency]:
        """Every answered turn, in the order its answer first reached the window."""
        return list(self._latency.values())

    def answers(self, turn: int | None = None) -> list[AnswerShown]:
        """Answers that reached the window, in the order they did (of ``turn``, if given)."""
        return [a for a in self._answers.values() if turn is None or a.turn == turn]

    def left_on_screen(self) -> list[AnswerShown]:
        """The answers still standing (not taken back), by when they were last put up."""
        return sorted((a for a in self._answers.values() if a.retracted is None), key=lambda a: a.put_up)

    # --- feeding --------------------------------------------------------------------------

    def _turn(self, number: int, t: float) -> TurnStages:
        stages = self._stages.get(number)
        if stages is None:
            stages = self._stages[number] = TurnStages(number)
            if self.keep_turns is not None and len(self._stages) > self.keep_turns:
                self._stages.pop(min(self._stages))
        stages.see(t)
        return stages

    def feed(self, event: Event) -> bool:
        """Update from one event; True if ``last`` or ``totals`` changed."""
        if isinstance(event, VadEvent):
            self._speaking = event.speech
            if not event.speech:
                self._speech_end = event.t
            elif not self._in_utterance:
                # An onset: the next turn the pipeline speaks of is this one.
                self._in_utterance = True
                self._pending_onset = event.t
            return False
        if isinstance(event, PartialEvent | FinalEvent) and event.speaker == "candidate":
            if isinstance(event, FinalEvent):
                self.said.append(event)
            return False
        if isinstance(event, _TURN_EVENTS):
            stages = self._turn(event.turn, event.t)
            spoken = isinstance(event, PartialEvent | SpeculateEvent | EndpointEvent | FinalEvent)
            if spoken and stages.speech_start is None and self._pending_onset is not None:
                stages.speech_start = self._pending_onset
                self._pending_onset = None
            return self._stage(stages, event)
        if isinstance(event, CutEvent) and event.request in self._answers:
            self._answers[event.request].cut = True
        elif isinstance(event, RetractedEvent):
            self.retractions.append(event)
            if event.request in self._answers:
                self._answers[event.request].retracted = event.reason
        elif isinstance(event, RestoredEvent) and event.request in self._answers:
            answer = self._answers[event.request]
            answer.retracted = None
            answer.put_up = event.t
        elif isinstance(event, TurnStatsEvent):
            self.stats.append(event)
            self._per_turn[event.turn] = (event.prompt_tokens, event.completion_tokens, event.cost,
                                          event.wasted_cost, True)
            self._recount()
            return True
        return False

    def _stage(self, stages: TurnStages, event: Event) -> bool:
        if isinstance(event, WrittenQuestionEvent):
            stages.written = dataclasses.replace(event, pictures=()) if event.pictures else event
        elif isinstance(event, SpeculateEvent):
            stages.speculates.append(event)
        elif isinstance(event, EndpointEvent):
            stages.endpoints.append(event)
            self._in_utterance = False
            self._endpoint_t = event.t
            silent = not self._speaking and self._speech_end is not None
            self._endpoint_silence_from = self._speech_end if silent else event.t
            self._endpoint_utterance = event.turn
        elif isinstance(event, FinalEvent):
            stages.finals.append(event)
            self.last_final = event
            late = self.last  # a final after the answer reached the window (rare): fill it in
            if late is None or late.utterance != event.turn or late.final is not None:
                return False
            late.final = event.t - late.silence_at
            return True
        elif isinstance(event, RequestEvent):
            request = RequestStages(event.request, event.turn, event.kind, event.t, event.text)
            if event.kind == "speculative":
                request.speculate = next((s for s in reversed(stages.speculates) if s.text == event.text),
                                         None)
            stages.requests[event.request] = self.requests[event.request] = request
        elif isinstance(event, FirstTokenEvent):
            req = stages.requests.get(event.request)
            if req is not None and req.first_token is None:
                req.first_token = event
        elif isinstance(event, SpeculationEvent):
            self.outcomes[event.outcome] += 1
            stages.verdict = event
            if event.outcome == "hit":
                stages.hit = event.request
            req = stages.requests.get(event.request)
            if req is not None:
                req.verdicts.append(event)
                if event.outcome != "hit":
                    req.end = event.t
            lat = self._latency.get(event.turn)
            if lat is not None:
                lat.speculation = _verdict(event)
            return lat is not None
        elif isinstance(event, TokenEvent):
            return self._token(stages, event)
        elif isinstance(event, PaintedEvent):
            if stages.painted is None:
                stages.painted = event
            lat = self._latency.get(event.turn)
            if lat is None or lat.shown is not None:
                return False
            lat.shown = event.t - lat.silence_at  # the paint that put the first words up
            return lat is self.last
        elif isinstance(event, AnswerDoneEvent):
            stages.done = event
            req = stages.requests.get(event.request)
            if req is not None:
                req.end = event.t
                req.done = event
            return self._count_done(event)
        return False

    def _token(self, stages: TurnStages, token: TokenEvent) -> bool:
        if stages.first_shown is None:
            stages.first_shown = token.t
        req = stages.requests.get(token.request)
        if req is not None and req.shown is None:
            req.shown = token.t
        answer = self._answers.get(token.request)
        if answer is None:
            regenerated = any(a.retracted is None for a in self.answers(token.turn))
            answer = self._answers[token.request] = AnswerShown(token.request, token.turn, token.t,
                                                               put_up=token.t, regenerated=regenerated)
        answer.text += token.text
        if token.turn in self._latency:
            return False
        self.last = self._latency[token.turn] = self._milestones(stages, token)
        return True

    def _milestones(self, stages: TurnStages, token: TokenEvent) -> TurnLatency:
        reqs = stages.requests
        chosen: RequestStages | None = None
        if stages.hit is not None and stages.hit in reqs:
            chosen = reqs[stages.hit]
        else:
            final = [reqs[r] for r in sorted(reqs) if reqs[r].kind != "speculative"]
            chosen = final[-1] if final else (reqs[max(reqs)] if reqs else None)
        regenerate = chosen is not None and chosen.kind == "regenerate"
        if regenerate or self._endpoint_silence_from is None or self._endpoint_t is None:
            origin = chosen.t if chosen is not None else token.t
            endpoint = None
        else:
            origin = self._endpoint_silence_from
            endpoint = self._endpoint_t - origin
        lat = TurnLatency(turn=token.turn, silence_at=origin, endpoint=endpoint,
                          origin="silence" if endpoint is not None else "request")
        if endpoint is not None and self._endpoint_utterance is not None:
            lat.utterance = self._endpoint_utterance
            closed = self._stages.get(self._endpoint_utterance)
            if closed is not None and closed.final is not None:
                lat.final = closed.final.t - origin
        if chosen is not None:
            lat.request = chosen.t - origin
            lat.request_kind = chosen.kind
            if chosen.first_token is not None:
                lat.first_token = chosen.first_token.t - origin
        lat.token = token.t - origin
        lat.speculation = _verdict(stages.verdict) if stages.verdict is not None else None
        return lat

    def _count_done(self, event: AnswerDoneEvent) -> bool:
        if event.turn in self._per_turn and self._per_turn[event.turn][4]:
            return False  # the turn's turn_stats already counted it
        prev = self._per_turn.get(event.turn, (0, 0, 0.0, 0.0, False))
        u = event.usage
        self._per_turn[event.turn] = (prev[0] + u.prompt_tokens, prev[1] + u.completion_tokens,
                                      prev[2] + event.cost, 0.0, False)
        self.totals.estimated = self.totals.estimated or u.estimated
        self._recount()
        return True

    def _recount(self) -> None:
        rows = self._per_turn.values()
        self.totals.prompt_tokens = sum(r[0] for r in rows)
        self.totals.completion_tokens = sum(r[1] for r in rows)
        self.totals.cost = sum(r[2] for r in rows)
        self.totals.wasted_cost = sum(r[3] for r in rows)


def _verdict(event: SpeculationEvent) -> str:
    return f"{event.outcome} ({event.similarity:.2f})"
