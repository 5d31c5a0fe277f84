"""When to guess the question (speculate) and when the turn is over (endpoint).

Pure and synchronous: fed audio-clock times, VAD decisions and partial transcripts,
it returns decisions.  No threads, no clocks of its own, so every rule is unit-tested
with plain numbers. Design notes: decision 0039.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from app.audio.frames import FRAME_MS, TIME_TOLERANCE_S, beyond, reached
from app.core.config import TurnConfig
from app.core.events import EndpointReason, SpeculateReason
from app.core.text import SENTENCE_FINAL, is_cjk, question_key, tags_of
from app.turns.policy import Evidence, TextCues, Wait, decide

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


@dataclass(frozen=True, slots=True)
class Continuation:
    """New speech continues the turn just ended, after a pause of ``pause`` seconds."""

    turn: int
    pause: float


@dataclass(frozen=True, slots=True)
class _Closed:
    """The turn most recently ended, while speech may still continue it."""

    turn: int
    voiced_end: float


@dataclass(slots=True)
class OpenTurn:
    """What the endpointer knows of the turn still open (a policy reads it, never writes)."""

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
    guess_key: tuple[str, ...] | None = None
    """The newest guess sent: the question the answer held back was written for."""
    heard_since_stop: list[tuple[str, ...]] = field(default_factory=list)
    """What each current pass since the voice last stopped heard (question keys)."""

    @property
    def guess_confirmed(self) -> bool:
        """Every pass since the voice stopped heard the question the newest guess asked."""
        return (self.guess_key is not None and bool(self.heard_since_stop)
                and all(k == self.guess_key for k in self.heard_since_stop))

    def reaches_voice_end(self, audio_end: float) -> bool:
        """Does audio up to ``audio_end`` cover all the voice so far?"""
        return reached(audio_end, self.last_voiced_end)

    @property
    def heard_all(self) -> bool:
        """The newest partial is current: its pass heard all the voice so far."""
        return self.reaches_voice_end(self.partial_audio_end)


class TurnPolicy(Protocol):
    """Turns what the endpointer knows of the open turn into decisions."""

    def decide(self, ep: Endpointer, turn: OpenTurn, silence: float) -> list[Decision]:
        """The decisions due after ``silence`` seconds without voice; the endpointer drops a
        guess at words already guessed and closes the turn at an :class:`Endpoint`."""
        ...

    def wait(self, ep: Endpointer, turn: OpenTurn) -> Wait | None:
        """The verdict the decisions follow (None: the policy has none to show)."""
        ...


class Endpointer:
    def __init__(self, config: TurnConfig, language: str = "en", fillers: Iterable[str] = (), *,
                 policy: TurnPolicy | None = None, questions: bool = True) -> None:
        """``policy``: the product's :class:`SignalsPolicy` unless a benchmark baseline is given;
        ``questions`` False: this speaker answers (the candidate), so a statement is no
        preamble to wait out."""
        self._cfg = config
        self._questions = questions
        self._continuation_s = config.continuation_window_ms / 1000 if questions else 0.0
        self._policy: TurnPolicy = policy or SignalsPolicy()
        self._fillers = tuple(fillers)
        self.set_language(language)
        self._turn: OpenTurn | None = None
        self._closed: _Closed | None = None
        self._other_spoke_at = -1.0
        """Audio time the other speaker last started talking."""
        self._pauses: collections.deque[float] = collections.deque(maxlen=_LEARNED_PAUSES)
        """Lengths (ms) of the interviewer's latest pauses inside a question."""
        self._expect_words = False
        self._pass_coming = False
        self._guesses_held = True

    def expect_words(self, expected: bool) -> None:
        """The words model is loaded and scores current partials: until its score for the
        current text arrives, a guess waits for it (see :mod:`app.turns.policy`)."""
        self._expect_words = expected

    def expect_pass(self, coming: bool) -> None:
        """A recognition pass is running or wanted: its partial will be current, or it
        will be the final; a guess on words heard before the pause waits for it."""
        self._pass_coming = coming

    def guesses_held(self, held: bool) -> None:
        """Low-latency mode: a guess's answer is written before the turn is confirmed and
        held until it is, so an unsure turn whose guess every later pass confirms may end
        sooner (decision 0032).  On by default, as the mode."""
        self._guesses_held = held

    @property
    def holds_guesses(self) -> bool:
        """See :meth:`guesses_held`."""
        return self._guesses_held

    @property
    def config(self) -> TurnConfig:
        return self._cfg

    @property
    def pass_coming(self) -> bool:
        """See :meth:`expect_pass`."""
        return self._pass_coming

    def set_language(self, language: str) -> None:
        """The text cues of ``language`` (an ``auto`` session settles it late)."""
        lists = self._cfg.words_of(language)
        self._end_words = [w.lower() for w in lists.end_words]
        self._tags = tags_of(self._end_words)
        self._thinking = [w.lower() for w in lists.thinking_words]
        self._more = [w.lower().strip() for w in lists.more_words if w.strip()]
        self._verb_pending = [w.lower().strip() for w in lists.verb_pending if w.strip()]
        self._particles = [w.lower() for w in lists.final_particles]
        self._question_words = [w.lower() for w in lists.question_words]
        self._openers = [w.lower() for w in (*lists.question_openers, *lists.request_words)
                         if w.strip() and not is_cjk(w[0])]
        self._requests_cjk = [w for w in lists.request_words if w.strip() and is_cjk(w[0])]
        self._lead_ins = {w.lower() for w in (*lists.fillers, *lists.thinking_words, *lists.more_words)
                          if " " not in w}
        self._reads_asking = bool(self._openers or self._requests_cjk or self._question_words
                                  or self._particles)

    @property
    def turn(self) -> int | None:
        return self._turn.id if self._turn else None

    @property
    def text(self) -> str:
        """The open turn's newest partial ("" before the first)."""
        return self._turn.text if self._turn else ""

    @property
    def continuation_s(self) -> float:
        """Speech this soon after an endpoint continues the turn (0 for the candidate)."""
        return self._continuation_s

    def other_spoke(self, t: float) -> None:
        """The other speaker started talking at ``t``: speech of this one's after that is
        a new turn, whatever the pause."""
        self._other_spoke_at = max(self._other_spoke_at, t)

    def continues(self, began: float) -> Continuation | None:
        """Speech that began at ``began``: the turn just ended, if it continues it (within
        the continuation window, and the other speaker did not answer in the pause; what
        they "begin" after this speech did is its echo on their microphone)."""
        closed, self._closed = self._closed, None
        if closed is None:
            return None
        pause = max(0.0, began - closed.voiced_end)
        answered = closed.voiced_end <= self._other_spoke_at < began
        return Continuation(closed.turn, pause) if pause <= self._continuation_s and not answered else None

    def speech_started(self, turn: int, t: float) -> None:
        """Turn ``turn`` (a new one, or the one :meth:`continues` named) is open; voice up to ``t``."""
        self._turn = OpenTurn(id=turn, last_voiced_end=t)

    def voiced(self, t_end: float) -> None:
        """A voiced frame ending at ``t_end`` (audio clock) belongs to the current turn."""
        turn = self._turn
        if turn:
            gap = t_end - FRAME_MS / 1000 - turn.last_voiced_end
            if reached(gap, self._cfg.speculate_min_pause_ms / 1000):
                self._pauses.append(gap * 1000)  # they went on after it: a pause inside the turn
            if beyond(t_end, turn.last_voiced_end):
                turn.heard_since_stop.clear()  # passes before this voice heard less
            turn.last_voiced_end = max(turn.last_voiced_end, t_end)

    def partial(self, turn_id: int, text: str, stable: str, audio_end: float, now: float) -> list[Decision]:
        turn = self._turn
        if turn is None or turn_id != turn.id:
            return []
        turn.text, turn.stable, turn.partial_audio_end = text, stable, audio_end
        turn.question_streak = turn.question_streak + 1 if self.question_like(text) else 0
        if turn.heard_all:
            turn.heard_since_stop.append(self.key(text))
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
        return turn is not None and turn.id == turn_id and turn.reaches_voice_end(audio_end)

    def end_of_turn_scores(self, turn_id: int, text: str, audio_end: float, now: float, *,
                           words_logp: float | None = None, sound_p: float | None = None) -> list[Decision]:
        """End-of-turn signals arrived for ``text`` (the words model's log P(end)) and for
        the audio up to ``audio_end`` (Smart Turn's P(end)); either may be None (missing
        or failed).  They count while the turn's text and voice are still those."""
        turn = self._turn
        if turn is None or turn_id != turn.id:
            return []
        if words_logp is not None:
            turn.words_key, turn.words_logp = self.key(text), words_logp
        if sound_p is not None:
            turn.sound_audio_end, turn.sound_p = audio_end, sound_p
        return self._decide(now)

    def wait(self) -> Wait | None:
        """The policy's current verdict for the open turn (what the decisions follow)."""
        return self._policy.wait(self, self._turn) if self._turn else None

    def tick(self, now: float) -> list[Decision]:
        """Audio time advanced to ``now`` (end of the newest frame) without new voice."""
        return self._decide(now) if self._turn else []

    def force(self, now: float) -> list[Decision]:
        """'Answer now' or end of audio: whatever was heard is the question."""
        turn = self._turn
        if turn is None:
            return []
        return [self._close(turn, Endpoint(turn.id, "forced", max(0.0, now - turn.last_voiced_end)), now)]

    def discard(self) -> list[Decision]:
        """The open turn was no speech of this speaker's (an echo): forget it, so a pass
        still decoding it cannot end it later."""
        turn = self._turn
        self._turn = None
        return [Discard(turn.id)] if turn else []

    # --- decisions -------------------------------------------------------------

    def _decide(self, now: float) -> list[Decision]:
        turn = self._turn
        assert turn is not None
        # a silence that reaches a wait within the frames' rounding has lasted it
        silence = max(0.0, now - turn.last_voiced_end) + TIME_TOLERANCE_S
        heard_nothing = not turn.text and turn.reaches_voice_end(turn.silent_audio_end)
        if heard_nothing and silence * 1000 >= self._cfg.endpoint_silence_ms:
            self._turn = None  # speech that decoded to no words: a noise, not a turn
            return [Discard(turn.id)]
        decisions: list[Decision] = []
        for decision in self._policy.decide(self, turn, silence):
            if isinstance(decision, Speculate):
                key = self.key(decision.text)
                if key in turn.speculated:
                    continue  # these words were guessed already
                turn.speculated.add(key)
                turn.guess_key = key
            elif isinstance(decision, Endpoint):
                self._close(turn, decision, now)
            decisions.append(decision)
        return decisions

    def _close(self, turn: OpenTurn, endpoint: Endpoint, now: float) -> Endpoint:
        """The turn is over at ``now``: new speech may still continue it (:meth:`continues`)."""
        self._turn = None
        self._closed = _Closed(turn.id, now - endpoint.silence)
        return endpoint

    # --- what the words say (read by the policies) -------------------------------

    def cues(self, turn: OpenTurn) -> TextCues:
        text = turn.text
        tag = self.ends_with_end_word(text) or self._ends_with(text, self._particles)
        return TextCues(
            tag=tag,
            question=(text.rstrip().endswith(("?", "？"))
                      or self._holds_question_word(text)),
            trailing=self.trails_off(text) or self.announces_more(text) or self.lacks_its_verb(text),
            question_streak=turn.question_streak,
            # a statement is judged on words a pass heard up to the voice's end: an older
            # partial may stop before the question word ("如果线上出了故障，" for "…怎么排查？")
            asks=(self.asks(text) if self._questions and (turn.heard_all or self.asks(text))
                  else None),
            closed=turn.heard_all and (tag or self._closed_wh_question(text)))

    def asks(self, text: str) -> bool | None:
        """Do the words as said ask, punctuation aside?  A clause opening with a question
        opener or a request ("what…", "could you…", "tell me…"), a tag, a question word or
        particle (什么, 吗), or a Chinese request word anywhere (请, 介绍).  None: this
        language has no such lists, so its words say nothing either way."""
        if not self._reads_asking:
            return None
        lowered = text.lower()
        if (self._holds_question_word(text) or self.ends_with_end_word(text)
                or any(w in text for w in self._requests_cjk)
                or any(re.search(f"{re.escape(p)}(?=[\\s{re.escape(_BOUNDARY)}]|$)", lowered)
                       for p in self._particles)):
            return True
        for clause in _CLAUSES.split(lowered):
            said = [w.strip("\"'“”‘’") for w in clause.split()]
            while said and said[0] in self._lead_ins:
                said.pop(0)  # "so, um, why…": the question opens after them
            head = " ".join(said)
            if any(head == o or head.startswith(o + " ") for o in self._openers):
                return True
        return False

    def learned_pause_ms(self) -> float | None:
        """The longest of the interviewer's latest pauses inside a question, if learnt."""
        return max(self._pauses) if self._cfg.learn_pauses and self._pauses else None

    @property
    def expecting_words(self) -> bool:
        """See :meth:`expect_words`."""
        return self._expect_words

    def ends_with_end_word(self, text: str) -> bool:
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
            if not head or is_cjk(word[0]):
                return True
            if not head[-1].isspace() and head[-1] not in _BOUNDARY:
                continue  # inside a longer word: "outright"
            after_boundary = head.rstrip()[-1:] in _BOUNDARY
            if " " in word or after_boundary or (tag.endswith("?") and lowered.endswith("?")):
                return True
        return False

    def question_like(self, text: str) -> bool:
        """Ends in "?", a tag or a final particle, or is a closed wh-question."""
        return (text.rstrip().endswith(("?", "？")) or self.ends_with_end_word(text)
                or self._ends_with(text, self._particles) or self._closed_wh_question(text))

    def _closed_wh_question(self, text: str) -> bool:
        """A sentence the recogniser closed ("。", "！") whose last sentence holds a
        question word (什么, 怎么…): a question however it is punctuated.

        A Mandarin wh-question needs no rising pitch (the word makes it one), so
        Whisper's choice of "？" or "。" for it is a coin toss over intonation that is not
        there ("进程和线程有什么区别。"); the words say it asks, the full stop says it
        ended, as much as a "？" would."""
        stripped = text.rstrip()
        if not stripped or stripped[-1] not in SENTENCE_FINAL:
            return False
        return self._holds_question_word(_SENTENCE_SPLIT.split(stripped[:-1])[-1])

    def _holds_question_word(self, text: str) -> bool:
        return any(w in text.lower() for w in self._question_words)

    def trails_off(self, text: str) -> bool:
        """Ends in and/so/um/然后… with no full stop after it: a thinking pause.  An
        ellipsis is the recogniser's mark of a sentence left hanging, not a full stop
        ("…design the rate limit or...")."""
        stripped = text.strip()
        if stripped.endswith(("...", "…")):
            stripped = stripped.rstrip(".…").rstrip()
        if not stripped or stripped[-1] in SENTENCE_FINAL:
            return False  # a finished sentence is no thinking pause
        return self._ends_with(stripped, self._thinking)

    def announces_more(self, text: str) -> bool:
        """Ends in a marker of more to come ("What is TCP? Actually.", "…吗？另外"): a
        thinking pause, whatever the recogniser's full stop says; not when a "?" closes the
        marker ("…, actually?" asks).  A one-word marker follows a clause boundary or
        opens the text ("How well?" is no marker); a longer one, or a Chinese one, may
        follow anything."""
        stripped = text.strip()
        if not stripped or stripped.endswith(("?", "？")):
            return False
        bare = _TRAILING_PUNCT.sub("", stripped.lower())
        for marker in self._more:
            if not bare.endswith(marker):
                continue
            head = bare[: len(bare) - len(marker)]
            if is_cjk(marker[0]) or not head:
                return True
            if not head[-1].isspace() and head[-1] not in _BOUNDARY:
                continue  # inside a longer word: "farewell"
            if " " in marker or head.rstrip()[-1:] in _BOUNDARY:
                return True
        return False

    def lacks_its_verb(self, text: str) -> bool:
        """Ends in words whose verb is still to come ("你为什么？", "你是怎么"), whatever
        punctuation the recogniser closed them with (``verb_pending``)."""
        return self._ends_with(text, self._verb_pending)

    def key(self, text: str) -> tuple[str, ...]:
        """Guesses are deduplicated by the one "same question" rule."""
        return question_key(text, self._fillers, self._tags)

    @staticmethod
    def _ends_with(text: str, words: list[str]) -> bool:
        """Does the text end in one of ``words``, punctuation aside?  A Chinese word may
        follow anything (no spaces between words); any other must be whole words."""
        said = _TRAILING_PUNCT.sub("", text.strip().lower().rstrip("?？ ")).split()
        if not said:
            return False
        joined = "".join(said)
        return any(joined.endswith(w) if is_cjk(w[0]) else said[-len(w.split()):] == w.split()
                   for w in words if w)


_BOUNDARY = ",.?!;:，。？！；："
_CLAUSES = re.compile(r"[,.?!;:…，。？！；：、]+")
_SENTENCE_SPLIT = re.compile(f"[{re.escape(SENTENCE_FINAL)}]")


class SignalsPolicy:
    """The product's policy: :func:`app.turns.policy.decide` sets the waits from the text
    and the end-of-turn signals; a current partial is guessed when its wait is up, the
    newest one at the pause when its words are called finished and no pass that will hear
    the pause is coming."""

    def decide(self, ep: Endpointer, turn: OpenTurn, silence: float) -> list[Decision]:
        wait = self.wait(ep, turn)
        decisions: list[Decision] = []
        # a partial not yet current is guessed ahead only when no pass that will hear the
        # pause is coming (given up, no words, not the last voice)
        due = wait.speculate_ms if turn.heard_all else wait.ahead_ms if not ep.pass_coming else None
        if turn.text and due is not None and silence * 1000 >= due:
            reason: SpeculateReason = (
                "end_word" if ep.ends_with_end_word(turn.text)
                else "question" if wait.verdict == "complete" or ep.question_like(turn.text)
                else "silence")
            decisions.append(Speculate(turn.id, turn.text, reason))
        if turn.text and silence * 1000 >= wait.endpoint_ms:
            reason_e: EndpointReason = "question" if wait.verdict == "complete" else "silence"
            decisions.append(Endpoint(turn.id, reason_e, round(silence, 4)))
        return decisions

    def wait(self, ep: Endpointer, turn: OpenTurn) -> Wait:
        # words heard before the voice stopped are not judged while a pass that will hear
        # it all is coming: a verdict on them would end the turn on words it may not have
        waiting = ep.pass_coming and not turn.heard_all
        scored = turn.words_key == ep.key(turn.text) and not waiting
        words = turn.words_logp if scored else None
        sound = turn.sound_p if turn.reaches_voice_end(turn.sound_audio_end) else None
        pending = ep.expecting_words and not scored
        confirmed = ep.holds_guesses and turn.guess_confirmed
        return decide(ep.config, ep.cues(turn),
                      Evidence(words, sound, words_pending=pending, guess_confirmed=confirmed),
                      ep.learned_pause_ms())
