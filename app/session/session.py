"""One owner of a running session: its lifecycle, its turn ids, its listening half and
its answer engine.  The window and the command line both drive a :class:`Session`.

States: ``idle → starting → listening → stopping → idle``; ``failed`` when the audio
cannot be opened or dies in a session that must not go on without it.  Every change is
a ``session`` event.

The session's state (its state, listeners, answer engine) has one owner: the ``session``
thread, which runs the front end's calls as commands from a queue, in the order they
were made.  The calls return at once, so the window never waits for Stop's joins and
never emits on the bus.  Start-up runs on a thread of its own (``session-start``) and
checks a cancel flag between its steps, so Stop works while starting and quitting never
waits for it; what it builds (the listeners, the engine) it hands to the session thread,
which installs it only if that start is still the current one.  Listening
begins as soon as the audio is open; the answer engine (which may start the embedded
LLM server, seconds) comes up beside it, and a question asked meanwhile waits for it.  A
recording replayed with the embedded LLM starts playing once that is ready.

Turn ids are handed out here, so they stay unique across Stop/Start and a regenerated
answer is a new request of the same turn.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import queue
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from app.answer.engine import AnswerEngine, Strategy
from app.asr.decoder import AUTO, WhisperDecoder, load_decoder
from app.asr.glossary import pick_terms
from app.asr.worker import DecodeWorker
from app.audio import AudioError, AudioSource, FileSource, open_source, source_from_config
from app.audio.echo import HEADPHONES_HINT, EchoGate
from app.audio.frames import AudioFrame
from app.core.clock import Deadline, SessionClock
from app.core.config import Settings
from app.core.events import ErrorEvent, EventBus, SessionState, SessionStateEvent, Speaker, StatusEvent
from app.llm.client import LlmClient
from app.llm.endpoint import (
    LOCAL_MODEL,
    NO_KEY,
    LlmEndpoint,
    LocalModelError,
    local_model_name,
    local_model_path,
)
from app.llm.errors import LlmError
from app.llm.local_server import LocalServer
from app.platform.redact import display_url
from app.prompt.builder import PromptBuilder
from app.prompt.documents import DocumentError, load_job_description, load_resume
from app.prompt.texts import prompt_language
from app.session.listener import Listener, ListenerOptions
from app.turns.signals import TurnSignals

FailureKind = Literal["config", "runtime"]

LISTENER_STOP_S = 5.0
"""What Stop waits for the listening half in all: a pass or a score on a busy machine
finishes well within it, so the captions end with the last words heard."""
QUIT_LISTENING_S = 1.5
"""What quitting waits for the listening half: noticing a lost device takes up to ~2.5 s
(see app/audio/device.py), and a run whose device died must be over within 5 s of it."""

T = TypeVar("T")
Command = Callable[[], None]


@dataclass(frozen=True, slots=True)
class _Listening:
    """What one start listens with, published whole by the session thread."""

    interviewer: Listener
    candidate: Listener | None
    echo: EchoGate | None
    names: str
    """The sources, as the status line says them."""

    @property
    def listeners(self) -> list[Listener]:
        return [self.interviewer] + ([self.candidate] if self.candidate is not None else [])


class Controller(Protocol):
    """What a front end (the window, a scripted demo) may ask of a running session.

    It never reaches into stages: it subscribes to ``bus`` for events and calls these
    methods, which are safe from any thread and return at once.
    """

    bus: EventBus
    clock: SessionClock
    """Stamp events you emit (e.g. ``painted``) with ``clock.now()``."""

    def start(self) -> None:
        """Start listening (opens the audio source; starts the answer engine if needed)."""

    def stop(self) -> None:
        """Stop listening, also while starting; answers in flight finish."""

    def shutdown(self) -> None:
        """Stop everything (audio, ASR, answer engine, local LLM server) before exit; the
        one call that waits (each step bounded): the caller is about to exit."""

    def answer_now(self) -> None:
        """Force the endpoint: treat what was heard so far as the whole question."""

    def cancel_answer(self) -> None:
        """Stop the answer being streamed; its text stays."""

    def retract_answer(self) -> None:
        """Take the answer on screen back (it answered the wrong question)."""

    def regenerate(self) -> None:
        """Ask the last question again: a new answer block of the same turn."""

    def set_low_latency(self, on: bool) -> None:
        """Speculation on/off; takes effect from the next speculation opportunity."""

    @property
    def low_latency(self) -> bool: ...

    @property
    def listening(self) -> bool:
        """Starting or listening: what Stop would end."""
        ...


class Session:
    """The one owner of a running session (implements :class:`Controller`)."""

    def __init__(self, settings: Settings, *, audio_file: str | Path | None = None, speed: float = 1.0,
                 candidate_file: str | Path | None = None, channels: tuple[int, int] | None = None,
                 llm: LlmEndpoint | None = None, answers: bool = True, strategy: Strategy = Strategy(),
                 listener_options: ListenerOptions = ListenerOptions(), bus: EventBus | None = None,
                 decoder: WhisperDecoder | None = None, stop_on_audio_error: bool = False) -> None:
        self.settings = settings
        self.bus = bus or EventBus()
        self.clock = SessionClock()
        self.session_id = uuid.uuid4().hex[:12]
        self._audio_file = audio_file
        self._candidate_file = candidate_file
        self._channels = channels
        """A two-channel call recording: (the interviewer's channel, the candidate's), 0-based."""
        if channels is not None and candidate_file is None:
            self._candidate_file = audio_file  # both sides from the one file
        self._speed = speed
        self._llm = llm
        self._answers = answers
        self._strategy = strategy
        self._listener_options = listener_options
        self._stop_on_audio_error = stop_on_audio_error
        self._decoder = decoder or load_decoder(settings.asr)
        self._turn_ids = itertools.count(1)
        self._lock = threading.Lock()
        """Guards the command queue's counts, ``_shut`` and ``_local_server``; ``_changed``
        (the same lock) tells waiters the state or the counts moved."""
        self._changed = threading.Condition(self._lock)
        self._commands: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        """The ``session`` thread: started by the first command, ended by shutdown."""
        self._posted = self._done = 0
        self._open = True
        """Commands are taken (False once shutdown has drained the queue)."""
        self.closed = threading.Event()
        """Set when shutdown is over: nothing of the session runs any more."""
        # --- owned by the session thread (others only read a reference) ---
        self._state: SessionState = "idle"
        self._generation = 0
        """Which start is current: a start-up that was stopped hands over nothing."""
        self._starter: threading.Thread | None = None
        self._listening: _Listening | None = None
        # --- shared, each safe on its own ---
        self._cancel = threading.Event()
        """Set by Stop and shutdown: start-up checks it between its steps."""
        self._shut = False
        self._worker = DecodeWorker()
        """One decoding thread for both voices, the interviewer's passes first."""
        self._turn_signals: TurnSignals | None = None
        self._signals_lock = threading.Lock()
        self._engine: AnswerEngine | None = None
        self._local_server: LocalServer | None = None
        self.failure: tuple[FailureKind, str] | None = None
        """Why the session failed: ``config`` (fix the settings) or ``runtime``."""

    # --- Controller ------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def listening(self) -> bool:
        """Starting or listening: what Stop would end."""
        return self._state in ("starting", "listening")

    def start(self) -> None:
        """Start listening (start-up on a thread of its own); problems arrive as events."""
        self._post(self._start)

    def stop(self) -> None:
        """Stop listening (also while starting); answers in flight finish."""
        self._post(partial(self._stop, LISTENER_STOP_S))

    def answer_now(self) -> None:
        """The endpoint decision runs on the session thread, in the listener's lock."""
        self._post(self._answer_now)

    def cancel_answer(self) -> None:
        self._post(partial(self._on_engine, AnswerEngine.cancel_answer))

    def retract_answer(self) -> None:
        self._post(partial(self._on_engine, AnswerEngine.retract_answer))

    def regenerate(self) -> None:
        self._post(partial(self._on_engine, AnswerEngine.regenerate))

    def set_low_latency(self, on: bool) -> None:
        self._post(partial(self._set_low_latency, on))

    @property
    def low_latency(self) -> bool:
        engine = self._engine
        return engine.low_latency if engine is not None else self.settings.answer.low_latency

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop everything before exit; idempotent, bounded, leaves no child process.

        Runs on the session thread after the commands already asked for; the caller waits
        for it (a headless run must know the session is saved before it exits).  The
        listening half gets :data:`QUIT_LISTENING_S`: its threads are daemons, so a pass
        still running when that is over is simply dropped.
        """
        with self._lock:
            first = not self._shut
            self._shut = True
            self._cancel.set()  # a start-up in progress gives up at its next step
        if threading.current_thread() is self._thread:
            if first:
                self._shutdown(timeout)
            return
        if first:
            self._post(partial(self._shutdown, timeout))
        # each step is bounded; their sum, should a Stop be running first
        self.closed.wait(LISTENER_STOP_S + 2 * QUIT_LISTENING_S + 4 * timeout)

    def wait(self, timeout: float | None = None) -> SessionState:
        """Block until the commands asked for so far have run and the session is no longer
        starting, listening or stopping (headless runs)."""
        with self._changed:
            asked = self._posted
            self._changed.wait_for(lambda: self._done >= asked and (
                not self._open or self._state not in ("starting", "listening", "stopping")), timeout)
            return self._state

    # --- the session thread ----------------------------------------------------------------

    def _post(self, command: Command) -> bool:
        """Queue ``command`` for the session thread (started by the first one); dropped
        (False) once shutdown is over."""
        with self._changed:
            if not self._open:
                return False
            self._posted += 1
            self._commands.put(command)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="session", daemon=True)
                self._thread.start()
        return True

    def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the session thread and wait for its result (for a replay's caller,
        which the session thread never waits on)."""
        if threading.current_thread() is self._thread:
            return fn()
        done: Future[T] = Future()

        def command() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:
                done.set_exception(exc)

        if not self._post(command):
            raise RuntimeError("the session is shut down")
        return done.result()

    def _run(self) -> None:
        while True:
            self._run_one(self._commands.get())
            with self._changed:
                if not self._open:
                    return

    def _run_one(self, command: Command) -> None:
        try:
            command()
        except Exception as exc:  # a bug in one command must not end the session's thread
            self.bus.emit(ErrorEvent(t=self.clock.now(), stage="app", message=f"{type(exc).__name__}: {exc}"))
        finally:
            with self._changed:
                self._done += 1
                self._changed.notify_all()

    def _start(self) -> None:
        generation = self._begin()
        if not generation:
            return
        starter = threading.Thread(target=self._start_steps, args=(generation,),
                                   name="session-start", daemon=True)
        self._starter = starter
        starter.start()

    def _begin(self) -> int:
        """Enter ``starting`` (session thread): the new start's generation, or 0 when shut
        or already running (what such a start-up builds is never installed)."""
        with self._lock:
            if self._shut or self._state not in ("idle", "failed"):
                return 0
            self._cancel.clear()
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
        self._cancel.set()
        listening, self._listening = self._listening, None
        if listening is None:
            return
        deadline = Deadline(timeout)
        for listener in listening.listeners:
            listener.stop(deadline.left())

    def _shutdown(self, timeout: float) -> None:
        self._stop(QUIT_LISTENING_S)
        self._stop_listening(QUIT_LISTENING_S)  # also after a failure
        self._stop_local_server()  # unblocks a start-up still waiting for it
        if self._engine is not None:
            self._engine.stop(timeout)
        if self._starter is not None:
            self._starter.join(timeout)
        self._stop_local_server()
        while True:  # what start-up handed over meanwhile: each sees the session is shut
            with self._changed:
                try:
                    command = self._commands.get_nowait()
                except queue.Empty:
                    self._open = False
                    break
            self._run_one(command)
        self.closed.set()

    def _answer_now(self) -> None:
        if self._listening is not None:
            self._listening.interviewer.answer_now()

    def _on_engine(self, command: Callable[[AnswerEngine], None]) -> None:
        if self._engine is not None:
            command(self._engine)

    def _set_low_latency(self, on: bool) -> None:
        if self._engine is not None:
            self._engine.set_low_latency(on)
        self.settings.answer.low_latency = on

    def _use_engine(self, engine: AnswerEngine) -> None:
        """Start-up brought the answer engine up: it serves the session from now on."""
        if self._engine is engine:
            return
        if self._shut or self._engine is not None:  # shut meanwhile, or a start-up raced another
            engine.stop()
            return
        self._engine = engine

    def _install(self, generation: int, listening: _Listening) -> None:
        """Start-up's listeners: started if that start is still current, else dropped."""
        if generation != self._generation or self._cancel.is_set() or self._state != "starting":
            return
        self._listening = listening
        for listener in listening.listeners:
            listener.start()
        self._set_state("listening")
        self._status("audio", f"listening to {listening.names}")

    def _failed(self, generation: int | None, kind: FailureKind, message: str, report: bool = True) -> None:
        """A failure said by start-up (``generation``: of a start that may be over) or by
        the audio (None)."""
        if generation is None or generation == self._generation:
            self._fail(kind, message, report=report)

    # --- ListenerHooks (on the listeners' threads) ------------------------------------------

    def next_turn(self) -> int:
        """One counter for both voices and every start."""
        return next(self._turn_ids)

    @property
    def scores_turns(self) -> bool:
        return True

    def turn_signals(self) -> TurnSignals:
        return self._load_turn_signals()

    def frame_heard(self, speaker: Speaker, frame: AudioFrame) -> None:
        """The interviewer's frames are the echo gate's reference."""
        listening = self._listening
        if speaker == "interviewer" and listening is not None and listening.echo is not None:
            listening.echo.feed_reference(frame)

    def speech_started(self, speaker: Speaker, t: float) -> None:
        """The candidate spoke: the interviewer's next words are a new question."""
        listening = self._listening
        if speaker == "candidate" and listening is not None:
            listening.interviewer.other_spoke(t)

    def source_failed(self, speaker: Speaker, message: str) -> None:
        """The interviewer's device is gone: the window waits for it to come back, a
        headless run ends.  (Losing your microphone leaves the interviewer's side going.)"""
        if speaker == "interviewer" and self._stop_on_audio_error:
            self._post(partial(self._failed, None, "runtime", message, report=False))

    # --- replays -----------------------------------------------------------------------

    def run_file(self, timeout: float = 600.0) -> None:
        """Play the whole file, then wait for the last final and the last answer.

        Raises AudioError when the file cannot be played: a replay has nothing else to do.
        """
        generation = self._call(self._begin)
        try:
            self._start_steps(generation, strict=True)
        finally:
            self._call(lambda: None)  # what start-up handed over is installed, or its failure said
        listening = self._listening
        for listener in listening.listeners if listening is not None else []:
            listener.finish(timeout)
        engine = self._engine
        if engine is not None:
            engine.wait_idle(timeout)

    @property
    def llm(self) -> LlmEndpoint | None:
        """The configured endpoint (None for the embedded LLM until its server is up)."""
        return self._llm

    @property
    def engine(self) -> AnswerEngine | None:
        return self._engine

    @property
    def listener(self) -> Listener | None:
        """The interviewer's: the one that asks."""
        listening = self._listening
        return listening.interviewer if listening is not None else None

    # --- start-up ------------------------------------------------------------------------

    def _start_steps(self, generation: int, *, strict: bool = False) -> None:
        """Open the audio, listen, then bring the answer engine up beside it (on
        ``session-start``, or a replay's caller): what it builds goes to the session thread."""
        try:
            source = source_from_config(self.settings.audio, self.clock, file=self._audio_file,
                                        speed=self._speed, channel=self._channel(0))
            candidate = self._open_candidate()
        except AudioError as exc:
            self._post(partial(self._failed, generation, "config", str(exc)))
            if strict:
                raise
            return
        try:
            engine = self._engine
            if self._audio_file is not None and self._answers and self._answers_locally:
                engine = engine or self._start_engine()  # one per session, also after Stop
                self._post(partial(self._use_engine, engine))
                self._await_answers(engine)
            self._listen(generation, source, candidate)
            if self._answers and engine is None and not self._cancel.is_set():
                self._post(partial(self._use_engine, self._start_engine()))
        except Exception as exc:  # the caller has returned: say it rather than lose it
            self._post(partial(self._failed, generation, "runtime", f"could not start: {exc}"))
            if strict:
                raise

    def _await_answers(self, engine: AnswerEngine) -> None:
        """A recording stands in for an interview the app was already open for: with the
        embedded LLM, which takes seconds to load and read its prompt on a small CPU, it
        plays once answers can come, so its first question is answered as a live one
        would be, not seconds late (decision 0021).  A remote endpoint warms up within the
        recording's lead-in; one that hangs must not hold the captions back."""
        while not engine.warmed.wait(0.1) and not self._cancel.is_set():
            pass

    def _load_turn_signals(self) -> TurnSignals:
        """The end-of-turn models, loaded once per session (on the first listener's scoring
        thread: seconds that never hold up listening)."""
        with self._signals_lock:
            if self._turn_signals is None:
                language = self.settings.asr.language
                spoken = "en" if language == AUTO else language  # auto: told again when settled
                self._turn_signals = TurnSignals.load(self.settings.turns, spoken)
            return self._turn_signals

    def _open_candidate(self) -> AudioSource | None:
        """The candidate's microphone, if any: a replay has it only when given one.

        A device's failure is said and the session goes on: the interviewer's side is what
        answers need.  A recording that cannot be read is a mistake in what was asked for
        (AudioError: a config failure).
        """
        audio = self.settings.audio
        if self._candidate_file is not None:
            return FileSource(self._candidate_file, self.clock, speed=self._speed, channel=self._channel(1))
        try:
            if self._audio_file is not None or audio.candidate == "off" or audio.source == "mic":
                return None  # a replay, or the interviewer is the microphone already
            return open_source(audio.candidate_device, self.clock)
        except AudioError as exc:
            self.bus.emit(ErrorEvent(t=self.clock.now(), stage="audio",
                                     message=f"your microphone: {exc} The interviewer's side keeps working."))
            return None

    def _listen(self, generation: int, source: AudioSource, candidate_source: AudioSource | None) -> None:
        """Build the listeners (they report to this session: :class:`ListenerHooks`); the
        session thread starts them."""
        settings = self.listening_settings()
        echo = EchoGate(on_run=self._on_echo_run) if candidate_source is not None else None
        self._decoder.set_terms(self._recogniser_terms())
        listener = Listener(source, self._decoder, settings, self.bus, self.clock, self,
                            self._listener_options, worker=self._worker)
        candidate = None
        if candidate_source is not None:
            options = dataclasses.replace(self._listener_options, speaker="candidate")
            candidate = Listener(candidate_source, self._decoder, settings, self.bus, self.clock, self,
                                 options, worker=self._worker, echo=echo)
        names = source.name + (f" and your microphone {candidate_source.name}" if candidate_source else "")
        self._post(partial(self._install, generation, _Listening(listener, candidate, echo, names)))

    def _channel(self, side: int) -> int | None:
        """The file channel of side 0 (the interviewer) or 1 (the candidate); None downmixes."""
        return self._channels[side] if self._channels is not None else None

    def _on_echo_run(self, runs: int) -> None:
        """The microphone keeps hearing the interviewer: suggest headphones, once (the
        second run, so one stray correlation never nags)."""
        if runs == 2:
            self._status("echo", HEADPHONES_HINT)

    @property
    def _answers_locally(self) -> bool:
        """The answers come from an LLM on this machine: the embedded server (no endpoint
        configured, started on first use) or one the caller marked local."""
        return self._llm is None or self._llm.local

    @property
    def _answers_bundled(self) -> bool:
        """The answers come from the bundled 135M model, which gets the compact prompt; a
        GGUF file the user chose is a model they picked for being better: the full prompt
        (docs/decisions/0016-local-model-choice.md)."""
        if self._llm is None:
            return local_model_name(self.settings.llm) == LOCAL_MODEL
        return self._llm.model == LOCAL_MODEL

    def listening_settings(self) -> Settings:
        """The settings the listener runs with: the embedded server's own endpoint wait."""
        if not (self._answers and self._answers_locally):
            return self.settings
        turns = self.settings.turns
        wait = {"endpoint_question_silence_ms": turns.endpoint_question_silence_local_ms}
        return self.settings.model_copy(update={"turns": turns.model_copy(update=wait)})

    def _start_engine(self) -> AnswerEngine:
        llm = self._llm
        engine = AnswerEngine(
            self.settings, self.bus, self.clock, self._prompt(self.settings.asr.language), self._make_client,
            model=llm.model if llm else local_model_name(self.settings.llm), session_id=self.session_id,
            base_url=llm.base_url if llm else "", strategy=self._strategy,
            prime_cache=self._answers_locally, one_at_a_time=self._answers_locally,
            prompt_for_language=self._prompt)
        self.bus.subscribe(engine.on_event)
        engine.start()
        return engine

    def _make_client(self) -> LlmClient:
        """The one LLM client (runs on the engine's executor: may start the local server)."""
        endpoint = self._llm or self._start_local_server()
        if self._llm is None:
            self._llm = endpoint
        llm = self.settings.llm
        self._status("llm", f"answers from {endpoint.model} at {display_url(endpoint.base_url)}")
        # A hedged second request only slows a CPU-bound embedded server down, and a
        # warm-up would queue behind its answer (see app.llm.client).
        local = self._answers_locally
        first_token = llm.timeout_s if local else llm.first_token_timeout_s
        return LlmClient(endpoint.base_url, endpoint.api_key, endpoint.model, http2=llm.http2,
                         rewarm=not local,
                         connect_timeout=llm.connect_timeout_s, timeout=llm.timeout_s,
                         keepalive_expiry=llm.keepalive_expiry_s, first_token_timeout=first_token,
                         stall_timeout=llm.stall_timeout_s, rate_limit_max_wait=llm.rate_limit_max_wait_s,
                         send_cache_key=llm.send_prompt_cache_key, send_include_usage=llm.send_include_usage)

    def _start_local_server(self) -> LlmEndpoint:
        try:
            path = local_model_path(self.settings.llm)
        except LocalModelError as exc:
            self._local_model_failed(str(exc))
            raise LlmError("not_found", str(exc), retryable=False) from exc
        name = local_model_name(self.settings.llm)
        with self._lock:
            if self._shut:
                raise LlmError("server", "the session is shutting down", retryable=False)
            server = self._local_server = LocalServer(path, model_alias=None if path is None else name)
        self._status("llm", f"starting the embedded local LLM on {name} (no API key configured)")
        try:
            url = server.start()
        except LlmError as exc:
            raise LlmError(exc.kind, f"{exc} Captions keep working; answers need an endpoint.",
                           retryable=False) from exc
        return LlmEndpoint(url, NO_KEY, name, local=True)

    def _local_model_failed(self, message: str) -> None:
        """The model file the user chose cannot be loaded: a setting to fix, like an audio
        device that cannot be opened, so the session fails as a config problem (a headless
        run exits with its code) and stops listening rather than run on half-failed."""
        self.bus.emit(ErrorEvent(t=self.clock.now(), stage="llm", message=message))
        self._fail("config", message, report=False)
        self._stop_listening(QUIT_LISTENING_S)

    def _stop_local_server(self) -> None:
        with self._lock:
            server = self._local_server
        if server is not None:
            server.stop()

    def _recogniser_terms(self) -> list[str]:
        """The user's glossary and the rarest names of the résumé and job description, to
        steer the recogniser (a file that cannot be read is the prompt's to report)."""
        texts = []
        for path, loader in ((self.settings.prompt.resume_file, load_resume),
                             (self.settings.prompt.job_description_file, load_job_description)):
            with contextlib.suppress(DocumentError):
                texts.append(loader(path) if path else None)
        return pick_terms(texts, self.settings.asr.glossary, pieces=self._decoder.pieces)

    def _prompt(self, language: str) -> PromptBuilder:
        """The prompt for ``language`` ("auto": English until the session's language is
        known); a bad résumé or job file is reported and skipped."""
        texts: list[str | None] = []
        for path, loader in ((self.settings.prompt.resume_file, load_resume),
                             (self.settings.prompt.job_description_file, load_job_description)):
            try:
                texts.append(loader(path) if path else None)
            except DocumentError as exc:
                self.bus.emit(ErrorEvent(t=self.clock.now(), stage="prompt", message=str(exc)))
                texts.append(None)
        resume, job = texts
        spoken = "en" if language == AUTO else language
        return PromptBuilder(self.settings.prompt.system_prompt, resume, job,
                             prompt_language(spoken, self.settings.asr.chinese_script),
                             compact=self._answers_bundled)

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
