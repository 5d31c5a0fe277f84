"""Per-turn response latency, taken apart from the event stream (no Qt: sessions reuse it).

The figure that matters to the user is how long after the interviewer fell silent the
first words of the answer were on screen.  Every milestone is therefore an offset from the
last ``vad speech=false`` before the endpoint, so the parts read as a timeline and a
speculative request that left *before* the endpoint shows as an earlier milestone, not as
a negative duration hidden inside a sum.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from app.events import (
    AnswerDoneEvent,
    EndpointEvent,
    Event,
    FinalEvent,
    FirstTokenEvent,
    PaintedEvent,
    RequestEvent,
    SpeculationEvent,
    TokenEvent,
    TurnStatsEvent,
    VadEvent,
)

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
    """Milestones of one turn, in seconds after the interviewer fell silent."""

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


@dataclass
class _Request:
    t: float
    kind: str
    first_token_t: float | None = None


@dataclass
class LatencyTracker:
    """Feed it every event in order; read ``last`` (latest answered turn) and ``totals``.

    Which request's tokens were shown is inferred: a speculation ``hit`` names it, else the
    newest non-speculative request of the turn, else the newest request.  Totals come from
    ``answer_done`` until the turn's ``turn_stats`` arrives, which then replaces them
    (turn_stats counts wasted speculative work too).
    """

    last: TurnLatency | None = None
    totals: SessionTotals = field(default_factory=SessionTotals)
    _speech_end: float | None = None
    _speaking: bool = False
    _endpoint_t: float | None = None
    _endpoint_silence_from: float | None = None
    _endpoint_utterance: int | None = None
    _finals: dict[int, float] = field(default_factory=dict)
    _requests: dict[tuple[int, int], _Request] = field(default_factory=dict)
    _hits: dict[int, int] = field(default_factory=dict)
    _outcome: dict[int, str] = field(default_factory=dict)
    _turns: dict[int, TurnLatency] = field(default_factory=dict)
    _per_turn: dict[int, tuple[int, int, float, float, bool]] = field(default_factory=dict)

    def feed(self, event: Event) -> bool:
        """Update from one event; True if ``last`` or ``totals`` changed."""
        if isinstance(event, VadEvent):
            self._speaking = event.speech
            if not event.speech:
                self._speech_end = event.t
            return False
        if isinstance(event, EndpointEvent):
            self._endpoint_t = event.t
            silent = not self._speaking and self._speech_end is not None
            self._endpoint_silence_from = self._speech_end if silent else event.t
            self._endpoint_utterance = event.turn
            return False
        if isinstance(event, FinalEvent):
            self._finals.setdefault(event.turn, event.t)
            late = self.last  # a final after the answer reached the window (rare): fill it in
            if late is None or late.utterance != event.turn or late.final is not None:
                return False
            late.final = event.t - late.silence_at
            return True
        if isinstance(event, RequestEvent):
            self._requests[(event.turn, event.request)] = _Request(event.t, event.kind)
            return False
        if isinstance(event, FirstTokenEvent):
            req = self._requests.get((event.turn, event.request))
            if req is not None and req.first_token_t is None:
                req.first_token_t = event.t
            return False
        if isinstance(event, SpeculationEvent):
            self._outcome[event.turn] = f"{event.outcome} ({event.similarity:.2f})"
            if event.outcome == "hit":
                self._hits[event.turn] = event.request
            if event.turn in self._turns:
                self._turns[event.turn].speculation = self._outcome[event.turn]
            return event.turn in self._turns
        if isinstance(event, TokenEvent):
            if event.turn in self._turns:
                return False
            self.last = self._turns[event.turn] = self._start_turn(event)
            return True
        if isinstance(event, PaintedEvent):
            lat = self._turns.get(event.turn)
            if lat is None or lat.shown is not None:
                return False
            lat.shown = event.t - lat.silence_at  # the paint that put the first words up
            return lat is self.last
        if isinstance(event, AnswerDoneEvent):
            if event.turn not in self._per_turn or not self._per_turn[event.turn][4]:
                prev = self._per_turn.get(event.turn, (0, 0, 0.0, 0.0, False))
                u = event.usage
                self._per_turn[event.turn] = (
                    prev[0] + u.prompt_tokens,
                    prev[1] + u.completion_tokens,
                    prev[2] + event.cost,
                    0.0,
                    False,
                )
                self.totals.estimated = self.totals.estimated or u.estimated
                self._recount()
                return True
            return False
        if isinstance(event, TurnStatsEvent):
            self._per_turn[event.turn] = (
                event.prompt_tokens,
                event.completion_tokens,
                event.cost,
                event.wasted_cost,
                True,
            )
            self._recount()
            return True
        return False

    def _start_turn(self, token: TokenEvent) -> TurnLatency:
        reqs = {r: v for (turn, r), v in self._requests.items() if turn == token.turn}
        chosen: _Request | None = None
        if token.turn in self._hits and self._hits[token.turn] in reqs:
            chosen = reqs[self._hits[token.turn]]
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
            final_t = self._finals.get(self._endpoint_utterance)
            if final_t is not None:
                lat.final = final_t - origin
        if chosen is not None:
            lat.request = chosen.t - origin
            lat.request_kind = chosen.kind
            if chosen.first_token_t is not None:
                lat.first_token = chosen.first_token_t - origin
        lat.token = token.t - origin
        lat.speculation = self._outcome.get(token.turn)
        return lat

    def _recount(self) -> None:
        rows = self._per_turn.values()
        self.totals.prompt_tokens = sum(r[0] for r in rows)
        self.totals.completion_tokens = sum(r[1] for r in rows)
        self.totals.cost = sum(r[2] for r in rows)
        self.totals.wasted_cost = sum(r[3] for r in rows)

    def turn(self, turn: int) -> TurnLatency | None:
        return self._turns.get(turn)

    def turns(self) -> list[TurnLatency]:
        """Every answered turn, in the order its answer first reached the window."""
        return list(self._turns.values())


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile: always a latency that really happened, even with few turns
    (with fewer than 20 turns p95 is simply the slowest one)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]
