"""One owner of a running session: its lifecycle, its turn ids, its listening half and
its answer engine.  The window and the command line both drive a :class:`Session`.

States: ``idle → starting → listening → stopping → idle``; ``failed`` when the audio
cannot be opened or dies in a session that must not go on without it.  Every change is
a ``session`` event.  Start-up runs on its own thread and checks a cancel flag between
its steps, so Stop works while starting and quitting never waits for it.  Listening
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
import threading
import uuid
from pathlib import Path
from typing import Literal, Protocol

from app.answer.engine import AnswerEngine, Strategy
from app.asr.decoder import AUTO, WhisperDecoder, load_decoder
from app.asr.glossary import pick_terms
from app.asr.worker import DecodeWorker
from app.audio import AudioError, AudioSource, FileSource, open_source, source_from_config
from app.audio.echo import HEADPHONES_HINT, EchoGate
from app.clock import Deadline, SessionClock
from app.config import Settings
from app.events import ErrorEvent, EventBus, SessionState, SessionStateEvent, StatusEvent
from app.listener import Listener, ListenerOptions
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
from app.prompt.builder import PromptBuilder
from app.prompt.documents import DocumentError, load_job_description, load_resume
from app.prompt.texts import prompt_language
from app.redact import display_url
from app.turns.signals import TurnSignals

FailureKind = Literal["config", "runtime"]

LISTENER_STOP_S = 5.0
"""What Stop waits for the listening half in all: a pass or a score on a busy machine
finishes well within it, so the captions end with the last words heard."""
QUIT_LISTENING_S = 1.5
"""What quitting waits for the listening half: noticing a lost device takes up to ~2.5 s
(see app/audio/device.py), and a run whose device died must be over within 5 s of it."""


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
        """Stop everything (audio, ASR, answer engine, local LLM server) before exit."""

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
        self._changed = threading.Condition(self._lock)
        self._state: SessionState = "idle"
        self._cancel = threading.Event()
        self._shut = False
        self._starter: threading.Thread | None = None
        self._listener: Listener | None = None
        """The interviewer's: the one that asks."""
        self._candidate: Listener | None = None
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
        """Start listening on a thread of its own; problems arrive as events."""
        with self._lock:
            if self._shut or self._state not in ("idle", "failed"):
                return
            self._cancel.clear()
            self.failure = None
            starter = threading.Thread(target=self._start_steps, name="session-start", daemon=True)
            self._starter = starter
        self._set_state("starting")
        starter.start()

    def stop(self) -> None:
        """Stop listening (also while starting); answers in flight finish."""
        self._stop(LISTENER_STOP_S)

    def _stop(self, timeout: float) -> None:
        with self._lock:
            if self._state not in ("starting", "listening"):
                return
        self._set_state("stopping")
        self._stop_listening(timeout)
        self._set_state("idle")

    def _stop_listening(self, timeout: float) -> None:
        with self._lock:
            self._cancel.set()
            listeners = [self._listener, self._candidate]
            self._listener = self._candidate = None
        deadline = Deadline(timeout)
        for listener in listeners:
            if listener is not None:
                listener.stop(deadline.left())

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop everything before exit; idempotent, bounded, leaves no child process.

        The listening half gets :data:`QUIT_LISTENING_S` of it: its threads are daemons,
        so a pass still running when that is over is simply dropped.
        """
        with self._lock:
            if self._shut:
                return
            self._shut = True
        self._stop(QUIT_LISTENING_S)
        self._stop_listening(QUIT_LISTENING_S)  # also after a failure
        self._stop_local_server()  # unblocks a start-up still waiting for it
        if self._engine is not None:
            self._engine.stop(timeout)
        if self._starter is not None and self._starter is not threading.current_thread():
            self._starter.join(timeout)
        self._stop_local_server()

    def wait(self, timeout: float | None = None) -> SessionState:
        """Block until the session is no longer starting or listening (headless runs)."""
        with self._changed:
            self._changed.wait_for(lambda: self._state not in ("starting", "listening", "stopping"), timeout)
            return self._state

    def answer_now(self) -> None:
        if self._listener is not None:
            self._listener.answer_now()

    def cancel_answer(self) -> None:
        if self._engine is not None:
            self._engine.cancel_answer()

    def retract_answer(self) -> None:
        if self._engine is not None:
            self._engine.retract_answer()

    def regenerate(self) -> None:
        if self._engine is not None:
            self._engine.regenerate()

    def set_low_latency(self, on: bool) -> None:
        if self._engine is not None:
            self._engine.set_low_latency(on)
        self.settings.answer.low_latency = on

    @property
    def low_latency(self) -> bool:
        return self._engine.low_latency if self._engine is not None else self.settings.answer.low_latency

    # --- replays -----------------------------------------------------------------------

    def run_file(self, timeout: float = 600.0) -> None:
        """Play the whole file, then wait for the last final and the last answer.

        Raises AudioError when the file cannot be played: a replay has nothing else to do.
        """
        self._set_state("starting")
        self._start_steps(strict=True)
        for listener in (self._listener, self._candidate):
            if listener is not None:
                listener.finish(timeout)
        if self._engine is not None:
            self._engine.wait_idle(timeout)

    @property
    def llm(self) -> LlmEndpoint | None:
        """The configured endpoint (None for the embedded LLM until its server is up)."""
        return self._llm

    @property
    def engine(self) -> AnswerEngine | None:
        return self._engine

    @property
    def listener(self) -> Listener | None:
        return self._listener

    # --- start-up ------------------------------------------------------------------------

    def _start_steps(self, *, strict: bool = False) -> None:
        """Open the audio, listen, then bring the answer engine up beside it."""
        try:
            source = source_from_config(self.settings.audio, self.clock, file=self._audio_file,
                                        speed=self._speed, channel=self._channel(0))
            candidate = self._open_candidate()
        except AudioError as exc:
            self._fail("config", str(exc))
            if strict:
                raise
            return
        try:
            if self._audio_file is not None and self._answers and self._answers_locally:
                self._engine = self._engine or self._start_engine()  # one per session, also after Stop
                self._await_answers(self._engine)
            self._listen(source, candidate)
            if self._answers and self._engine is None and not self._cancel.is_set():
                self._engine = self._start_engine()
        except Exception as exc:  # the caller has returned: say it rather than lose it
            self._fail("runtime", f"could not start: {exc}")
            if strict:
                raise

    def _await_answers(self, engine: AnswerEngine) -> None:
        """A recording stands in for an interview the app was already open for: with the
        embedded LLM, which takes seconds to load and read its prompt on a small CPU, it
        plays once answers can come, so its first question is answered as a live one
        would be (measured on the README demo: its first answer 5-14 s after the question
        without this, 0.2-0.3 s with it).  A remote endpoint warms up within the
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

    def _listen(self, source: AudioSource, candidate_source: AudioSource | None) -> None:
        settings = self.listening_settings()
        next_turn = lambda: next(self._turn_ids)  # noqa: E731 - one counter for both voices
        echo = EchoGate(on_run=self._on_echo_run) if candidate_source is not None else None
        self._decoder.set_terms(self._recogniser_terms())
        listener = Listener(source, self._decoder, settings, self.bus, self.clock, next_turn,
                            self._listener_options, on_source_error=self._on_source_error,
                            worker=self._worker, turn_signals=self._load_turn_signals,
                            tap=echo.feed_reference if echo else None)
        candidate = None
        if candidate_source is not None:
            options = dataclasses.replace(self._listener_options, speaker="candidate")
            candidate = Listener(candidate_source, self._decoder, settings, self.bus, self.clock, next_turn,
                                 options, worker=self._worker, on_speech=listener.other_spoke, echo=echo)
        with self._changed:
            if self._cancel.is_set():
                return
            self._listener, self._candidate = listener, candidate
            listener.start()
            if candidate is not None:
                candidate.start()
            listening = self._transition("listening")
        self._announce(listening)
        names = source.name + (f" and your microphone {candidate_source.name}" if candidate_source else "")
        self._status("audio", f"listening to {names}")

    def _channel(self, side: int) -> int | None:
        """The file channel of side 0 (the interviewer) or 1 (the candidate); None downmixes."""
        return self._channels[side] if self._channels is not None else None

    def _on_echo_run(self, runs: int) -> None:
        """The microphone keeps hearing the interviewer: suggest headphones, once (the
        second run, so one stray correlation never nags)."""
        if runs == 2:
            self._status("echo", HEADPHONES_HINT)

    def _on_source_error(self, message: str) -> None:
        """The device is gone: the window waits for it to come back, a headless run ends."""
        if self._stop_on_audio_error:
            self._fail("runtime", message, report=False)

    @property
    def _answers_locally(self) -> bool:
        """The answers come from an LLM on this machine: the embedded server (no endpoint
        configured, started on first use) or one the caller marked local."""
        return self._llm is None or self._llm.local

    @property
    def _answers_bundled(self) -> bool:
        """The answers come from the bundled 135M model, which gets the compact prompt; a
        GGUF file the user chose is a model they picked for being better: the full prompt
        (docs/decisions/00XX-local-model-choice.md)."""
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
        with self._lock:
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
