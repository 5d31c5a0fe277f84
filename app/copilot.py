"""The whole copilot: transcriber + answer engine + endpoint, as one Controller.

Front ends (the Qt window, the headless CLI, the benchmark) build one of these and talk
to it through :class:`app.controller.Controller`; nothing here knows about Qt.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from app.answer.engine import AnswerEngine, Strategy
from app.asr.decoder import WhisperDecoder
from app.asr.model import load_model
from app.audio import AudioError, AudioSource, source_from_config
from app.clock import SessionClock
from app.config import Settings
from app.events import ErrorEvent, EventBus, StatusEvent
from app.llm.client import LlmClient
from app.llm.errors import LlmError
from app.pipeline import Transcriber, TranscriberOptions
from app.prompt.builder import PromptBuilder
from app.prompt.documents import DocumentError, load_job_description, load_resume
from app.secrets import SecretStoreError, get_api_key

log = logging.getLogger(__name__)

LOCAL_MODEL = "SmolLM2-135M-Instruct"


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    api_key: str
    model: str
    local: bool


def resolve_endpoint(settings: Settings, *, base_url: str | None = None, api_key: str | None = None,
                     model: str | None = None) -> Endpoint | None:
    """Where answers come from: flags > environment > settings; None = embedded local LLM.

    With no base URL and no key anywhere, the embedded server is used (nothing to set
    up).  A base URL without a key is fine for local servers (Ollama, LM Studio…), which
    ignore it.
    """
    url = base_url or os.environ.get("OPENAI_BASE_URL") or settings.llm.base_url
    try:
        key = get_api_key(url, explicit=api_key)
    except SecretStoreError as exc:  # no keychain on this machine: the environment still works
        log.info("%s", exc)
        key = None
    chosen_model = model or os.environ.get("COPILOT_MODEL") or settings.llm.model
    if url is None and key is None:
        return None
    url = url or "https://api.openai.com/v1"
    return Endpoint(url, key or "not-needed", chosen_model or "gpt-4o-mini", local=False)


class Copilot:
    """Implements :class:`app.controller.Controller`."""

    def __init__(self, settings: Settings, *, audio_file: str | Path | None = None, speed: float = 1.0,
                 endpoint: Endpoint | None = None, strategy: Strategy = Strategy(),
                 transcriber_options: TranscriberOptions = TranscriberOptions(),
                 bus: EventBus | None = None, answers: bool = True,
                 decoder: WhisperDecoder | None = None) -> None:
        self.settings = settings
        self.bus = bus or EventBus()
        self.clock = SessionClock()
        self.session_id = uuid.uuid4().hex[:12]
        self._audio_file = audio_file
        self._speed = speed
        self._endpoint = endpoint
        self._strategy = strategy
        self._options = transcriber_options
        self._answers = answers
        self._decoder = decoder or WhisperDecoder(
            load_model(settings.asr.model, compute_type=settings.asr.compute_type,
                       cpu_threads=settings.asr.cpu_threads), settings.asr.language)
        self._local_server: object | None = None
        self._answers_local = False
        self._engine: AnswerEngine | None = None
        self._transcriber: Transcriber | None = None
        self._lock = threading.Lock()
        self._unsubscribe_engine: object | None = None

    # --- Controller --------------------------------------------------------------------

    def start(self) -> None:
        """Start listening without blocking the caller (the GUI thread, typically).

        Opening the device, starting the embedded LLM server and pre-warming the
        connection take seconds; problems arrive as error events like any other.
        """
        threading.Thread(target=self._start_in_background, name="copilot-start", daemon=True).start()

    def _start_in_background(self) -> None:
        try:
            with self._lock:
                self._start(strict=False)
        except Exception as exc:  # the caller has returned: say it rather than lose it
            log.exception("start failed")
            self.bus.emit(ErrorEvent(t=self.clock.now(), stage="app", message=f"could not start: {exc}"))

    def _start(self, *, strict: bool) -> None:
        if self._transcriber is not None:
            return
        source = self._open_source(strict=strict)
        if source is None:
            return
        if self._answers and self._engine is None:
            with contextlib.suppress(LlmError):  # reported; captions work without answers
                self._engine = self._start_engine()
        self._transcriber = Transcriber(source, self._decoder, self._turn_settings(), self.bus,
                                        self.clock, self._options)
        self._transcriber.start()
        self._status("audio", f"listening to {source.name}")

    def stop(self) -> None:
        with self._lock:
            transcriber, self._transcriber = self._transcriber, None
        if transcriber is not None:
            transcriber.stop()

    def shutdown(self) -> None:
        self.stop()
        if self._engine is not None:
            self._engine.stop()
            self._engine = None
        server = self._local_server
        if server is not None:
            server.stop()  # type: ignore[attr-defined]
            self._local_server = None

    def answer_now(self) -> None:
        if self._transcriber is not None:
            self._transcriber.answer_now()

    def cancel_answer(self) -> None:
        if self._engine is not None:
            self._engine.cancel_answer()

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

    @property
    def listening(self) -> bool:
        return self._transcriber is not None

    # --- replays -------------------------------------------------------------------------

    def run_file(self, timeout: float = 600.0) -> None:
        """Play the whole file, then wait for the last final and the last answer.

        Raises AudioError when the file cannot be played: a replay has nothing else to do.
        """
        with self._lock:
            self._start(strict=True)
        if self._transcriber is not None:
            self._transcriber.finish(timeout)
        if self._engine is not None:
            self._engine.wait_idle(timeout)

    @property
    def endpoint(self) -> Endpoint | None:
        """The configured endpoint (None until the embedded server, if used, is up)."""
        return self._endpoint

    @property
    def engine(self) -> AnswerEngine | None:
        return self._engine

    @property
    def transcriber(self) -> Transcriber | None:
        return self._transcriber

    # --- parts -----------------------------------------------------------------------------

    def _open_source(self, *, strict: bool) -> AudioSource | None:
        try:
            return source_from_config(self.settings.audio, self.clock, file=self._audio_file,
                                      speed=self._speed)
        except AudioError as exc:
            if strict:
                raise
            self.bus.emit(ErrorEvent(t=self.clock.now(), stage="audio", message=str(exc)))
            return None

    def _turn_settings(self) -> Settings:
        """The settings the transcriber runs with: the embedded server's own endpoint wait."""
        if not self._answers_local:
            return self.settings
        turns = self.settings.turns
        wait = {"endpoint_question_silence_ms": turns.endpoint_question_silence_local_ms}
        return self.settings.model_copy(update={"turns": turns.model_copy(update=wait)})

    def _start_engine(self) -> AnswerEngine:
        endpoint = self._endpoint or self._local_endpoint()
        self._answers_local = endpoint.local
        prompt = self._prompt()
        engine = AnswerEngine(
            self.settings, self.bus, self.clock, prompt,
            lambda: LlmClient(endpoint.base_url, endpoint.api_key, endpoint.model,
                              http2=self.settings.llm.http2,
                              connect_timeout=self.settings.llm.connect_timeout_s,
                              timeout=self.settings.llm.timeout_s,
                              keepalive_expiry=self.settings.llm.keepalive_expiry_s),
            model=endpoint.model, session_id=self.session_id, base_url=endpoint.base_url,
            strategy=self._strategy, prime_cache=endpoint.local)
        self.bus.subscribe(engine.on_event)
        engine.start()
        self._status("llm", f"answers from {endpoint.model} at {endpoint.base_url}")
        return engine

    def _local_endpoint(self) -> Endpoint:
        from app.llm.local_server import LocalServer

        self._status("llm", "starting the embedded local LLM (no API key configured)")
        server = LocalServer()
        try:
            url = server.start()
        except LlmError as exc:
            self.bus.emit(ErrorEvent(t=self.clock.now(), stage="llm",
                                     message=f"{exc} Captions keep working; answers need an endpoint."))
            raise
        self._local_server = server
        return Endpoint(url, "local", LOCAL_MODEL, local=True)

    def _prompt(self) -> PromptBuilder:
        """The prompt for this session; a bad résumé or job file is reported and skipped."""
        texts: list[str | None] = []
        for path, loader in ((self.settings.prompt.resume_file, load_resume),
                             (self.settings.prompt.job_description_file, load_job_description)):
            try:
                texts.append(loader(path) if path else None)
            except DocumentError as exc:
                self.bus.emit(ErrorEvent(t=self.clock.now(), stage="prompt", message=str(exc)))
                texts.append(None)
        resume, job = texts
        return PromptBuilder(self.settings.prompt.system_prompt, resume, job, self.settings.asr.language)

    def _status(self, stage: str, message: str) -> None:
        self.bus.emit(StatusEvent(t=self.clock.now(), stage=stage, message=message))
