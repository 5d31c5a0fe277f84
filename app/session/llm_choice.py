"""Where a session's answers come from, and what follows from it.

An endpoint the user configured (flags, environment or settings), or, with none, the
embedded llama.cpp server on the bundled model or a GGUF file the user chose, started on
first use.  The choice decides more than the URL: an LLM on this machine gets the
endpointer's longer question wait, one request at a time, and the bundled 135M model
the compact prompt (docs/decisions/0016-local-model-choice.md); any server on this
machine, Ollama included, gets no hedging nor re-warming (docs/decisions/0031).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from app.core.clock import SessionClock
from app.core.config import Settings
from app.core.events import ErrorEvent, EventBus, StatusEvent
from app.llm.client import ClientTuning, LlmClient
from app.llm.endpoint import (
    LOCAL_MODEL,
    LlmEndpoint,
    LocalModelError,
    local_model_name,
    local_model_path,
)
from app.llm.errors import LlmError
from app.llm.local_server import LocalServer
from app.llm.loopback import remote_tactic
from app.llm.server_watch import ServerWatch
from app.platform.redact import display_url


class LlmChoice:
    """The session's LLM: the configured endpoint, or the embedded server it starts.

    :meth:`make_client` runs on the answer engine's executor (it may start the server,
    seconds); :meth:`shut` and :meth:`stop_local_server` on whichever thread quits.  The
    lock makes "shut" and "a server was started" exclusive, so quitting never leaves a
    server behind.
    """

    def __init__(self, settings: Settings, llm: LlmEndpoint | None, bus: EventBus, clock: SessionClock, *,
                 answers: bool, on_model_failed: Callable[[str], None]) -> None:
        self._settings = settings
        self._llm = llm
        """The configured endpoint; the embedded server's once it is up."""
        self._bus = bus
        self._clock = clock
        self._answers = answers
        self._on_model_failed = on_model_failed
        """The session's part when the chosen model file cannot be loaded (after the error
        is said here)."""
        self._lock = threading.Lock()
        """Guards ``_shut`` and ``_server``."""
        self._shut = False
        self._server: LocalServer | None = None
        self._watch: ServerWatch | None = None
        """The embedded server's watch: each request asks it where the live child is."""

    @property
    def endpoint(self) -> LlmEndpoint | None:
        """The configured endpoint (None for the embedded LLM until its server is up)."""
        return self._llm

    @property
    def model(self) -> str:
        """The model answers come from, named before its server is up."""
        return self._llm.model if self._llm else local_model_name(self._settings.llm)

    @property
    def base_url(self) -> str:
        """The endpoint's URL ("" for the embedded LLM until its server is up)."""
        return self._llm.base_url if self._llm else ""

    @property
    def server(self) -> LocalServer | None:
        """The embedded server, once one was started."""
        with self._lock:
            return self._server

    @property
    def answers_locally(self) -> bool:
        """The answers come from an LLM on this machine: the embedded server (no endpoint
        configured, started on first use) or one the caller marked local."""
        return self._llm is None or self._llm.local

    def answers_bundled(self) -> bool:
        """The answers come from the bundled 135M model, which gets the compact prompt; a
        GGUF file the user chose is a model they picked for being better: the full prompt
        (docs/decisions/0016-local-model-choice.md)."""
        if self._llm is None:
            return local_model_name(self._settings.llm) == LOCAL_MODEL
        return self._llm.model == LOCAL_MODEL

    def effective_settings(self) -> Settings:
        """The settings a start runs with: the embedded server's own endpoint wait."""
        if not (self._answers and self.answers_locally):
            return self._settings
        turns = self._settings.turns
        wait = {"endpoint_question_silence_ms": turns.endpoint_question_silence_local_ms}
        return self._settings.model_copy(update={"turns": turns.model_copy(update=wait)})

    def make_client(self) -> LlmClient:
        """The one LLM client (runs on the engine's executor: may start the local server)."""
        endpoint = self._llm or self._start_local_server()
        if self._llm is None:
            self._llm = endpoint
        llm = self._settings.llm
        self._status(f"answers from {endpoint.model} at {display_url(endpoint.base_url)}")
        # A hedged second request only slows a CPU-bound server on this machine down, and a
        # warm-up would queue behind its answer (app.llm.loopback.remote_tactic): without a
        # hedge, the first token's deadline is the read time-out.
        hedge = remote_tactic(llm.hedge, endpoint.base_url, local=endpoint.local)
        first_token = llm.first_token_timeout_s if hedge else llm.timeout_s
        rewarm = remote_tactic(llm.rewarm, endpoint.base_url, local=endpoint.local)
        tuning = ClientTuning(http2=llm.http2, rewarm=rewarm, connect_timeout=llm.connect_timeout_s,
                              timeout=llm.timeout_s, keepalive_expiry=llm.keepalive_expiry_s,
                              first_token_timeout=first_token, stall_timeout=llm.stall_timeout_s,
                              rate_limit_max_wait=llm.rate_limit_max_wait_s,
                              send_cache_key=llm.send_prompt_cache_key,
                              send_include_usage=llm.send_include_usage)
        return LlmClient(endpoint.base_url, endpoint.api_key, endpoint.model, tuning,
                         route=self._watch.aroute if self._watch is not None else None)

    def shut(self) -> None:
        """The session is quitting: no embedded server starts from now on."""
        with self._lock:
            self._shut = True

    def stop_local_server(self) -> None:
        with self._lock:
            watch = self._watch
        if watch is not None:
            watch.stop()

    def _start_local_server(self) -> LlmEndpoint:
        try:
            path = local_model_path(self._settings.llm)
        except LocalModelError as exc:
            self._local_model_failed(str(exc))
            raise LlmError("not_found", str(exc), retryable=False) from exc
        name = local_model_name(self._settings.llm)
        with self._lock:
            if self._shut:
                raise LlmError("server", "the session is shutting down", retryable=False)
            server = self._server = LocalServer(path, model_alias=None if path is None else name)
            watch = self._watch = ServerWatch(server, self._banner)
        self._status(f"starting the embedded local LLM on {name} (no API key configured)")
        try:
            url = watch.start()
        except LlmError as exc:
            raise LlmError(exc.kind, f"{exc} Captions keep working; answers need an endpoint.",
                           retryable=False) from exc
        return LlmEndpoint(url, server.api_key, name, local=True)  # its own credential

    def _local_model_failed(self, message: str) -> None:
        """The model file the user chose cannot be loaded: a setting to fix, like an audio
        device that cannot be opened, so the session fails as a config problem (a headless
        run exits with its code) and stops listening rather than run on half-failed."""
        self._bus.emit(ErrorEvent(t=self._clock.now(), stage="llm", message=message))
        self._on_model_failed(message)

    def _banner(self, message: str) -> None:
        self._bus.emit(ErrorEvent(t=self._clock.now(), stage="llm", message=message))

    def _status(self, message: str) -> None:
        self._bus.emit(StatusEvent(t=self._clock.now(), stage="llm", message=message))
