"""The benchmark's baselines: peers and simple policies, built from the product's public pieces.

A baseline is another implementation of a seam the product defines, so its numbers come
from the same pipeline (decision 0037):

- the end of a turn: :class:`app.turns.endpointer.TurnPolicy`, given to the listener in
  :class:`app.session.listener.ListenerOptions`;
- the answers: :class:`app.answer.engine.Strategy` (the reuse rule, and a wrapper of the
  session's LLM client factory).

The product's own earlier behaviour is no baseline: it is measured at its commit
(``bench turns --against REV``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

from app.answer.engine import AnswerClient, ClientFactory
from app.answer.similarity import Verdict, similarity
from app.core.config import Settings
from app.core.events import EndpointReason, SpeculateReason
from app.core.text import Tags, question_key
from app.llm.chat import Message, StreamItem
from app.turns.endpointer import Decision, Endpoint, Endpointer, OpenTurn, Speculate
from app.turns.policy import Evidence, Wait, decide

MIN_QUESTION_CHARS = 30
"""The text rules guess a "?" question early from this length."""


# --- the end of a turn ----------------------------------------------------------------


class TextRulesPolicy:
    """The end of a turn from the text alone (mode ``rules``), the seed's rules.

    A current partial is guessed after ``speculate_min_pause_ms`` when it ends in an end
    word, or is a question of ``MIN_QUESTION_CHARS`` or more with a "?"; any
    after ``speculate_silence_ms``.  The turn ends after the thinking wait when it trails
    off, the question wait after "?" or a tag twice in a row, else the silence wait."""

    def decide(self, ep: Endpointer, turn: OpenTurn, silence: float) -> list[Decision]:
        decisions: list[Decision] = []
        if turn.text and turn.heard_all:
            reason = self._speculate_reason(ep, turn.text, silence)
            if reason:
                decisions.append(Speculate(turn.id, turn.text, reason))
        if turn.text and silence >= self._endpoint_silence_ms(ep, turn) / 1000:
            reason_e: EndpointReason = "question" if turn.question_streak >= 2 else "silence"
            decisions.append(Endpoint(turn.id, reason_e, round(silence, 4)))
        return decisions

    def wait(self, ep: Endpointer, turn: OpenTurn) -> Wait | None:
        """What the text rules alone would wait (the signals policy with no model signal)."""
        return decide(ep.config, ep.cues(turn), Evidence())

    @staticmethod
    def _speculate_reason(ep: Endpointer, text: str, silence: float) -> SpeculateReason | None:
        cfg, silence_ms = ep.config, silence * 1000
        if silence_ms >= cfg.speculate_min_pause_ms:
            if ep.ends_with_end_word(text):
                return "end_word"
            if len(text) >= MIN_QUESTION_CHARS and ("?" in text or "？" in text):
                return "question"
        if silence_ms >= cfg.speculate_silence_ms:
            return "silence"
        return None

    @staticmethod
    def _endpoint_silence_ms(ep: Endpointer, turn: OpenTurn) -> int:
        cfg = ep.config
        if ep.trails_off(turn.text):
            return cfg.endpoint_thinking_silence_ms
        if turn.question_streak >= 2:
            return cfg.endpoint_question_silence_ms
        return cfg.endpoint_silence_ms


@dataclasses.dataclass(frozen=True, slots=True)
class FixedSilencePolicy:
    """A turn ends after a fixed silence, whatever its words, and nothing is guessed: the
    voice-activity endpointing of Pluely (0.4 s) and Glass (2 s)."""

    seconds: float

    def decide(self, ep: Endpointer, turn: OpenTurn, silence: float) -> list[Decision]:
        if turn.text and silence >= self.seconds:
            return [Endpoint(turn.id, "silence", round(silence, 4))]
        return []

    def wait(self, ep: Endpointer, turn: OpenTurn) -> Wait | None:
        return None


class SmartTurnPolicy:
    """Smart Turn v3.2 alone, as pipecat uses it: once its verdict on the audio up to the
    pause is in (it reads 0.2 s of silence), the turn is over at P(end) ≥ 0.5, else after
    pipecat's 3 s fallback (``stop_secs``).  A current partial is guessed after
    ``speculate_silence_ms``; its answer is held until the turn ends."""

    threshold = 0.5
    fallback_s = 3.0

    def decide(self, ep: Endpointer, turn: OpenTurn, silence: float) -> list[Decision]:
        decisions: list[Decision] = []
        if turn.text and turn.heard_all and silence * 1000 >= ep.config.speculate_silence_ms:
            decisions.append(Speculate(turn.id, turn.text, "silence"))
        heard = turn.sound_p if turn.reaches_voice_end(turn.sound_audio_end) else None
        finished = heard is not None and heard >= self.threshold
        if turn.text and (finished or silence >= self.fallback_s):
            decisions.append(Endpoint(turn.id, "question" if finished else "silence", round(silence, 4)))
        return decisions

    def wait(self, ep: Endpointer, turn: OpenTurn) -> Wait | None:
        return None


def smart_turn_alone(settings: Settings) -> None:
    """Smart Turn on (the ``smart-turn`` extra), the words model off."""
    settings.turns.smart_turn = True
    settings.turns.words_model = False


def without_models(settings: Settings) -> None:
    """No end-of-turn model: a policy that reads only the text and the silence."""
    settings.turns.words_model = False
    settings.turns.smart_turn = False


def without_question_shortcut(settings: Settings) -> None:
    """No shorter wait after "?" twice in a row: the question wait is the silence wait."""
    settings.turns.endpoint_question_silence_ms = settings.turns.endpoint_silence_ms


# --- the answers ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class FuzzyReuse:
    """The user's original reuse rule (mode ``user-fixes``): the answer to a guess stands
    when the rapidfuzz ratio of the two questions is at least ``threshold``, whatever
    changed ("should I not take the job" reuses the answer to "should I take the job")."""

    threshold: float = 0.92

    def __call__(self, sent: str, final: str, *, fillers: frozenset[str], tags: Tags) -> Verdict:
        score = similarity(question_key(sent, fillers, tags), question_key(final, fillers, tags))
        return Verdict(score >= self.threshold, score)


def fresh_client_per_request(factory: ClientFactory) -> ClientFactory:
    """Mode ``naive``: no pooled, pre-warmed client; each request builds its own client
    (off the loop, as the factory may block), streams on a cold connection and closes it.
    The engine's warm-up and cache pings reach nothing: the naive client never warmed."""
    return lambda: _FreshClients(factory)


class _FreshClients:
    """The engine's one client, which builds a new real one for every answer."""

    def __init__(self, factory: ClientFactory) -> None:
        self._factory = factory

    async def start(self) -> None:
        """Nothing to warm."""

    def stream_chat(self, messages: Sequence[Message], *, max_tokens: int, temperature: float,
                    prompt_cache_key: str | None = None, extra: Mapping[str, Any] | None = None,
                    extra_requests: int = 1) -> AsyncGenerator[StreamItem, None]:
        return self._stream(messages, max_tokens=max_tokens, temperature=temperature,
                            prompt_cache_key=prompt_cache_key, extra=extra, extra_requests=extra_requests)

    async def _stream(self, messages: Sequence[Message], *, max_tokens: int,
                      **options: Any) -> AsyncGenerator[StreamItem, None]:
        if max_tokens == 1:
            return  # the engine's cache ping (one token, never an answer): the baseline sent none
        client: AnswerClient = await asyncio.get_running_loop().run_in_executor(None, self._factory)
        try:
            stream = client.stream_chat(messages, max_tokens=max_tokens, **options)
            try:
                async for item in stream:
                    yield item
            finally:
                await stream.aclose()
        finally:
            await client.aclose()

    async def aclose(self) -> None:
        """Each request closed its own client."""
