"""One answer's life: a state, and the one function that moves it.

An answer (one request to the LLM) is a guess while its question is not settled, goes on
screen once it is, is taken back when the interviewer goes on, is shown again when the
whole question turns out to be the same, and ends done, cut or failed — or, for a guess
that never showed, wasted.  :meth:`AnswerHandle.transition` is the only place that state
changes: it refuses a move :data:`NEXT` does not list and returns the events the move
means, so every event about an answer comes from a transition.  The engine decides
*when* (which question, which answer is in front); this module decides *what follows*.  The states and
their moves, and design notes: decision 0039.
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass, field

from app.answer.accounting import Ledger, RequestCost
from app.core.events import (
    AnswerDoneEvent,
    CutEvent,
    ErrorEvent,
    Event,
    FirstTokenEvent,
    RequestEvent,
    RequestKind,
    RestoredEvent,
    RetractedEvent,
    RetractReason,
    SpeculationEvent,
    SpeculationOutcome,
    TokenEvent,
    Usage,
)
from app.llm.timing import RequestTiming


class AnswerState(enum.Enum):
    HELD = "held"
    """A guess, streaming: its fragments are held back until the question is settled."""
    READY = "ready"
    """A guess whose stream ended whole: every fragment held, the verdict pending."""
    CONFIRMED = "confirmed"
    """The answer to the question, streaming; none of it on screen yet."""
    SHOWN = "shown"
    """On screen and streaming: each fragment is shown as it comes."""
    WITHDRAWN = "withdrawn"
    """Taken off the screen (the interviewer went on) while streaming: a guess again,
    its new fragments held until the whole question decides."""
    WITHDRAWN_READY = "withdrawn_ready"
    """Withdrawn, and its stream has since ended whole; not accounted yet."""
    WITHDRAWN_DONE = "withdrawn_done"
    """Withdrawn after it was done (and accounted): shown again if the question is the same."""
    DONE = "done"
    """Ended whole, accounted; on screen unless withdrawn later."""
    CUT = "cut"
    """Stopped before its end (a newer answer went in front, the user stopped it); what
    was shown stays, accounted as truncated."""
    FAILED = "failed"
    """The stream failed once the answer was confirmed: the error is said, what was shown stays."""
    WASTED = "wasted"
    """A guess that will never show (missed, cancelled, failed): its cost is wasted spend."""
    RETRACTED = "retracted"
    """Off the screen for good: the user took it back, or the whole question was another one."""


GUESSES = frozenset({AnswerState.HELD, AnswerState.READY, AnswerState.WITHDRAWN,
                     AnswerState.WITHDRAWN_READY, AnswerState.WITHDRAWN_DONE})
"""Waiting for a verdict on their question: the candidates a final is compared with."""
SETTLED = frozenset({AnswerState.DONE, AnswerState.CUT, AnswerState.FAILED, AnswerState.WASTED,
                     AnswerState.WITHDRAWN_DONE, AnswerState.RETRACTED})
"""Accounted for, once: the ledger has their cost and nothing more is streamed."""
_WITHDRAWN = frozenset({AnswerState.WITHDRAWN, AnswerState.WITHDRAWN_READY, AnswerState.WITHDRAWN_DONE})


# --- what can happen to an answer ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sent:
    """The request left (its prompt counted locally)."""

    prompt_tokens: int


@dataclass(frozen=True, slots=True)
class Received:
    """A content fragment arrived; ``timing`` is set on the first one."""

    text: str
    timing: RequestTiming | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """The whole question is the one this guess answers."""

    similarity: float


@dataclass(frozen=True, slots=True)
class Miss:
    """The whole question is another one."""

    similarity: float


@dataclass(frozen=True, slots=True)
class Cancel:
    """Stopped: a newer guess, a newer question, the user's Stop, the session's end."""


@dataclass(frozen=True, slots=True)
class Cut:
    """A newer answer goes in front of this one while it still streams."""


@dataclass(frozen=True, slots=True)
class Continued:
    """The interviewer went on speaking: this answered half a question."""


@dataclass(frozen=True, slots=True)
class Withdraw:
    """The user took the answer on screen back."""


@dataclass(frozen=True, slots=True)
class Complete:
    """The stream ended whole."""


@dataclass(frozen=True, slots=True)
class Fail:
    """The stream failed; ``message`` is the one the user reads."""

    message: str


Trigger = Sent | Received | Hit | Miss | Cancel | Cut | Continued | Withdraw | Complete | Fail

_S = AnswerState
NEXT: dict[AnswerState, dict[type[Trigger], AnswerState]] = {
    _S.HELD: {Sent: _S.HELD, Received: _S.HELD, Hit: _S.CONFIRMED, Miss: _S.WASTED,
              Cancel: _S.WASTED, Complete: _S.READY, Fail: _S.WASTED},
    _S.READY: {Hit: _S.DONE, Miss: _S.WASTED, Cancel: _S.WASTED},
    _S.CONFIRMED: {Sent: _S.CONFIRMED, Received: _S.SHOWN, Cancel: _S.CUT, Continued: _S.HELD,
                   Complete: _S.DONE, Fail: _S.FAILED},
    _S.SHOWN: {Received: _S.SHOWN, Cancel: _S.CUT, Cut: _S.CUT, Continued: _S.WITHDRAWN,
               Withdraw: _S.RETRACTED, Complete: _S.DONE, Fail: _S.FAILED},
    _S.WITHDRAWN: {Received: _S.WITHDRAWN, Hit: _S.SHOWN, Miss: _S.WASTED, Cancel: _S.WASTED,
                   Complete: _S.WITHDRAWN_READY, Fail: _S.WASTED},
    _S.WITHDRAWN_READY: {Hit: _S.DONE, Miss: _S.WASTED, Cancel: _S.WASTED},
    _S.WITHDRAWN_DONE: {Hit: _S.DONE, Miss: _S.RETRACTED, Cancel: _S.RETRACTED},
    _S.DONE: {Continued: _S.WITHDRAWN_DONE, Withdraw: _S.RETRACTED},
    _S.CUT: {Continued: _S.RETRACTED},
    _S.FAILED: {Continued: _S.RETRACTED, Withdraw: _S.RETRACTED},
    _S.WASTED: {},
    _S.RETRACTED: {Continued: _S.RETRACTED},
}
"""Every allowed move: state → what happened → next state.  A hit on a guess that holds
fragments shows them at once, so HELD ─hit─► CONFIRMED goes on to SHOWN in the same move."""


class InvalidTransition(RuntimeError):
    """A move :data:`NEXT` does not allow: a bug in the caller, never a user's doing."""


@dataclass(eq=False, slots=True)
class AnswerHandle:
    """One request of the answer engine: what it asked, what came back, where it stands."""

    id: int
    turn: int
    kind: RequestKind
    text: str
    """The question it asks."""
    ledger: Ledger
    """Where it is accounted, once, when it settles."""
    state: AnswerState = AnswerState.HELD
    received: list[str] = field(default_factory=list)
    """Every fragment, shown or held."""
    on_screen: int = 0
    """How many of ``received`` reached the screen; the rest are held."""
    usage: Usage | None = None
    """What the server counted, once its stream sent it."""
    prompt_tokens: int = 0
    sent_at: float = 0.0
    task: asyncio.Task[None] | None = None
    """The stream feeding it; cancelling it closes the HTTP stream."""

    @classmethod
    def new(cls, id: int, turn: int, kind: RequestKind, text: str, ledger: Ledger) -> AnswerHandle:
        """A guess starts held; a final or regenerated question is confirmed from the start."""
        state = AnswerState.HELD if kind == "speculative" else AnswerState.CONFIRMED
        return cls(id=id, turn=turn, kind=kind, text=text, ledger=ledger, state=state)

    @property
    def held(self) -> list[str]:
        return self.received[self.on_screen:]

    @property
    def settled(self) -> bool:
        return self.state in SETTLED

    @property
    def awaits_verdict(self) -> bool:
        return self.state in GUESSES

    def accepts(self, trigger: type[Trigger]) -> bool:
        return trigger in NEXT[self.state]

    def transition(self, trigger: Trigger, t: float) -> list[Event]:
        """Apply what happened at ``t``: the new state, and the events it means, in order.

        Raises :class:`InvalidTransition` (and changes nothing) for a move not in :data:`NEXT`.
        """
        before = self.state
        target = NEXT[before].get(type(trigger))
        if target is None:
            raise InvalidTransition(f"request {self.id} is {before.value}: {type(trigger).__name__} "
                                    "cannot happen to it")
        self.state = target
        events: list[Event] = []
        match trigger:
            case Sent(prompt_tokens):
                self.sent_at, self.prompt_tokens = t, prompt_tokens
                events.append(RequestEvent(t=t, turn=self.turn, request=self.id, kind=self.kind,
                                           text=self.text))
            case Received(text, timing):
                if not self.received:
                    events.append(self._first_token(t, timing or RequestTiming()))
                self.received.append(text)
                if target is AnswerState.SHOWN:
                    events += self._show(t)
            case Hit(similarity):
                events.append(self._verdict(t, "hit", similarity))
                if before in _WITHDRAWN and self.on_screen:
                    events.append(RestoredEvent(t=t, turn=self.turn, request=self.id))
                if self.held:
                    events += self._show(t)
                    if target is AnswerState.CONFIRMED:
                        self.state = AnswerState.SHOWN
                if target is AnswerState.DONE and before is not AnswerState.WITHDRAWN_DONE:
                    events += self._account(t)
            case Miss(similarity):
                events.append(self._verdict(t, "miss", similarity))
                if target is AnswerState.WASTED:
                    self._waste()
            case Cancel():
                if target is AnswerState.WASTED:
                    events.append(self._verdict(t, "cancelled", 0.0))
                    self._waste()
                elif target is AnswerState.CUT:
                    events += self._account(t, truncated=True)
            case Cut():
                events.append(CutEvent(t=t, turn=self.turn, request=self.id))
                events += self._account(t, truncated=True)
            case Continued():
                if before is not AnswerState.RETRACTED:
                    events += self._retracted(t, "continued")
            case Withdraw():
                events += self._retracted(t, "user")
                if before is AnswerState.SHOWN:
                    events += self._account(t, truncated=True)
            case Complete():
                if target is AnswerState.DONE:
                    events += self._account(t)
            case Fail(message):
                if target is AnswerState.FAILED:
                    events.append(ErrorEvent(t=t, stage="llm", message=message))
                    events += self._account(t, truncated=bool(self.received), error=message)
                else:  # a guess fails silently: the confirmed question says it, if it must
                    self._waste()
        return events

    # --- what a move says --------------------------------------------------------------

    def _first_token(self, t: float, timing: RequestTiming) -> FirstTokenEvent:
        return FirstTokenEvent(t=t, turn=self.turn, request=self.id, ttft=round(t - self.sent_at, 6),
                               connect=timing.connect, tls=timing.tls, headers=timing.headers,
                               first_byte=timing.first_byte, http_version=timing.http_version,
                               attempts=timing.attempts)

    def _show(self, t: float) -> list[Event]:
        text = "".join(self.held)
        self.on_screen = len(self.received)
        return [TokenEvent(t=t, turn=self.turn, text=text, request=self.id)]

    def _verdict(self, t: float, outcome: SpeculationOutcome, similarity: float) -> SpeculationEvent:
        return SpeculationEvent(t=t, turn=self.turn, request=self.id, outcome=outcome,
                                similarity=round(similarity, 4))

    def _retracted(self, t: float, reason: RetractReason) -> list[Event]:
        if not self.on_screen:
            return []  # nothing was seen, nothing is taken back
        return [RetractedEvent(t=t, turn=self.turn, request=self.id, reason=reason)]

    def _cost(self, *, wasted: bool) -> RequestCost:
        return RequestCost.of(self.turn, self.kind, self.prompt_tokens, len(self.received), self.usage,
                              wasted=wasted)

    def _waste(self) -> None:
        self.ledger.add(self._cost(wasted=True))

    def _account(self, t: float, *, truncated: bool = False, error: str | None = None) -> list[Event]:
        cost = self.ledger.add(self._cost(wasted=False))
        usage = self.usage or Usage(prompt_tokens=self.prompt_tokens, completion_tokens=len(self.received),
                                    estimated=True)
        return [AnswerDoneEvent(t=t, turn=self.turn, request=self.id, text="".join(self.received),
                                usage=usage, cost=round(cost, 8), truncated=truncated, error=error),
                self.ledger.turn_stats(self.turn, t)]
