"""Optional request fields a server may refuse, dropped once and remembered.

Relays that validate strictly answer an unknown field (``stream_options``,
``prompt_cache_key``) with 400/422, and newer OpenAI models want
``max_completion_tokens`` instead of ``max_tokens``.  When the error names the field it
is dropped (or renamed); when it names nothing, the request is sent once more without
any optional field.  Either way the answer still comes, and the client stops sending
what failed for the rest of the session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast

import openai
from openai.types.chat import ChatCompletionChunk

from app.llm.chat import ChatRequest
from app.llm.replies import about_fields, rejected_param
from app.llm.timing import Recorder, traced

log = logging.getLogger(__name__)


class OptionalFields:
    """Which optional fields this server takes; starts from what the preset says."""

    def __init__(self, *, include_usage: bool = True, cache_key: bool = True) -> None:
        self.stream_options = include_usage
        self.cache_key = cache_key
        self.max_tokens_field = "max_tokens"

    def body(self, model: str, request: ChatRequest, *, stripped: bool) -> dict[str, Any]:
        """The SDK's keyword arguments for ``request``; ``stripped``: no optional field."""
        body: dict[str, Any] = dict(request.extra or {})
        if request.prompt_cache_key is not None and self.cache_key and not stripped:
            body["prompt_cache_key"] = request.prompt_cache_key
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": list(request.messages),
            "temperature": request.temperature,
            "stream": True,
        }
        if self.max_tokens_field == "max_tokens":
            kwargs["max_tokens"] = request.max_tokens
        else:
            body["max_completion_tokens"] = request.max_tokens
        if self.stream_options and not stripped:
            kwargs["stream_options"] = {"include_usage": True}
        if body:
            kwargs["extra_body"] = body
        return kwargs

    async def open(
        self,
        sdk: openai.AsyncOpenAI,
        model: str,
        request: ChatRequest,
        rec: Recorder,
        leaving: Callable[[], Callable[[], None]],
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        """Send ``request``, dropping optional fields the server rejects (remembered).

        ``leaving`` is called before each send and returns what to call once the request
        has its connection (the warm pool waits for that, see :mod:`app.llm.warming`).
        """
        stripped = False
        while True:
            kwargs = self.body(model, request, stripped=stripped)
            use_stream_options = "stream_options" in kwargs
            sent_cache_key = "prompt_cache_key" in kwargs.get("extra_body", {})
            optional = use_stream_options or sent_cache_key
            rec.new_attempt(leaving())
            try:
                with traced(rec):
                    created = await sdk.chat.completions.create(**kwargs)
                if stripped:
                    log.info("server rejected an unnamed field; optional fields are off from now on")
                    self.stream_options = False
                    self.cache_key = False
                return cast(openai.AsyncStream[ChatCompletionChunk], created)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                rejected = rejected_param(exc, ("stream_options", "prompt_cache_key", "max_tokens"))
                if rejected == "stream_options" and use_stream_options:
                    self.stream_options = False
                elif rejected == "prompt_cache_key" and sent_cache_key:
                    self.cache_key = False
                elif rejected == "max_tokens" and self.max_tokens_field == "max_tokens":
                    self.max_tokens_field = "max_completion_tokens"
                elif rejected is None and optional and not stripped and about_fields(exc):
                    stripped = True
                    rejected = "an unnamed field"
                else:
                    raise
                log.info("server rejected %s; sending without it", rejected)
                rec.attempts -= 1
