"""Start-up: the steps between Start and listening, on a thread of their own
(``session-start``; a replay's ``run_file`` runs them on its caller).

Open the audio (the interviewer's source, and your microphone if any), read the
candidate's documents, build the listeners, then bring the answer engine up beside them
(it may start the embedded LLM server: seconds).  Nothing here installs what it builds:
each piece is handed to the session thread (:class:`StartUpOwner`), which takes it only
if that start is still the current one.  Stop and shutdown set the cancel flag, checked
between the steps, so Stop works while starting and quitting never waits for a step
that is not needed any more.

Whatever a step raises ends that start with one sentence (:meth:`StartUp.run`): on
``session-start`` nobody else would catch it, the thread would die with a traceback and
the session would stay ``starting`` for ever (a headless run never ending).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from app.answer.engine import AnswerEngine, AnswerTarget, Strategy
from app.asr.decoder import WhisperDecoder
from app.asr.prior import term_prior
from app.asr.worker import DecodeWorker
from app.audio import AudioError, AudioSource, FileSource, open_source, source_from_config
from app.audio.echo import HEADPHONES_HINT, EchoGate
from app.core.clock import SessionClock
from app.core.config import Settings
from app.core.events import ErrorEvent, EventBus, StatusEvent
from app.core.low_latency import LowLatency
from app.session.candidate_documents import CandidateDocuments
from app.session.listener import Listener, ListenerHooks, ListenerOptions
from app.session.llm_choice import LlmChoice

log = logging.getLogger(__name__)

FailureKind = Literal["config", "start", "runtime"]
"""Why a session failed: ``config`` (fix the settings: the audio they name cannot be used),
``start`` (a start-up step raised something else: a library that does not load, a bug) or
``runtime`` (it was listening: the device died).  The first two are problems to fix before
a session can start (the command line exits with 2), the last a failure while running (1)."""


@dataclass(frozen=True, slots=True)
class Voices:
    """What one start listens with, published whole by the session thread."""

    interviewer: Listener
    candidate: Listener | None
    echo: EchoGate | None
    names: str
    """The sources, as the status line says them."""

    @property
    def listeners(self) -> list[Listener]:
        return [self.interviewer] + ([self.candidate] if self.candidate is not None else [])


@dataclass(frozen=True, slots=True)
class Sources:
    """Where a start's audio comes from: the devices the settings name, or a recording."""

    audio_file: str | Path | None = None
    """A recording of the interviewer (None: the configured device)."""
    candidate_file: str | Path | None = None
    """A recording of the candidate (a replay has one only when given it)."""
    channels: tuple[int, int] | None = None
    """A two-channel call recording: (the interviewer's channel, the candidate's), 0-based."""
    speed: float = 1.0

    def channel(self, side: int) -> int | None:
        """The file channel of side 0 (the interviewer) or 1 (the candidate); None downmixes."""
        return self.channels[side] if self.channels is not None else None


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """How a session answers and ends turns, and what a lost device does to it."""

    answers: bool = True
    """False: transcripts only, no answer engine."""
    strategy: Strategy = Strategy()
    """The answers' seams (a benchmark's baseline; the product's by default)."""
    listener_options: ListenerOptions = ListenerOptions()
    """How the interviewer's turns end (a benchmark's policy; the product's by default)."""
    stop_on_audio_error: bool = False
    """Losing the interviewer's device ends the session (headless runs)."""


@dataclass(frozen=True, slots=True)
class Parts:
    """The session's parts a start-up builds its listeners and its engine from."""

    decoder: WhisperDecoder
    worker: DecodeWorker
    """One decoding thread for both voices, the interviewer's passes first."""
    documents: CandidateDocuments
    llm: LlmChoice
    hooks: ListenerHooks
    """What the listeners report to."""
    low_latency: LowLatency
    session_id: str


class StartUpOwner(Protocol):
    """The session start-up builds for: each hand-over is a command to its thread (each
    called on start-up's thread; returns at once)."""

    @property
    def engine(self) -> AnswerEngine | None:
        """The session's answer engine, if one is up (one per session, also after Stop)."""

    def listeners_ready(self, generation: int, voices: Voices) -> None:
        """Start ``voices`` if start ``generation`` is still the current one."""

    def engine_ready(self, engine: AnswerEngine) -> None:
        """Let ``engine`` serve the session (or stop it, if one already does)."""

    def start_failed(self, generation: int, kind: FailureKind, message: str) -> None:
        """Start ``generation`` could not be done (said if it is still the current one)."""


class StartUp:
    """The start-up steps of one session, and the cancel flag between them."""

    def __init__(self, settings: Settings, bus: EventBus, clock: SessionClock, owner: StartUpOwner, *,
                 sources: Sources, parts: Parts, options: SessionOptions) -> None:
        self._settings = settings
        self._bus = bus
        self._clock = clock
        self._owner = owner
        self._sources = sources
        self._decoder = parts.decoder
        self._worker = parts.worker
        self._hooks = parts.hooks
        self._low_latency = parts.low_latency
        self._listener_options = options.listener_options
        self._documents = parts.documents
        self._llm = parts.llm
        self._answers = options.answers
        self._strategy = options.strategy
        self._session_id = parts.session_id
        self._cancel = threading.Event()
        """Set by Stop and shutdown: the steps check it between them."""

    # --- the cancel flag (any thread) -----------------------------------------------------

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        """A start-up in progress gives up at its next step."""
        self._cancel.set()

    def reset(self) -> None:
        """A new start begins (the session thread, before it starts the steps)."""
        self._cancel.clear()

    # --- the steps ------------------------------------------------------------------------

    def run(self, generation: int, *, strict: bool = False) -> None:
        """Open the audio, listen, then bring the answer engine up beside it (on
        ``session-start``, or a replay's caller): what it builds goes to the session thread.

        Whatever a step raises is handed over as this start's failure, in one sentence
        (:func:`failure_of`), and goes no further: the caller has returned.  ``strict`` (a
        replay, run on its caller): it is also raised, after it was handed over.
        """
        try:
            self._steps(generation)
        except Exception as exc:
            self._owner.start_failed(generation, *failure_of(exc))
            if strict:
                raise

    def _steps(self, generation: int) -> None:
        source = source_from_config(self._settings.audio, self._clock, file=self._sources.audio_file,
                                    speed=self._sources.speed, channel=self._sources.channel(0))
        candidate = self._open_candidate()
        self._documents.read()  # once per start: the recogniser's terms and the prompt
        engine = self._owner.engine
        if self._sources.audio_file is not None and self._answers and self._llm.answers_locally:
            engine = engine or self._start_engine()  # one per session, also after Stop
            self._owner.engine_ready(engine)
            self._await_answers(engine)
        self._listen(generation, source, candidate)
        if self._answers and engine is None and not self.cancelled:
            self._owner.engine_ready(self._start_engine())

    def _await_answers(self, engine: AnswerEngine) -> None:
        """A recording stands in for an interview the app was already open for: with the
        embedded LLM, which takes seconds to load and read its prompt on a small CPU, it
        plays once answers can come, so its first question is answered as a live one
        would be, not seconds late (decision 0021).  A remote endpoint warms up within the
        recording's lead-in; one that hangs must not hold the captions back."""
        while not engine.warmed.wait(0.1) and not self.cancelled:
            pass

    def _open_candidate(self) -> AudioSource | None:
        """The candidate's microphone, if any: a replay has it only when given one.

        A device's failure is said and the session goes on: the interviewer's side is what
        answers need.  A recording that cannot be read is a mistake in what was asked for
        (AudioError: a config failure).
        """
        audio = self._settings.audio
        sources = self._sources
        if sources.candidate_file is not None:
            return FileSource(sources.candidate_file, self._clock, speed=sources.speed,
                              channel=sources.channel(1))
        try:
            if sources.audio_file is not None or audio.candidate == "off" or audio.source == "mic":
                return None  # a replay, or the interviewer is the microphone already
            return open_source(audio.candidate_device, self._clock)
        except AudioError as exc:
            message = f"your microphone: {exc} The interviewer's side keeps working."
            self._bus.emit(ErrorEvent(t=self._clock.now(), stage="audio", message=message))
            return None

    def _listen(self, generation: int, source: AudioSource, candidate_source: AudioSource | None) -> None:
        """Build the listeners (they report to the session: :class:`ListenerHooks`); the
        session thread starts them."""
        settings = self._llm.effective_settings()
        echo = EchoGate(on_run=self._on_echo_run) if candidate_source is not None else None
        self._decoder.set_terms(self._documents.recogniser_terms(
            self._decoder.pieces, lambda terms: term_prior(self._decoder, terms)))
        listener = Listener(source, self._decoder, settings, self._bus, self._clock, self._hooks,
                            self._listener_options, worker=self._worker)
        candidate = None
        if candidate_source is not None:
            options = dataclasses.replace(self._listener_options, speaker="candidate", echo=echo)
            candidate = Listener(candidate_source, self._decoder, settings, self._bus, self._clock,
                                 self._hooks, options, worker=self._worker)
        names = source.name + (f" and your microphone {candidate_source.name}" if candidate_source else "")
        self._owner.listeners_ready(generation, Voices(listener, candidate, echo, names))

    def _on_echo_run(self, runs: int) -> None:
        """The microphone keeps hearing the interviewer: suggest headphones, once (the
        second run, so one stray correlation never nags)."""
        if runs == 2:
            self._bus.emit(StatusEvent(t=self._clock.now(), stage="echo", message=HEADPHONES_HINT))

    def start_engine(self) -> AnswerEngine:
        """The session's answer engine, started (for a question asked before any listening)."""
        return self._start_engine()

    def _start_engine(self) -> AnswerEngine:
        local = self._llm.answers_locally
        target = AnswerTarget(self._llm.model, self._session_id, base_url=self._llm.base_url,
                              prime_cache=local, one_at_a_time=local)
        engine = AnswerEngine(self._settings, self._bus, self._clock, self._documents.prompt,
                              self._llm.make_client, target=target, strategy=self._strategy,
                              low_latency=self._low_latency)
        self._bus.subscribe(engine.on_event)
        engine.start()
        return engine


def failure_of(exc: Exception) -> tuple[FailureKind, str]:
    """How a start that raised ``exc`` failed, in one sentence.

    An :class:`AudioError` already is that sentence, naming the fix (an unknown device, a
    PortAudio that does not load: ``config``).  Anything else is named by its type and the
    first line of its message (``start``); its traceback goes to the debug log, not to the
    user."""
    if isinstance(exc, AudioError):
        return "config", str(exc)
    log.debug("a start-up step failed", exc_info=exc)
    lines = str(exc).strip().splitlines()
    return "start", f"could not start: {type(exc).__name__}" + (f": {lines[0]}" if lines else "")
