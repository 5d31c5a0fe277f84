"""What the user reads when a request fails: one clear sentence with what to do.

Every failure of the client reaches the caller as one :class:`LlmError` whose message
names the endpoint (never the key), says what happened in words and points at the fix
("check the base URL in Settings", "raise llm.first_token_timeout_s").  The exact
wording is part of the contract: tests and the troubleshooting notes quote it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2
import openai

from app.llm.chat import Truncated
from app.llm.errors import ErrorKind, LlmError
from app.llm.replies import asked_wait, describe, not_a_stream, refused, seconds_text, server_message
from app.platform.redact import display_host, display_url, redact
from app.platform.secrets import key_hint


@dataclass(frozen=True, slots=True)
class Wording:
    """The messages of one endpoint; the numbers in them are the client's time-outs."""

    base_url: str
    model: str
    api_key: str | None
    connect_timeout: float
    timeout: float
    stall_timeout: float

    @property
    def host(self) -> str:
        """``host[:port]`` of the endpoint, for messages ("the endpoint at HOST …")."""
        return display_host(self.base_url)

    @property
    def where(self) -> str:
        return display_url(self.base_url)

    def _common(self, attempts: int = 1) -> dict[str, Any]:
        return {"attempts": attempts, "host": self.host}

    def _error(self, kind: ErrorKind, message: str, **fields: Any) -> LlmError:
        """An error whose message never shows the key (masked even if it was never registered)."""
        return LlmError(kind, redact(message, self.api_key), **fields)

    def check_unanswered(self) -> LlmError:
        """The connection check (``GET /models``) got no reply within ``connect_timeout``."""
        return self._error(
            "not_answering",
            f"The endpoint at {self.host} is not answering (no reply to the connection "
            f"check within {self.connect_timeout:g} s) — answers may fail; check the "
            "service status and the base URL in Settings.",
            host=self.host,
        )

    def not_answering(self, waited: float, sent: int) -> LlmError:
        """No first token from any attempt within ``first_token_timeout``."""
        again = (
            "a second request on a fresh connection got nothing either; " if sent > 1 else ""
        )
        return self._error(
            "not_answering",
            f"The endpoint at {self.host} is not answering (no first token after "
            f"{seconds_text(waited)} s) — {again}check the service status and the base URL in "
            "Settings (for slow models raise llm.first_token_timeout_s).",
            attempts=sent,
            host=self.host,
        )

    def cut(self, exc: BaseException, text: str, attempts: int) -> LlmError:
        """A failure after text was shown: what arrived is kept."""
        if isinstance(exc, LlmError):  # worded where it was raised (a limit of app.llm.limits)
            return exc
        common: dict[str, Any] = {"retryable": True, "partial": True, **self._common(attempts)}
        if isinstance(exc, TimeoutError | openai.APITimeoutError | httpx2.TimeoutException):
            stalled = self.stall_timeout if isinstance(exc, TimeoutError) else self.timeout
            return self._error(
                "timeout",
                f"The answer stalled: no data from {self.where} for {stalled:g} s after "
                f"{len(text)} characters. What arrived is kept; ask again to regenerate.",
                **common,
            )
        if isinstance(exc, Truncated):
            why = "the stream ended early"
        elif (shown := not_a_stream(exc)) is not None:
            why = (
                f"the endpoint at {self.host} sent something that is not an "
                f"OpenAI-compatible stream (first bytes: {shown})"
            )
        else:
            why = describe(exc)
        return self._error(
            "stream_cut",
            f"The answer was cut off after {len(text)} characters: {why} ({self.where}). "
            "What arrived is kept; ask again to regenerate.",
            **common,
        )

    def failed(
        self, exc: BaseException, *, attempts: int = 1, retry_after: float | None = None
    ) -> LlmError:
        """A failure before any text: status, stream shape, time-out or network, in words."""
        if isinstance(exc, LlmError):
            return exc
        where = self.where
        common = self._common(attempts)
        if isinstance(exc, openai.APIStatusError):
            return self._status(exc, retry_after, common)
        shown = not_a_stream(exc)
        if shown is None and isinstance(exc, Truncated) and exc.not_sse:
            shown = f"none; content type {exc.content_type or 'missing'}"
        if shown is not None:
            return self._error(
                "bad_stream",
                f"The endpoint at {self.host} sent something that is not an OpenAI-compatible "
                f"stream (first bytes: {shown}) — check the base URL in Settings (it usually "
                "ends in /v1) and any proxy in between.",
                retryable=False,
                **common,
            )
        if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
            cause = exc.__cause__ if isinstance(exc, openai.APITimeoutError) else exc
            if isinstance(cause, httpx2.ConnectTimeout | httpx2.PoolTimeout):
                msg = (
                    f"Could not connect to {where} within {self.connect_timeout:g} s — check "
                    "the network and the base URL in Settings."
                )
            else:
                msg = (
                    f"No answer from {where} for {self.timeout:g} s — the server or the "
                    "network stalled; try again."
                )
            return self._error("timeout", msg, **common)
        if isinstance(exc, Truncated):
            return self._error(
                "network",
                f"The stream from {where} ended before any text arrived — try again.",
                **common,
            )
        if isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
            if refused(exc):
                msg = (
                    f"Could not connect to {where}: connection refused — is the server "
                    "running? Check the base URL in Settings."
                )
            else:
                msg = f"The connection to {where} failed: {describe(exc)} — check the network."
            return self._error("network", msg, **common)
        return self._error("bad_request", f"Request to {where} failed: {describe(exc)}", **common)

    def _status(
        self, exc: openai.APIStatusError, retry_after: float | None, common: dict[str, Any]
    ) -> LlmError:
        where = self.where
        status = exc.status_code
        detail = server_message(exc)
        if status in (401, 403):
            what = "rejected" if status == 401 else "refused (no access)"
            return self._error(
                "auth",
                f"The API key was {what} ({status}) by {where} — "
                f"{key_hint(self.base_url)}. Server said: {detail}",
                status=status,
                **common,
            )
        if status == 404:
            if exc.code == "model_not_found" or "model" in detail.lower():
                msg = (
                    f"The model '{self.model}' is not available at {where} (404) — pick "
                    f"another model in Settings. Server said: {detail}"
                )
            else:
                msg = (
                    f"{where} has no OpenAI-compatible API here (404) — check the base URL "
                    f"in Settings (it usually ends in /v1). Server said: {detail}"
                )
            return self._error("not_found", msg, status=status, **common)
        wait = retry_after if retry_after is not None else asked_wait(exc)
        when = f"it asks to wait {seconds_text(wait)} s" if wait is not None else "wait a moment"
        if status == 429:
            return self._error(
                "rate_limit",
                f"{where} is rate-limiting requests (429) — {when}, or check the plan "
                f"and quota of this key. Server said: {detail}",
                status=status,
                retry_after=wait,
                **common,
            )
        if status >= 500:
            return self._error(
                "server",
                f"The server at {where} failed ({status}) — try again; if it persists the "
                f"provider has an outage. Server said: {detail}",
                status=status,
                retry_after=wait,
                **common,
            )
        return self._error(
            "bad_request",
            f"{where} refused the request ({status}) — check the model and settings. "
            f"Server said: {detail}",
            status=status,
            **common,
        )
