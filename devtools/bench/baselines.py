"""The benchmark's baselines: the product as it was, as strategy objects ``bench turns`` injects.

The product has one way of doing each thing; a baseline is another implementation of the
seam the product defines for it, so its numbers come from the same pipeline:

- the end of a turn: :class:`app.turns.endpointer.TurnPolicy` (the endpointer's
  decisions) inside :class:`app.session.listener.Listening` (what the listener scores, and whether
  the final reuses the last pass);
- the answers: :class:`app.answer.engine.Strategy` (the reuse rule, and a wrapper of the
  session's LLM client factory).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

from app.answer.engine import AnswerClient, ClientFactory
from app.answer.similarity import Verdict, similarity
from app.core.config import TurnConfig
from app.core.events import EndpointReason, SpeculateReason
from app.core.text import Tags, question_key
from app.llm.chat import Message, StreamItem
from app.llm.client import LlmClient
from app.llm.warming import Warmer
from app.session.listener import ProductListening
from app.turns.endpointer import Decision, Endpoint, Endpointer, OpenTurn, SignalsPolicy, Speculate
from app.turns.policy import Evidence, Wait, decide
from app.turns.signals import SignalRequest, TurnSignals
from app.turns.words import WordsScorer

MIN_QUESTION_CHARS = 30
"""The text rules guessed a "?" question early from this length (``[turns]
speculate_min_question_chars`` while the product had them; no other code read it)."""


# --- the end of a turn ----------------------------------------------------------------


class TextRulesPolicy:
    """The endpointer before the end-of-turn signals (mode ``rules``): the text alone.

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


class PassOnlyPolicy(SignalsPolicy):
    """The signals policy before the guess at the pause (issue 29, mode ``pass``): only a
    partial whose pass heard all the voice is guessed, and a score is used whatever pass
    is coming."""

    def guesses_ahead(self, ep: Endpointer) -> bool:
        return False

    def waits_for_pass(self, ep: Endpointer) -> bool:
        return False


class TextRulesListening(ProductListening):
    """Mode ``rules``: the text-rules endpointer, no end-of-turn signals at all."""

    def endpointer(self, turns: TurnConfig, language: str, fillers: Sequence[str]) -> Endpointer:
        return Endpointer(turns, language, fillers, policy=TextRulesPolicy())

    @property
    def scores(self) -> bool:
        return False


class PassOnlyListening(ProductListening):
    """Mode ``pass``: only a partial that heard all the voice is scored; when the speaker
    pauses, the newest partial's words are scored to warm the words model's cache for the
    pass that hears the pause."""

    def endpointer(self, turns: TurnConfig, language: str, fillers: Sequence[str]) -> Endpointer:
        return Endpointer(turns, language, fillers, policy=PassOnlyPolicy())

    def scores_partial(self, heard_all: bool) -> bool:
        return heard_all

    def at_pause(self, turn: int, text: str, now: float) -> SignalRequest | None:
        return SignalRequest(turn, text, now, warm_only=True)


class NoDeferListening(ProductListening):
    """Mode ``no-defer``: the pass over a pause's hangover starts while the words model
    scores the words of the pause, sharing the CPU with the verdict the guess waits for
    (the product before decision 0024)."""

    @property
    def defers_passes(self) -> bool:
        return False


class MootPassListening(ProductListening):
    """Mode ``moot-pass``: the guess's pass runs even when a partial pass taken just before
    the voice stopped heard all of it, beside the words model scoring that partial (the
    product before decision 0027)."""

    @property
    def decodes_moot_passes(self) -> bool:
        return True


class TonePassListening(ProductListening):
    """Mode ``tone-pass``: after the guess's pass heard the voice end, the pause is decoded
    again once the hangover's room tone is in, and the final is that pass or a new one (the
    product before decision 0033): the noise alone could change the guessed words."""

    @property
    def decodes_room_tone(self) -> bool:
        return True


class OwnCoreListening(ProductListening):
    """Mode ``own-core``: the verdict the guess waits for runs on the words model's one
    thread, as before decision 0029, even while the recogniser's core is idle."""

    @property
    def lends_core(self) -> bool:
        return False


class UnspacedListening(ProductListening):
    """Mode ``unspaced``: partial passes back to back however slow they get, as before
    issue 44 (no rest after a slow pass; see :data:`app.asr.streaming.PARTIAL_SPACING`)."""

    @property
    def partial_spacing(self) -> float:
        return 0.0


class NoSystemListening(ProductListening):
    """Mode ``no-system``: the words model scores without the system message its chat
    template writes (the product before decision 0025)."""

    def signals(self, loaded: TurnSignals) -> TurnSignals:
        if loaded.words is None:
            return loaded
        return TurnSignals(WordsScorer(prompt="<|im_start|>user\n"), loaded.sound, loaded.status)


class NoShortcutListening(ProductListening):
    """Modes ``naive`` and ``user-fixes``: no shorter wait after "?" twice in a row (the
    question wait is the silence wait), and the final decoded again after the endpoint."""

    def endpointer(self, turns: TurnConfig, language: str, fillers: Sequence[str]) -> Endpointer:
        same = {"endpoint_question_silence_ms": turns.endpoint_silence_ms}
        return Endpointer(turns.model_copy(update=same), language, fillers)

    @property
    def reuses_final(self) -> bool:
        return False


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


def spares_held_while_connecting(factory: ClientFactory) -> ClientFactory:
    """Mode ``held-spares``: the warm pool before decision 0026.  Two spare connections,
    not three, and a warm-up that held every response until all had their headers, so a
    re-warm after a cancel kept the spares busy for a whole connection set-up: a guess
    cancelled twice within it went out on a cold connection."""

    def build() -> AnswerClient:
        client = factory()
        warmer: Warmer | None = client._warmer if isinstance(client, LlmClient) else None
        if warmer is not None and warmer._target > 1:  # HTTP/2 keeps one
            warmer._target = 1 + 2
            warmer._warm_one = functools.partial(_warm_one_until_headers, warmer)  # type: ignore[method-assign]
        return client

    return build


async def _warm_one_until_headers(warmer: Warmer, gate: Any) -> list[str]:
    """``Warmer._warm_one`` as it was: the gate opened when every response had its headers."""
    timeout = warmer._connect_timeout
    arrived = False
    try:
        async with warmer._sdk.models.with_streaming_response.list(timeout=timeout) as resp:
            gate.arrive()
            arrived = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(gate.wait(), timeout)
            page = await resp.parse()
            return [m.id for m in page.data]
    finally:
        if not arrived:
            gate.arrive()


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
