"""Typed events: the only thing stages say to each other and to the outside world.

Every event carries ``t``, seconds on the session clock (0 = first audio sample), so a
turn's latency can be taken apart after the fact from any event log.  Events are frozen
dataclasses: cheap to create on hot paths, safe to hand across threads, and serialised
to one JSON line each by :func:`to_json`.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Literal

OFF_THE_WIRE: Mapping[str, bool] = MappingProxyType({"wire": False})
"""A field's metadata for what an event carries in memory but never in its wire form."""


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every event; ``name`` is the ``"event"`` key on the wire."""

    name: ClassVar[str] = "event"
    t: float


# --- audio / VAD / ASR -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VadEvent(Event):
    name: ClassVar[str] = "vad"
    speech: bool


Speaker = Literal["interviewer", "candidate"]
"""Who spoke: only the interviewer asks questions; the candidate's words are context."""


@dataclass(frozen=True, slots=True)
class LevelEvent(Event):
    """Input level (dBFS of the loudest recent frame) for meters; not written to logs."""

    name: ClassVar[str] = "level"
    dbfs: float
    speaker: Speaker = "interviewer"
    """Whose input it measures: the window has a meter for each."""


@dataclass(frozen=True, slots=True)
class PartialEvent(Event):
    name: ClassVar[str] = "partial"
    turn: int
    text: str
    stable: str
    audio_end: float
    """Session time of the newest audio sample this hypothesis has heard."""
    hypothesis: str = ""
    """The newest pass verbatim: ``text`` keeps settled words for a calm caption, but a
    guess at the question (and a final reusing this pass) takes the best decoding."""
    speaker: Speaker = "interviewer"


@dataclass(frozen=True, slots=True)
class FinalEvent(Event):
    name: ClassVar[str] = "final"
    turn: int
    text: str
    audio_end: float
    reused: bool = False
    """True when the last partial already covered every voiced frame (no second pass)."""
    speaker: Speaker = "interviewer"


@dataclass(frozen=True, slots=True)
class ErrorEvent(Event):
    name: ClassVar[str] = "error"
    stage: str
    message: str


@dataclass(frozen=True, slots=True)
class StatusEvent(Event):
    """Human-readable state changes (device opened, model loaded, server ready)."""

    name: ClassVar[str] = "status"
    stage: str
    message: str


# --- turns / answers ---------------------------------------------------------------

SpeculateReason = Literal["end_word", "silence", "question"]
EndpointReason = Literal["silence", "question", "forced", "end_of_audio"]
RequestKind = Literal["speculative", "final", "regenerate"]
SpeculationOutcome = Literal["hit", "miss", "cancelled"]


@dataclass(frozen=True, slots=True)
class WrittenQuestionEvent(Event):
    """A question read from the screen (or typed), asked as the candidate confirmed it."""

    name: ClassVar[str] = "written"
    turn: int
    text: str
    """What is asked: the captures' text in reading order, as the candidate left it."""
    captures: int = 1
    images: bool = False
    """The captures' images go to the endpoint too (the image setting is on)."""
    kept: tuple[str, ...] = ()
    """The captures' images kept beside the session file (``[screen] keep_images``): their
    names, relative to the session file's folder."""
    pictures: tuple[bytes, ...] = field(default=(), repr=False, compare=False, metadata=OFF_THE_WIRE)
    """The captures as PNG, for the session log to keep (only when ``keep_images`` is on);
    never written as such: the log writes them as files and names them in ``kept``."""


@dataclass(frozen=True, slots=True)
class SpeculateEvent(Event):
    name: ClassVar[str] = "speculate"
    turn: int
    text: str
    reason: SpeculateReason


@dataclass(frozen=True, slots=True)
class EndpointEvent(Event):
    name: ClassVar[str] = "endpoint"
    turn: int
    reason: EndpointReason
    silence: float
    """Seconds of silence after the last voiced frame when the turn was declared over."""


@dataclass(frozen=True, slots=True)
class RequestEvent(Event):
    name: ClassVar[str] = "request"
    turn: int
    request: int
    kind: RequestKind
    text: str


@dataclass(frozen=True, slots=True)
class SpeculationEvent(Event):
    name: ClassVar[str] = "speculation"
    turn: int
    request: int
    outcome: SpeculationOutcome
    similarity: float


@dataclass(frozen=True, slots=True)
class FirstTokenEvent(Event):
    """First content token of a request arrived from the server (shown or held)."""

    name: ClassVar[str] = "first_token"
    turn: int
    request: int
    ttft: float
    """Seconds from the request leaving to its first token."""
    connect: float | None = None
    """Seconds spent on TCP connect + TLS for this request; None = reused connection."""
    tls: float | None = None
    """The TLS part of ``connect``."""
    headers: float | None = None
    """Seconds from the request leaving to the response headers."""
    first_byte: float | None = None
    """Seconds from the request leaving to the first SSE event."""
    http_version: str | None = None
    attempts: int = 1
    """2 when the request was silently re-sent once before its first token."""


@dataclass(frozen=True, slots=True)
class TokenEvent(Event):
    """A token that is shown to the user; discarded speculations never produce one."""

    name: ClassVar[str] = "token"
    turn: int
    request: int
    """The request that wrote it: a regenerated answer is a new request of the same turn."""
    text: str


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    estimated: bool = False
    """True when the server sent no usage and tokens were counted locally."""


@dataclass(frozen=True, slots=True)
class AnswerDoneEvent(Event):
    name: ClassVar[str] = "answer_done"
    turn: int
    request: int
    text: str
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    truncated: bool = False
    """True when the stream broke after its first token: what arrived is kept."""
    error: str | None = None
    """Why the answer is missing or incomplete (the endpoint failed), else None."""


@dataclass(frozen=True, slots=True)
class TurnStatsEvent(Event):
    """Accounting of one turn once its answer is done (or abandoned)."""

    name: ClassVar[str] = "turn_stats"
    turn: int
    requests: int
    speculative_requests: int
    hits: int
    misses: int
    prompt_tokens: int
    completion_tokens: int
    wasted_prompt_tokens: int
    wasted_completion_tokens: int
    cost: float
    wasted_cost: float


@dataclass(frozen=True, slots=True)
class PaintedEvent(Event):
    name: ClassVar[str] = "painted"
    turn: int
    request: int
    latency: float
    """Seconds from the answer engine handing the token over to the widget painting it."""


@dataclass(frozen=True, slots=True)
class CutEvent(Event):
    """An answer still streaming was ended because a newer one goes in front.

    Its request is cancelled; the text shown so far stays, marked as cut short, so the
    window never interleaves two answers.
    """

    name: ClassVar[str] = "cut"
    turn: int
    request: int


RetractReason = Literal["continued", "user"]


@dataclass(frozen=True, slots=True)
class RetractedEvent(Event):
    """An answer that was on screen is taken back (the session log keeps its text).

    ``continued``: the interviewer went on speaking, so it answered half a question;
    ``user``: the user withdrew it.
    """

    name: ClassVar[str] = "retracted"
    turn: int
    request: int
    reason: RetractReason


@dataclass(frozen=True, slots=True)
class ResumedEvent(Event):
    """The interviewer spoke again within the continuation window after an endpoint:
    the new words belong to ``turn``, whose question grows."""

    name: ClassVar[str] = "resumed"
    turn: int
    pause: float
    """Seconds between the endpointed speech's end and the resumed speech."""


@dataclass(frozen=True, slots=True)
class RestoredEvent(Event):
    """A retracted answer is shown again: the continuation was only a tag ("right?")."""

    name: ClassVar[str] = "restored"
    turn: int
    request: int


@dataclass(frozen=True, slots=True)
class LanguageEvent(Event):
    """An ``auto`` session's language, settled by its first utterance and kept after.

    Emitted once per session, before the partial or final that settled it, so the
    endpointer's end words and the answer's prompt can switch before they are needed.
    """

    name: ClassVar[str] = "language"
    language: str
    probability: float
    """Whisper's language probability for it (among the languages auto chooses from)."""


RecallSource = Literal["resume", "job"]


@dataclass(frozen=True, slots=True)
class RecallLine:
    """One line of the résumé or job description that a question touches."""

    text: str
    source: RecallSource
    score: float
    """Lexical match strength (:mod:`app.prompt.recall`): 1.0 ≈ one term as rare as a name."""


@dataclass(frozen=True, slots=True)
class RecallEvent(Event):
    """The lines of the candidate's documents a question touches, found without an LLM.

    Emitted by the answer side when a question is guessed or final and its lines differ
    from those last shown for the turn; an empty ``lines`` clears them (a final that
    touches nothing after a guess that did).
    """

    name: ClassVar[str] = "recall"
    turn: int
    lines: tuple[RecallLine, ...] = ()
    guessed: bool = False
    """True for a guess at the question (``speculate``), False once it is final."""


SessionState = Literal["idle", "starting", "listening", "stopping", "failed"]


@dataclass(frozen=True, slots=True)
class SessionStateEvent(Event):
    """The session's lifecycle: idle → starting → listening → stopping → idle (or failed)."""

    name: ClassVar[str] = "session"
    state: SessionState
    message: str = ""


def to_dict(event: Event) -> dict[str, Any]:
    """The wire form: ``{"event": name, "t": …, …fields}`` with floats rounded to µs."""
    out: dict[str, Any] = {"event": event.name}
    for f in dataclasses.fields(event):
        if not f.metadata.get("wire", True):
            continue
        value = getattr(event, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        elif isinstance(value, tuple) and any(dataclasses.is_dataclass(v) for v in value):
            value = [dataclasses.asdict(v) for v in value]  # RecallEvent.lines
        elif isinstance(value, float):
            value = round(value, 6)
        out[f.name] = value
    return out


def to_json(event: Event) -> str:
    return json.dumps(to_dict(event), ensure_ascii=False)


Subscriber = Callable[[Event], None]
"""What :meth:`EventBus.subscribe` takes (not to be confused with
:class:`app.session.listener.Listener`, the listening half of a session)."""


class EventBus:
    """Fan-out of events to listeners, called synchronously on the emitting thread.

    Listeners must be quick and thread-safe (append to a queue, emit a Qt signal, write a
    line): a stage that emits must never wait on a slow consumer.  A listener that raises
    is reported once on stderr-free terms (as an ErrorEvent to the others) and kept.
    """

    def __init__(self) -> None:
        self._listeners: list[Subscriber] = []
        self._lock = threading.Lock()

    def subscribe(self, listener: Subscriber) -> Callable[[], None]:
        with self._lock:
            self._listeners = [*self._listeners, listener]

        def unsubscribe() -> None:
            with self._lock:
                self._listeners = [x for x in self._listeners if x is not listener]

        return unsubscribe

    def emit(self, event: Event) -> None:
        for listener in self._listeners:  # copy-on-write list: no lock on the hot path
            try:
                listener(event)
            except Exception as exc:  # a broken consumer must not break a stage
                if isinstance(event, ErrorEvent):
                    continue
                self.emit(ErrorEvent(t=event.t, stage="events", message=f"listener failed: {exc}"))
