"""When to guess the question (speculate) and when the turn is over (endpoint).

Pure and synchronous: fed audio-clock times, VAD decisions and partial transcripts,
it returns decisions.  No threads, no clocks of its own, so every rule is unit-tested
with plain numbers.

A partial is *current* when its audio reaches the last voiced frame: while the
interviewer keeps talking, new voiced frames arrive during every pass, so only a
partial decoded after they fell silent (or paused) is current.  Speculating mostly on
current partials keeps requests per turn low without waiting for any timer; the newest
partial, current or not, is guessed at the pause when the policy calls its words
finished (``Wait.ahead_ms``) and no pass that will hear the pause is coming (it was given
up, heard no words, or the voice it heard was not the last): a question whose last words
were heard before the voice stopped does not wait the silence endpoint for a pass that
never comes.  While one is coming it is waited for: a partial decoded before the voice
stopped often lacks the last syllable ("…simple term?" for "…terms?").

How long a pause ends the turn is :mod:`app.turns.policy`'s decision, from the text and
the end-of-turn signals; the signals are computed elsewhere (off the audio thread) and
handed in with :meth:`Endpointer.eot`, tagged with the text and audio they were computed
on, so a late result for older words is simply not used.
"""

from __future__ import annotations

import collections
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from app.audio.frames import FRAME_MS
from app.config import TurnConfig
from app.events import EndpointReason, SpeculateReason
from app.text import question_key, tags_of
from app.turns.policy import Evidence, TextCues, Wait, decide

_EPS = 1e-6
_TRAILING_PUNCT = re.compile(r"[\s\.,!;:…。，！；：、\-—]+$")
_LEARNED_PAUSES = 8


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
    silent_audio_end: float = -1.0
    """Audio end of the newest pass that heard no words."""
    question_streak: int = 0
    speculated: set[tuple[str, ...]] = field(default_factory=set)
    words_key: tuple[str, ...] | None = None
    words_logp: float | None = None
    sound_audio_end: float = -1.0
    sound_p: float | None = None


class Endpointer:
    def __init__(self, config: TurnConfig, language: str = "en", fillers: Iterable[str] = (), *,
                 guess_ahead: bool = True) -> None:
        """``guess_ahead`` False guesses current partials only (the benchmark's baseline
        of before the guess at the pause)."""
        self._cfg = config
        self._guess_ahead = guess_ahead
        self._fillers = tuple(fillers)
        self.set_language(language)
        self._turn: _Turn | None = None
        self._pauses: collections.deque[float] = collections.deque(maxlen=_LEARNED_PAUSES)
        """Lengths (ms) of the interviewer's latest pauses inside a question."""
        self._expect_words = False
        self._pass_coming = False

    def expect_words(self, expected: bool) -> None:
        """The words model is loaded and scores current partials: until its score for the
        current text arrives, a guess waits for it (see :mod:`app.turns.policy`)."""
        self._expect_words = expected

    def expect_pass(self, coming: bool) -> None:
        """A recognition pass is running or wanted: its partial will be current, or it
        will be the final; a guess on words heard before the pause waits for it."""
        self._pass_coming = coming

    def set_language(self, language: str) -> None:
        """The text cues of ``language`` (an ``auto`` session settles it late)."""
        lang = language.split("-")[0]
        self._end_words = [w.lower() for w in self._cfg.end_words.get(lang, [])]
        self._tags = tags_of(self._end_words)
        self._thinking = [w.lower() for w in self._cfg.thinking_words.get(lang, [])]
        self._particles = [w.lower() for w in self._cfg.final_particles.get(lang, [])]
        self._question_words = [w.lower() for w in self._cfg.question_words.get(lang, [])]

    @property
    def turn(self) -> int | None:
        return self._turn.id if self._turn else None

    @property
    def text(self) -> str:
        """The open turn's newest partial ("" before the first)."""
        return self._turn.text if self._turn else ""

    def speech_started(self, turn: int, t: float) -> None:
        self._turn = _Turn(id=turn, last_voiced_end=t)

    def voiced(self, t_end: float) -> None:
        """A voiced frame ending at ``t_end`` (audio clock) belongs to the current turn."""
        turn = self._turn
        if turn:
            gap = t_end - FRAME_MS / 1000 - turn.last_voiced_end
            if gap * 1000 >= self._cfg.speculate_min_pause_ms - _EPS:
                self._pauses.append(gap * 1000)  # they went on after it: a pause inside the turn
            turn.last_voiced_end = max(turn.last_voiced_end, t_end)

    def partial(self, turn_id: int, text: str, stable: str, audio_end: float, now: float) -> list[Decision]:
        turn = self._turn
        if turn is None or turn_id != turn.id:
            return []
        turn.text, turn.stable, turn.partial_audio_end = text, stable, audio_end
        turn.question_streak = turn.question_streak + 1 if self._question_like(text) else 0
        return self._decide(now)

    def no_words(self, turn_id: int, audio_end: float) -> None:
        """A pass over ``turn_id`` up to ``audio_end`` heard no words: if it covered all the
        voice, the turn is a noise to forget once the silence endpoint has passed."""
        turn = self._turn
        if turn is not None and turn.id == turn_id:
            turn.silent_audio_end = max(turn.silent_audio_end, audio_end)

    def current(self, turn_id: int, audio_end: float) -> bool:
        """Does a partial of ``turn_id`` decoded up to ``audio_end`` cover all the voice so
        far?  Only such a partial is worth an end-of-turn score."""
        turn = self._turn
        return turn is not None and turn.id == turn_id and audio_end >= turn.last_voiced_end - _EPS

    def eot(self, turn_id: int, text: str, audio_end: float, now: float, *,
            words_logp: float | None = None, sound_p: float | None = None) -> list[Decision]:
        """End-of-turn signals arrived for ``text`` (the words model's log P(end)) and for
        the audio up to ``audio_end`` (Smart Turn's P(end)); either may be None (missing
        or failed).  They count while the turn's text and voice are still those."""
        turn = self._turn
        if turn is None or turn_id != turn.id:
            return []
        if words_logp is not None:
            turn.words_key, turn.words_logp = self._key(text), words_logp
        if sound_p is not None:
            turn.sound_audio_end, turn.sound_p = audio_end, sound_p
        return self._decide(now)

    def wait(self) -> Wait | None:
        """The policy's current verdict for the open turn (what the decisions follow)."""
        return self._wait(self._turn) if self._turn else None

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

    def discard(self) -> list[Decision]:
        """The open turn was no speech of this speaker's (an echo): forget it, so a pass
        still decoding it cannot end it later."""
        turn = self._turn
        self._turn = None
        return [Discard(turn.id)] if turn else []

    # --- rules -----------------------------------------------------------------

    def _decide(self, now: float) -> list[Decision]:
        turn = self._turn
        assert turn is not None
        silence = max(0.0, now - turn.last_voiced_end) + _EPS  # frame times are sums of 0.03
        heard_nothing = not turn.text and turn.silent_audio_end >= turn.last_voiced_end - _EPS
        if heard_nothing and silence * 1000 >= self._cfg.endpoint_silence_ms:
            self._turn = None  # speech that decoded to no words: a noise, not a turn
            return [Discard(turn.id)]
        if self._cfg.policy == "rules":
            return self._decide_by_rules(now)
        wait = self._wait(turn)
        decisions: list[Decision] = []
        current = turn.partial_audio_end >= turn.last_voiced_end - _EPS
        ahead = self._guess_ahead and not self._pass_coming
        due = wait.speculate_ms if current else wait.ahead_ms if ahead else None
        key = self._key(turn.text)
        if turn.text and due is not None and silence * 1000 >= due and key not in turn.speculated:
            turn.speculated.add(key)
            reason: SpeculateReason = (
                "end_word" if self._ends_with_end_word(turn.text)
                else "question" if wait.verdict == "complete" or self._question_like(turn.text)
                else "silence")
            decisions.append(Speculate(turn.id, turn.text, reason))
        if turn.text and silence * 1000 >= wait.endpoint_ms:
            reason_e: EndpointReason = "question" if wait.verdict == "complete" else "silence"
            decisions.append(Endpoint(turn.id, reason_e, round(silence, 4)))
            self._turn = None
        return decisions

    def _wait(self, turn: _Turn) -> Wait:
        text = turn.text
        cues = TextCues(
            tag=self._ends_with_end_word(text) or self._ends_with(text, self._particles),
            question=(text.rstrip().endswith(("?", "？"))
                      or self._holds_question_word(text)),
            trailing=self._trails_off(text),
            question_streak=turn.question_streak)
        # words heard before the voice stopped are not judged while a pass that will hear
        # it all is coming: a verdict on them would end the turn on words it may not have
        heard_all = turn.partial_audio_end >= turn.last_voiced_end - _EPS
        waiting = self._guess_ahead and self._pass_coming and not heard_all
        scored = turn.words_key == self._key(text) and not waiting
        words = turn.words_logp if scored else None
        sound = turn.sound_p if turn.sound_audio_end >= turn.last_voiced_end - _EPS else None
        learned = max(self._pauses) if self._cfg.learn_pauses and self._pauses else None
        pending = self._expect_words and not scored
        return decide(self._cfg, cues, Evidence(words, sound, words_pending=pending), learned)

    def _decide_by_rules(self, now: float) -> list[Decision]:
        """The endpointer before the end-of-turn signals (``policy = "rules"``)."""
        turn = self._turn
        assert turn is not None
        silence = max(0.0, now - turn.last_voiced_end) + _EPS
        decisions: list[Decision] = []
        current = turn.text and turn.partial_audio_end >= turn.last_voiced_end - _EPS
        if current:
            reason = self._speculate_reason(turn.text, silence)
            key = self._key(turn.text)
            if reason and key not in turn.speculated:
                turn.speculated.add(key)
                decisions.append(Speculate(turn.id, turn.text, reason))
        needed = self._endpoint_silence(turn) / 1000
        if turn.text and silence >= needed:
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
        if self._trails_off(turn.text):
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
        return (text.rstrip().endswith(("?", "？")) or self._ends_with_end_word(text)
                or self._ends_with(text, self._particles) or self._closed_wh_question(text))

    def _closed_wh_question(self, text: str) -> bool:
        """A sentence the recogniser closed ("。", "！") whose last sentence holds a
        question word (什么, 怎么…): a question however it is punctuated.

        A Mandarin wh-question needs no rising pitch (the word makes it one), so
        Whisper's choice of "？" or "。" for it is a coin toss over intonation that is not
        there ("进程和线程有什么区别。"); the words say it asks, the full stop says it
        ended, as much as a "？" would."""
        stripped = text.rstrip()
        if not stripped or stripped[-1] not in _SENTENCE_FINAL:
            return False
        return self._holds_question_word(_SENTENCE_SPLIT.split(stripped[:-1])[-1])

    def _holds_question_word(self, text: str) -> bool:
        return any(w in text.lower() for w in self._question_words)

    def _trails_off(self, text: str) -> bool:
        """Ends in and/so/um/然后… with no full stop after it: a thinking pause."""
        stripped = text.strip()
        if not stripped or stripped[-1] in _SENTENCE_FINAL:
            return False  # a finished sentence is no thinking pause
        return self._ends_with(stripped, self._thinking)

    def _key(self, text: str) -> tuple[str, ...]:
        """Guesses are deduplicated by the one "same question" rule."""
        return question_key(text, self._fillers, self._tags)

    @staticmethod
    def _ends_with(text: str, words: list[str]) -> bool:
        """Does the text end in one of ``words``, punctuation aside?  A Chinese word may
        follow anything (no spaces between words); any other must be a whole word."""
        bare = _TRAILING_PUNCT.sub("", text.strip().lower().rstrip("?？ "))
        last = bare.split()[-1] if bare.split() else ""
        return any(bare.endswith(w) if _is_cjk(w[0]) else last == w for w in words if w)


_BOUNDARY = ",.?!;:，。？！；："
_SENTENCE_FINAL = "?？.。!！"
_SENTENCE_SPLIT = re.compile(f"[{re.escape(_SENTENCE_FINAL)}]")


def _is_cjk(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


