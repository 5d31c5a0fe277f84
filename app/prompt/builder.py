"""Chat messages for one interview, laid out so the provider's prompt cache keeps hitting.

Provider caches (OpenAI, DeepSeek, llama.cpp's slot cache) reuse work only for a prefix that
is byte-identical to an earlier request.  So the layout is fixed, most-stable first:

1. system prompt                       — constant for the app
2. two few-shot exchanges              — constant per language (and Chinese script)
3. résumé + job description (+ ack)    — constant per session
4. earlier turns, oldest first         — append-only; trimmed only in whole blocks
5. the current question                — the only part that changes every request

Every request is therefore the previous one plus a few messages at the end, and the history
is trimmed rarely (half the window at once), each trim costing one cache miss instead of
one per turn as a sliding window would.  Roles strictly alternate user/assistant after the
system message because some local chat templates reject anything else.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.prompt.recall import RecallIndex, split_lines
from app.prompt.shape import ReplyShape
from app.prompt.texts import (
    CANDIDATE_SAID,
    COMPACT_ABOUT,
    COMPACT_ABOUT_ACK,
    COMPACT_FEW_SHOT,
    COMPACT_SYSTEM_PROMPT,
    CONTEXT_ACK,
    FEW_SHOT,
    builtin_system_prompt,
    compact_question,
    context_message,
    language_family,
    localise,
)

Message = dict[str, str]
DEFAULT_MAX_TURNS = 8
COMPACT_SHAPE = ReplyShape(max_bullets=3, max_words=50, max_lines_after_bullets=0, max_tokens=96,
                           sampling={"repeat_penalty": 1.3, "frequency_penalty": 0.3})
"""The bundled model's answers: three bullets and nothing after them (the sentence after
the bullets is where it invented most, in `bench answers`); 50 words, so an answer stays
under 60 with its markers (``max_tokens`` 96 is ~70 words: the cap, not the server, ends
it); ``repeat_penalty`` 1.3 (llama.cpp's default 1.1 is too weak for a 135M model's
loops) and a frequency penalty make it vary its words, and the shape cuts the stream at
the first repeated line anyway."""
DIGITS = "0123456789"
NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twenty",
                "hundred", "thousand", "million", "dozen")
"""Banned with their leading space (" five"), each one SmolLM2 token (tests/prompt/test_local_prompt.py
checks it: llama.cpp biases every token of a text, and " " must never be banned).  "one"
stays: "one-on-one", "one thing" are not figures."""
BANNED = -100.0
"""A logit bias that no sampler overcomes: the token is never written."""
COMPACT_ABOUT_LINES = 2
"""The résumé's first lines (name, headline) sit in the compact prefix: "tell me about
yourself" recalls no line, and must not be answered with nothing to go on."""


@dataclass(frozen=True, slots=True)
class Turn:
    question: str
    answer: str
    key: int | None = None
    """The session's turn id: a continued or regenerated turn replaces its entry."""
    said: tuple[str, ...] = ()
    """What the candidate said after the question (the microphone's transcript)."""


class PromptBuilder:
    """Owns one interview's prompt; call :meth:`record_turn` once per answered question.

    ``max_turns`` is the most earlier turns ever sent.  When a new turn would exceed it, the
    oldest ``max(1, max_turns // 2)`` turns are dropped together; ``max_turns=0`` sends no
    history at all.  A custom ``system_prompt`` replaces the built-in one, while the few-shot
    examples stay (disable them with ``few_shot=False`` if the custom prompt wants a
    different format).

    ``compact`` is for the bundled 135M model (English only; Chinese keeps the full
    prompt): a four-sentence system prompt, few-shot with no names or numbers, the
    résumé's first lines instead of the whole of it, no history, and each question sent
    with the lines of the documents it touches (:mod:`app.prompt.recall`) as its facts.
    A small model cannot find a fact in two pages, but it can restate three lines.
    """

    def __init__(
        self,
        system_prompt: str | None,
        resume: str | None,
        job_description: str | None,
        language: str = "en",
        *,
        max_turns: int = DEFAULT_MAX_TURNS,
        few_shot: bool = True,
        compact: bool = False,
    ) -> None:
        if max_turns < 0:
            raise ValueError("max_turns must be 0 or more")
        self.language = language
        self.compact = compact and language_family(language) == "en"
        self.max_turns = 0 if self.compact else max_turns
        self.recall = RecallIndex(resume, job_description)
        """The documents' lines, for the window (``recall`` events) and compact facts."""
        self.reply_shape = COMPACT_SHAPE if self.compact else ReplyShape()
        custom = (system_prompt or "").strip()
        if self.compact:
            self.system_prompt = custom or COMPACT_SYSTEM_PROMPT
            self._prefix: tuple[Message, ...] = tuple(_compact_prefix(self.system_prompt, resume, few_shot))
            self._turns: list[Turn] = []
            self._said_early: dict[int, list[str]] = {}
            return
        self.system_prompt = custom or builtin_system_prompt(language)
        prefix: list[Message] = [{"role": "system", "content": self.system_prompt}]
        if few_shot:
            for question, answer in FEW_SHOT[language_family(language)]:
                prefix += [_user(localise(question, language)), _assistant(localise(answer, language))]
        context = context_message(_clean(resume), _clean(job_description), language)
        if context is not None:
            prefix += [_user(context), _assistant(localise(CONTEXT_ACK[language_family(language)], language))]
        self._prefix = tuple(prefix)
        self._turns = []
        self._said_early = {}

    @property
    def turns(self) -> tuple[Turn, ...]:
        """The earlier turns that are currently sent, oldest first."""
        return tuple(self._turns)

    def record_turn(self, question: str, answer: str, *, key: int | None = None) -> None:
        """Remember a finished turn: the question as asked and the answer actually shown.

        Record what the user saw (including a truncated answer), not a later regeneration,
        so the model's view of the conversation matches the candidate's.  Blank answers
        (nothing was shown) are not recorded: they would teach the model to say nothing.
        """
        question, answer = question.strip(), answer.strip()
        if not question or not answer:
            return
        said: tuple[str, ...] = ()
        if key is not None:
            said = next((t.said for t in self._turns if t.key == key), ())
            said += tuple(self._said_early.pop(key, ()))
            self.forget_turn(key)
        self._turns.append(Turn(question, answer, key, said))
        if len(self._turns) > self.max_turns:
            del self._turns[: max(1, self.max_turns // 2)]
        if not self.max_turns:
            self._turns.clear()

    def record_candidate(self, said: str, *, key: int) -> None:
        """The candidate's own words after the question of turn ``key``: they go into the
        history right after that turn, so the prefix of later requests only grows."""
        said = said.strip()
        if not said:
            return
        for i, turn in enumerate(self._turns):
            if turn.key == key:
                self._turns[i] = dataclasses.replace(turn, said=(*turn.said, said))
                return
        self._said_early.setdefault(key, []).append(said)  # before its answer was done

    def forget_turn(self, key: int) -> None:
        """Drop a turn whose answer was withdrawn (the question went on)."""
        self._turns = [t for t in self._turns if t.key != key]

    def prefix_messages(self) -> list[Message]:
        """System + few-shot + context: what a cache keep-alive ping sends."""
        return [dict(m) for m in self._prefix]

    def history_messages(self) -> list[Message]:
        out: list[Message] = []
        template = localise(CANDIDATE_SAID[language_family(self.language)], self.language)
        for turn in self._turns:
            out += [_user(turn.question), _assistant(turn.answer)]
            if turn.said:
                out.append(_user(template.format(said=" ".join(turn.said))))
        return out

    def messages(self, question: str) -> list[Message]:
        """The full request for ``question``: prefix, history, then the question last."""
        question = question.strip()
        if not question:
            raise ValueError("question is empty")
        if self.compact:
            return [*self.prefix_messages(), _user(compact_question(question, self._facts(question)))]
        return [*self.prefix_messages(), *self.history_messages(), _user(question)]

    def sampling(self, question: str) -> dict[str, Any] | None:
        """Extra request fields for ``question`` (None: the server's defaults).

        Compact: the shape's penalties, and every digit and number word that neither the
        facts nor the question contain is banned (llama.cpp's ``logit_bias`` by token
        text; SmolLM2 writes numbers one digit per token): a 135M model's favourite
        invention is a figure ("10 years", "a team of five"), and it cannot write one it
        has no digits or words for.
        """
        if not self.compact:
            return None
        out: dict[str, Any] = dict(self.reply_shape.sampling)
        seen = (question + " " + " ".join(self._facts(question))).lower()
        words = set(re.findall(r"[a-z]+", seen))
        banned = {d: BANNED for d in DIGITS if d not in seen}
        banned |= {f" {w}": BANNED for w in NUMBER_WORDS if w not in words}
        if banned:
            out |= {"logit_bias": banned, "logit_bias_type": "tokens"}
        return out

    def _facts(self, question: str) -> list[str]:
        return [line.text for line in self.recall.lines_for(question.strip())]

    def stable_prefix_bytes(self) -> bytes:
        return serialise(self._prefix)


def serialise(messages: Sequence[Mapping[str, Any]]) -> bytes:
    """Canonical JSON bytes of messages: the form prefix hashes and stability tests compare."""
    return json.dumps(list(messages), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def cache_key(session_id: str, prefix: Sequence[Mapping[str, Any]] | bytes) -> str:
    """The ``prompt_cache_key`` for a session and its prefix.

    OpenAI routes requests with the same key to the same cache machine; keying on the
    session and the prefix hash keeps one interview on one cache, and gives a fresh key
    when the prefix changes (new résumé, new language) so stale routing is not reused.
    Hashing keeps the session id and résumé content out of the provider's logs.
    """
    data = prefix if isinstance(prefix, bytes) else serialise(prefix)
    digest = hashlib.sha256(session_id.encode("utf-8") + b"\x00" + data).hexdigest()
    return f"icp-{digest[:16]}"


MESSAGE_OVERHEAD_TOKENS = 4
REPLY_PRIMING_TOKENS = 3
_WIDE = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f]"
)


def estimate_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Rough prompt size for servers that report no usage (llama.cpp streams, some proxies).

    This is an estimate, not a tokenizer: about 4 characters per token for Latin text,
    one token per CJK/kana/hangul character, plus a fixed overhead per message for the
    chat template.  It is typically within ±20% for English and good enough for cost and
    context-budget displays, which mark such numbers as estimated.
    """
    total = REPLY_PRIMING_TOKENS
    for message in messages:
        text = _content_text(message.get("content"))
        wide = len(_WIDE.findall(text))
        total += MESSAGE_OVERHEAD_TOKENS + wide + math.ceil((len(text) - wide) / 4)
    return total


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # OpenAI content parts: [{"type": "text", "text": …}]
        return "".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping)
        )
    return ""


def _compact_prefix(system_prompt: str, resume: str | None, few_shot: bool) -> list[Message]:
    prefix: list[Message] = [{"role": "system", "content": system_prompt}]
    if few_shot:
        for question, answer in COMPACT_FEW_SHOT:
            prefix += [_user(question), _assistant(answer)]
    about = [line for line, _ in split_lines(resume or "")][:COMPACT_ABOUT_LINES]
    if about:
        prefix += [_user(COMPACT_ABOUT.format(about="\n".join(about))), _assistant(COMPACT_ABOUT_ACK)]
    return prefix


def _clean(text: str | None) -> str | None:
    text = (text or "").strip()
    return text or None


def _user(content: str) -> Message:
    return {"role": "user", "content": content}


def _assistant(content: str) -> Message:
    return {"role": "assistant", "content": content}
