"""When to guess the question (speculate) and when the turn is over (endpoint).

Pure and synchronous: fed audio-clock times, VAD decisions and partial transcripts,
it returns decisions.  No threads, no clocks of its own, so every rule is unit-tested
with plain numbers.

A partial is *current* when its audio reaches the last voiced frame: while the
interviewer keeps talking, new voiced frames arrive during every pass, so only a
partial decoded after they fell silent (or paused) is current.  Speculating only on
current partials keeps requests per turn low without waiting for any timer.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from app.config import TurnConfig
from app.events import EndpointReason, SpeculateReason

_EPS = 1e-6
_TRAILING_PUNCT = re.compile(r"[\s\.,!;:…。，！；：、\-—]+$")


@dataclass(frozen=True, slots=True)
class Speculate:
    turn: int
    text: str
    reason: SpeculateReason


@dataclass(frozen=True, slots=True)
class Endpoint:
    turn: int
    reason: EndpointReason
    silence: float


@dataclass(frozen=True, slots=True)
class Discard:
    """Speech that produced no words by the time a turn would end (a cough, a door, a
    noise burst): drop it, so a real question after it starts a turn of its own."""

    turn: int


Decision = Speculate | Endpoint | Discard


@dataclass(slots=True)
class _Turn:
    id: int
    last_voiced_end: float
    text: str = ""
    stable: str = ""
    partial_audio_end: float = -1.0
    question_streak: int = 0
    speculated: set[str] = field(default_factory=set)


class Endpointer:
    def __init__(self, config: TurnConfig, language: str = "en") -> None:
        self._cfg = config
        self.set_language(language)
        self._turn: _Turn | None = None

    def set_language(self, language: str) -> None:
        """End words and thinking words of ``language`` (an ``auto`` session settles it late)."""
        lang = language.split("-")[0]
        self._end_words = [w.lower() for w in self._cfg.end_words.get(lang, [])]
        self._thinking = {w.lower() for w in self._cfg.thinking_words.get(lang, [])}

    @property
    def turn(self) -> int | None:
        return self._turn.id if self._turn else None

    def speech_started(self, turn: int, t: float) -> None:
        self._turn = _Turn(id=turn, last_voiced_end=t)

    def voiced(self, t_end: float) -> None:
        """A voiced frame ending at ``t_end`` (audio clock) belongs to the current turn."""
        if self._turn:
            self._turn.last_voiced_end = max(self._turn.last_voiced_end, t_end)

    def partial(self, turn_id: int, text: str, stable: str, audio_end: float, now: float) -> list[Decision]:
        turn = self._turn
        if turn is None or turn_id != turn.id:
            return []
        turn.text, turn.stable, turn.partial_audio_end = text, stable, audio_end
        turn.question_streak = turn.question_streak + 1 if self._question_like(text) else 0
        return self._decide(now)

    def tick(self, now: float) -> list[Decision]:
        """Audio time advanced to ``now`` (end of the newest frame) without new voice."""
        return self._decide(now) if self._turn else []

    def force(self, now: float) -> list[Decision]:
        """'Answer now' or end of audio: whatever was heard is the question."""
        turn = self._turn
        if turn is None:
            return []
        self._turn = None
        return [Endpoint(turn.id, "forced", max(0.0, now - turn.last_voiced_end))]

    # --- rules -----------------------------------------------------------------

    def _decide(self, now: float) -> list[Decision]:
        turn = self._turn
        assert turn is not None
        silence = max(0.0, now - turn.last_voiced_end) + _EPS  # frame times are sums of 0.03
        decisions: list[Decision] = []
        current = turn.text and turn.partial_audio_end >= turn.last_voiced_end - _EPS
        if current:
            reason = self._speculate_reason(turn.text, silence)
            key = normalize(turn.text)
            if reason and key not in turn.speculated:
                turn.speculated.add(key)
                decisions.append(Speculate(turn.id, turn.text, reason))
        needed = self._endpoint_silence(turn) / 1000
        if not turn.text and silence >= self._cfg.endpoint_silence_ms / 1000:
            decisions.append(Discard(turn.id))
            self._turn = None
        elif turn.text and silence >= needed:
            reason_e: EndpointReason = "question" if turn.question_streak >= 2 else "silence"
            decisions.append(Endpoint(turn.id, reason_e, round(silence, 4)))
            self._turn = None
        return decisions

    def _speculate_reason(self, text: str, silence: float) -> SpeculateReason | None:
        silence_ms = silence * 1000
        if silence_ms >= self._cfg.speculate_min_pause_ms:
            if self._ends_with_end_word(text):
                return "end_word"
            if len(text) >= self._cfg.speculate_min_question_chars and ("?" in text or "？" in text):
                return "question"
        if silence_ms >= self._cfg.speculate_silence_ms:
            return "silence"
        return None

    def _endpoint_silence(self, turn: _Turn) -> int:
        if self._last_word(turn.text) in self._thinking:
            return self._cfg.endpoint_thinking_silence_ms
        if turn.question_streak >= 2:
            return self._cfg.endpoint_question_silence_ms
        return self._cfg.endpoint_silence_ms

    def _ends_with_end_word(self, text: str) -> bool:
        """Does the text end in a tag like "right?", "you know", "对吧"?

        Punctuation is the recogniser's guess ("urgent, right?" may come out as "urgent?
        Right."), so it is ignored; a one-word tag must follow a clause boundary, so that
        "turn right" is no tag but "…, right" is.
        """
        lowered = text.strip().lower()
        bare = _TRAILING_PUNCT.sub("", lowered.rstrip("?？ "))
        for tag in self._end_words:
            word = tag.rstrip("?？").strip()
            if not word or not bare.endswith(word):
                continue
            head = bare[: len(bare) - len(word)]
            if not head or _is_cjk(word[0]):
                return True
            if not head[-1].isspace() and head[-1] not in _BOUNDARY:
                continue  # inside a longer word: "outright"
            after_boundary = head.rstrip()[-1:] in _BOUNDARY
            if " " in word or after_boundary or (tag.endswith("?") and lowered.endswith("?")):
                return True
        return False

    def _question_like(self, text: str) -> bool:
        return text.rstrip().endswith(("?", "？")) or self._ends_with_end_word(text)

    @staticmethod
    def _last_word(text: str) -> str:
        stripped = text.strip()
        if not stripped or stripped[-1] in "?？.。!！":
            return ""  # a finished sentence is no thinking pause
        words = _TRAILING_PUNCT.sub("", stripped.lower()).split()
        return words[-1] if words else ""


_BOUNDARY = ",.?!;:，。？！；："


def _is_cjk(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def normalize(text: str) -> str:
    """Case- and punctuation-free form used to tell 'the same text' apart."""
    return " ".join(re.sub(r"[^\w\s']", " ", text.lower()).split())
