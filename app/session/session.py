"""One owner of a running session: its lifecycle, its listening half and its answer
engine.  The window and the command line both drive a :class:`Session`.

States: ``idle → starting → listening → stopping → idle``; ``failed`` when the audio
cannot be opened or dies in a session that must not go on without it.  Every change is
a ``session`` event. Design notes: decision 0039.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Callable, Sequence
from functools import partial

from app.answer.engine import AnswerEngine
from app.asr.decoder import WhisperDecoder, load_decoder
from app.asr.worker import DecodeWorker
from app.core.clock import Deadline, SessionClock
from app.core.config import Settings
from app.core.events import (
    ErrorEvent,
    EventBus,
    SessionState,
    SessionStateEvent,
    StatusEvent,
    WrittenQuestionEvent,
)
from app.core.low_latency import LowLatency
from app.llm.endpoint import LlmEndpoint
from app.platform.app_nap import ListeningActivity
from app.prompt.builder import PromptBuilder
from app.prompt.written import BUNDLED_MODEL_NOTE
from app.session.candidate_documents import CandidateDocuments
from app.session.commands import Controller, SessionCommands
from app.session.listener import Listener
from app.session.llm_choice import LlmChoice
from app.session.start_up import FailureKind, Parts, SessionOptions, Sources, StartUp, Voices
from app.session.voice_hooks import VoiceHooks

__all__ = ["LISTENER_STOP_S", "QUIT_LISTENING_S", "Controller", "FailureKind", "Session", "SessionOptions",
           "Sources"]

LISTENER_STOP_S = 5.0
"""What Stop waits for the listening half in all: a pass or a score on a busy machine
finishes well within it, so the captions end with the last words heard."""
QUIT_LISTENING_S = 1.5
"""What quitting waits for the listening half: noticing a lost device takes up to ~2.5 s
(see app/audio/device.py), and a run whose device died must be over within 5 s of it."""


_NO_SOURCES = Sources()
_PRODUCT = SessionOptions()


def _nothing() -> None:
    """Nothing to stop observing."""


class Session:
    """The one owner of a running session (implements :class:`Controller`)."""

    def __init__(self, settings: Settings, *, sources: Sources = _NO_SOURCES, llm: LlmEndpoint | None = None,
                 options: SessionOptions = _PRODUCT, bus: EventBus | None = None,
                 decoder: WhisperDecoder | None = None, app_nap: ListeningActivity | None = None) -> None:
        """``sources``: recordings to replay (None of them: the configured devices);
        ``llm``: the endpoint (None: the settings', or the embedded model)."""
        self.settings = settings
        self.bus = bus or EventBus()
        self.bus.subscribe(app_nap or ListeningActivity())  # macOS: no App Nap while it listens
        self.clock = SessionClock()
        self.session_id = uuid.uuid4().hex[:12]
        self.low_latency = LowLatency(settings.answer.low_latency)
        """Low-latency mode: this session owns it; the engine, the listener and the window observe."""
        self.low_latency.observe(lambda on: setattr(settings.answer, "low_latency", on))  # the next start's
        self._changed = threading.Condition()
        """Guards ``_shut`` and the command queue's counts; tells waiters the state or the
        counts moved."""
        self.closed = threading.Event()
        """Set when shutdown is over: nothing of the session runs any more."""
        # --- owned by the session thread (others only read a reference) ---
        self._state: SessionState = "idle"
        self._generation = 0
        """Which start is current: a start-up that was stopped hands over nothing."""
        self._starter: threading.Thread | None = None
        self._voices: Voices | None = None
        self._unobserve: Callable[[], None] = _nothing
        """Ends the interviewer's listener's watch on low-latency mode."""
        self._engine: AnswerEngine | None = None
        self._shut = False
        # --- its parts, each the one owner of its own state ---
        self._commands = SessionCommands(self._changed, self.bus, self.clock)
        self._llm_choice = LlmChoice(settings, llm, self.bus, self.clock, answers=options.answers,
                                     on_model_failed=self._local_model_failed)
        self._documents = CandidateDocuments(settings, self.bus, self.clock,
                                             compact=self._llm_choice.answers_bundled)
        lost = self._interviewer_lost if options.stop_on_audio_error else None
        hooks = VoiceHooks(settings, lambda: self._voices, lost)
        self._next_turn = hooks.next_turn
        self._answers = options.answers
        if sources.channels is not None and sources.candidate_file is None:  # both sides from one file
            sources = dataclasses.replace(sources, candidate_file=sources.audio_file)
        parts = Parts(decoder or load_decoder(settings.asr), DecodeWorker(), self._documents,
                      self._llm_choice, hooks, self.low_latency, self.session_id)
        self._start_up = StartUp(settings, self.bus, self.clock, _Handover(self), sources=sources,
                                 parts=parts, options=options)
        self.failure: tuple[FailureKind, str] | None = None
        """Why the session failed: ``config`` (fix the settings) or ``runtime``."""

    # --- Controller ------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def active(self) -> bool:
        """Starting or listening: what Stop would end."""
        return self._state in ("starting", "listening")

    def start(self) -> None:
        """Start listening (start-up on a thread of its own); problems arrive as events."""
        self._commands.post(self._start)

    def stop(self) -> None:
        """Stop listening (also while starting); answers in flight finish."""
        self._commands.post(partial(self._stop, LISTENER_STOP_S))

    def answer_now(self) -> None:
        """The endpoint decision runs on the session thread, in the listener's lock."""
        self._commands.post(self._answer_now)

    def ask_written(self, text: str, images: Sequence[bytes] = (), *, captures: int = 1) -> None:
        """Ask a question read from the screen (``images``: its captures as PNG), answered
        by the same engine as a spoken one; the engine comes up for it if none is.  The
        images go to the endpoint only with ``[screen] send_image``, and to the session
        log (kept beside the session file) only with ``[screen] keep_images``."""
        self._commands.post(partial(self._ask_written, text, tuple(images), captures))

    def cancel_answer(self) -> None:
        self._commands.post(partial(self._on_engine, AnswerEngine.cancel_answer))

    def retract_answer(self) -> None:
        self._commands.post(partial(self._on_engine, AnswerEngine.retract_answer))

    def regenerate(self) -> None:
        self._commands.post(partial(self._on_engine, AnswerEngine.regenerate))

    def set_low_latency(self, on: bool) -> None:
        """Low-latency mode on or off, set on the session thread: its observers hear it there."""
        self._commands.post(partial(self.low_latency.set, on))

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop everything before exit; idempotent, bounded, leaves no child process.

        Runs on the session thread after the commands already asked for; the caller waits
        for it (a headless run must know the session is saved before it exits).  The
        listening half gets :data:`QUIT_LISTENING_S`: its threads are daemons, so a pass
        still running when that is over is simply dropped.
        """
        with self._changed:
            first = not self._shut
            self._shut = True
            self._start_up.cancel()  # a start-up in progress gives up at its next step
            self._llm_choice.shut()  # and starts no embedded server
        if self._commands.on_thread:
            if first:
                self._shutdown(timeout)
            return
        if first:
            self._commands.post(partial(self._shutdown, timeout))
        # each step is bounded; their sum, should a Stop be running first
        self.closed.wait(LISTENER_STOP_S + 2 * QUIT_LISTENING_S + 4 * timeout)

    def wait(self, timeout: float | None = None) -> SessionState:
        """Block until the commands asked for so far have run and the session is no longer
        starting, listening or stopping (headless runs)."""
        self._commands.wait(lambda: self._state not in ("starting", "listening", "stopping"), timeout)
        return self._state

    # --- commands (on the session thread) ----------------------------------------------------

    def _start(self) -> None:
        generation = self._begin()
        if not generation:
            return
        starter = threading.Thread(target=self._start_up.run, args=(generation,),
                                   name="session-start", daemon=True)
        self._starter = starter
        starter.start()

    def _begin(self) -> int:
        """Enter ``starting`` (session thread): the new start's generation, or 0 when shut
        or already running (what such a start-up builds is never installed)."""
        with self._changed:
            if self._shut or self._state not in ("idle", "failed"):
                return 0
            self._start_up.reset()
        self.failure = None
        self._generation += 1
        self._set_state("starting")
        return self._generation

    def _stop(self, timeout: float) -> None:
        if self._state not in ("starting", "listening"):
            return
        self._set_state("stopping")
        self._stop_listening(timeout)
        self._set_state("idle")

    def _stop_listening(self, timeout: float) -> None:
        self._start_up.cancel()
        voices, self._voices = self._voices, None
        if voices is None:
            return
        self._unobserve()
        deadline = Deadline(timeout)
        for listener in voices.listeners:
            listener.stop(deadline.left())

    def _shutdown(self, timeout: float) -> None:
        self._stop(QUIT_LISTENING_S)
        self._stop_listening(QUIT_LISTENING_S)  # also after a failure
        self._llm_choice.stop_local_server()  # unblocks a start-up still waiting for it
        if self._engine is not None:
            self._engine.stop(timeout)
        if self._starter is not None:
            self._starter.join(timeout)
        self._llm_choice.stop_local_server()
        self._commands.close()  # what start-up handed over meanwhile: each sees the session is shut
        self.closed.set()

    def _answer_now(self) -> None:
        if self._voices is not None:
            self._voices.interviewer.answer_now()

    def _ask_written(self, text: str, images: tuple[bytes, ...], captures: int) -> None:
        text = text.strip()
        if not text or not self._answers or self._shut:
            return
        if self._engine is None:  # not listening: the question on the screen alone
            self._documents.read()
            self._use_engine(self._start_up.start_engine())
        engine = self._engine
        if engine is None:
            return
        if self._llm_choice.answers_bundled():
            self._status("answer", BUNDLED_MODEL_NOTE)
        turn = self._next_turn()
        screen = self.settings.screen
        self.bus.emit(WrittenQuestionEvent(t=self.clock.now(), turn=turn, text=text, captures=captures,
                                           images=bool(images) and screen.send_image,
                                           pictures=images if screen.keep_images else ()))
        engine.ask_written(turn, text, images if screen.send_image else ())

    def _on_engine(self, command: Callable[[AnswerEngine], None]) -> None:
        if self._engine is not None:
            command(self._engine)

    def _use_engine(self, engine: AnswerEngine) -> None:
        """Start-up brought the answer engine up: it serves the session from now on."""
        if self._engine is engine:
            return
        if self._shut or self._engine is not None:  # shut meanwhile, or a start-up raced another
            engine.stop()
            return
        self._engine = engine

    def _install(self, generation: int, voices: Voices) -> None:
        """Start-up's listeners: started if that start is still current, else dropped."""
        if generation != self._generation or self._start_up.cancelled or self._state != "starting":
            return
        self._voices = voices
        interviewer = voices.interviewer
        interviewer.set_low_latency(self.low_latency.on)
        self._unobserve = self.low_latency.observe(interviewer.set_low_latency)
        for listener in voices.listeners:
            listener.start()
        self._set_state("listening")
        self._status("audio", f"listening to {voices.names}")

    def _failed(self, generation: int | None, kind: FailureKind, message: str, report: bool = True) -> None:
        """A failure said by start-up (``generation``: of a start that may be over) or by
        the audio (None)."""
        if generation is None or generation == self._generation:
            self._fail(kind, message, report=report)

    def _interviewer_lost(self, message: str) -> None:
        """The interviewer's device is gone (audio thread): a headless run ends."""
        self._commands.post(partial(self._failed, None, "runtime", message, report=False))

    # --- replays -----------------------------------------------------------------------

    def run_file(self, timeout: float = 600.0) -> None:
        """Play the whole file, then wait for the last final and the last answer.

        Raises AudioError when the file cannot be played: a replay has nothing else to do.
        """
        generation = self._commands.call(self._begin)
        try:
            self._start_up.run(generation, strict=True)
        finally:
            self._commands.call(lambda: None)  # what start-up handed over is installed, or its failure said
        voices = self._voices
        for listener in voices.listeners if voices is not None else []:
            listener.finish(timeout)
        engine = self._engine
        if engine is not None:
            engine.wait_idle(timeout)

    @property
    def llm(self) -> LlmEndpoint | None:
        """The configured endpoint (None for the embedded LLM until its server is up)."""
        return self._llm_choice.endpoint

    @property
    def engine(self) -> AnswerEngine | None:
        return self._engine

    @property
    def listener(self) -> Listener | None:
        """The interviewer's: the one that asks."""
        voices = self._voices
        return voices.interviewer if voices is not None else None

    def effective_settings(self) -> Settings:
        """The settings a start runs with: the embedded server's own endpoint wait."""
        return self._llm_choice.effective_settings()

    def _prompt(self, language: str) -> PromptBuilder:
        """The prompt the answer engine gets for ``language`` (what start-up builds it with)."""
        return self._documents.prompt(language)

    def _local_model_failed(self, message: str) -> None:
        """The model file the user chose cannot be loaded (said by the LLM choice): the
        session fails as a config problem and stops listening rather than run on half-failed."""
        self._fail("config", message, report=False)
        self._stop_listening(QUIT_LISTENING_S)

    # --- state ---------------------------------------------------------------------------

    def _fail(self, kind: FailureKind, message: str, *, report: bool = True) -> None:
        self.failure = (kind, message)
        if report:
            stage = "audio" if kind == "config" else "app"
            self.bus.emit(ErrorEvent(t=self.clock.now(), stage=stage, message=message))
        self._set_state("failed", message)

    def _set_state(self, state: SessionState, message: str = "") -> None:
        with self._changed:
            event = self._transition(state, message)
        self._announce(event)

    def _transition(self, state: SessionState, message: str = "") -> SessionStateEvent | None:
        """Change the state (lock held); the event to emit once the lock is released."""
        if self._state == state:
            return None
        self._state = state
        self._changed.notify_all()
        return SessionStateEvent(t=self.clock.now(), state=state, message=message)

    def _announce(self, event: SessionStateEvent | None) -> None:
        if event is not None:
            self.bus.emit(event)

    def _status(self, stage: str, message: str) -> None:
        self.bus.emit(StatusEvent(t=self.clock.now(), stage=stage, message=message))


class _Handover:
    """What start-up hands the session (implements :class:`StartUpOwner`): each hand-over
    becomes a command to the session thread, so start-up's thread never touches its state."""

    def __init__(self, session: Session) -> None:
        self._session = session

    @property
    def engine(self) -> AnswerEngine | None:
        return self._session.engine

    def listeners_ready(self, generation: int, voices: Voices) -> None:
        self._session._commands.post(partial(self._session._install, generation, voices))

    def engine_ready(self, engine: AnswerEngine) -> None:
        self._session._commands.post(partial(self._session._use_engine, engine))

    def start_failed(self, generation: int, kind: FailureKind, message: str) -> None:
        self._session._commands.post(partial(self._session._failed, generation, kind, message))
