"""The listening half of a session: one audio source → VAD → streaming ASR → end of turn.

The stages do not know each other: this module feeds each one what it needs and turns
their results into events.  Threads:

- the audio source's thread runs the VAD and the endpoint ticks (microseconds a frame),
  and is the only thread that touches the VAD's state;
- the ASR worker decodes and hands partials to the end-of-turn decision;
- the session's own thread calls :meth:`Listener.answer_now` (the window's and the
  command line's calls reach it as commands).

Decisions are made under one lock; the events they produce are emitted after it is
released, so a slow consumer never holds up audio capture or decoding.

Design notes: decision 0039.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from app.asr.decoder import WhisperDecoder
from app.asr.streaming import StreamingRecognizer, Voice
from app.asr.worker import DecodeWorker
from app.audio.echo import UTTERANCE_ECHO_SHARE, EchoGate
from app.audio.frames import AudioFrame, AudioSource, reached
from app.audio.level import LevelMeter
from app.core.clock import Deadline, SessionClock
from app.core.config import Settings
from app.core.events import (
    EndpointEvent,
    ErrorEvent,
    Event,
    EventBus,
    FinalEvent,
    LanguageEvent,
    PartialEvent,
    ResumedEvent,
    Speaker,
    SpeculateEvent,
    StatusEvent,
    VadEvent,
)
from app.turns.endpointer import Decision, Discard, Endpoint, Endpointer, Speculate, TurnPolicy
from app.turns.signals import SignalRequest, SignalResult, SignalWorker, TurnSignals
from app.turns.sound import TAIL_S as SOUND_TAIL_S
from app.turns.sound import WINDOW_S as SOUND_WINDOW_S
from app.vad.detector import VadStep, VoiceDetector

AUDIO_ERROR = "audio"
_KEPT_TURN_STARTS = 8
"""A final arrives at most a couple of turns after its own began."""


class ListenerHooks(Protocol):
    """How a listener reports to the session that owns it (the session implements this).

    Each hook names the thread it is called on; all are called without the listener's
    lock held, except :meth:`next_turn` (a counter).  ``speaker`` says which listener calls.
    """

    def next_turn(self) -> int:
        """A new turn id, unique in the session across Stop/Start and both voices
        (audio thread, under the listener's lock)."""

    @property
    def scores_turns(self) -> bool:
        """The owner has end-of-turn models (:meth:`turn_signals`) to load for an
        interviewer's listener."""

    def turn_signals(self) -> TurnSignals:
        """Load the end-of-turn models (once per session: the owner caches), on the
        listener's ``turn-signals`` thread, so seconds of loading never hold up listening."""

    def frame_heard(self, speaker: Speaker, frame: AudioFrame) -> None:
        """Every frame, as captured (audio thread): the echo gate's reference."""

    def speech_started(self, speaker: Speaker, t: float) -> None:
        """This speaker started talking at audio time ``t`` (audio thread)."""

    def source_failed(self, speaker: Speaker, message: str) -> None:
        """The audio source is lost (audio thread), after the error event was emitted."""


@dataclass(frozen=True, slots=True)
class ListenerOptions:
    """Whose voice this listener hears, and how it ends turns."""

    speaker: Speaker = "interviewer"
    policy: TurnPolicy | None = None
    """The endpointer's decisions: the product's
    (:class:`~app.turns.endpointer.SignalsPolicy`) unless a benchmark gives a peer's."""
    echo: EchoGate | None = None
    """Judges this (candidate's) microphone's frames: echo of the interviewer is dropped."""

    @property
    def asks(self) -> bool:
        """Only the interviewer asks: the candidate's turns make no guesses, endpoints,
        continuations or speech events, only captions (partials and finals)."""
        return self.speaker == "interviewer"


_OPTIONS = ListenerOptions()


class Listener:
    """One speaker's listening half; implements :class:`RecognitionHooks` for its recogniser."""

    def __init__(self, source: AudioSource, decoder: WhisperDecoder, settings: Settings,
                 bus: EventBus, clock: SessionClock, hooks: ListenerHooks,
                 options: ListenerOptions = _OPTIONS, *, worker: DecodeWorker | None = None) -> None:
        """``hooks``: the owner this listener reports to; ``worker``: the session's shared
        decoding thread."""
        self._source = source
        self._bus = bus
        self._clock = clock
        self._settings = settings
        self._hooks = hooks
        self._options = options
        self._echo = echo = options.echo
        self._began: dict[int, float] = {}
        """Audio time each of the latest turns began (echo is judged from there)."""
        turns = settings.turns
        self._vad = VoiceDetector(settings.vad)
        self._endpointer = Endpointer(turns, settings.asr.language, turns.all_words("fillers"),
                                      policy=options.policy, questions=options.asks)
        self._endpointer.guesses_held(settings.answer.low_latency)
        vad = settings.vad  # only the interviewer's words are guessed: a pass for the guess is theirs
        pauses = vad if options.asks else vad.model_copy(update={"guess_hangover_ms": vad.hangover_ms})
        voice = Voice(options.speaker, captions=echo is None,
                      recheck=self._endpointer.trails_off if options.asks else None)
        self._recognizer = StreamingRecognizer(decoder, settings.asr, clock, self, pauses=pauses,
                                               voice=voice, worker=worker)
        self._meter = LevelMeter(clock, speaker=options.speaker)
        scored = options.asks and hooks.scores_turns
        self._signals = SignalWorker(hooks.turn_signals, self._on_signals,
                                     self._on_signals_ready) if scored else None
        self._scoring = self._signals is not None
        """Partials go to the end-of-turn models (off once the language is one they do not know)."""
        self._words_languages = set(turns.words_languages)
        self._sound = False
        """Smart Turn is loaded: a pause's audio is scored too."""
        self._sound_voiced_end = -1.0
        """The last voiced frame's end when Smart Turn last read a pause (once a pause)."""
        self._lock = threading.Lock()
        # the frames a continuation reopens with, and the audio Smart Turn reads at a pause
        self._recent: collections.deque[AudioFrame] = collections.deque(
            maxlen=int(max(self._endpointer.continuation_s + 1.0, SOUND_WINDOW_S) * 1000 / 30) + 1)
        self._audio_now = 0.0
        self._running = False

    # --- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        self._running = True
        if self._signals is not None:
            self._signals.start()
        self._recognizer.start()
        self._source.start(self._on_frame, self._on_source_error, self._on_source_warning)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop capture, recognition and scoring together, and wait for them ``timeout`` s
        in all: each is asked first, so a pass or a score still running overlaps the
        device's close instead of queueing behind it."""
        self._running = False
        deadline = Deadline(timeout)
        self._source.stop(0)
        if self._signals is not None:
            self._signals.stop(0)
        self._recognizer.stop(deadline.left())
        if self._signals is not None:
            self._signals.stop(deadline.left())
        self._source.stop(deadline.left())

    def finish(self, timeout: float = 60.0) -> bool:
        """After a file has played: end the open turn and wait until its final is out."""
        if not self._source.wait(timeout):
            return False
        self._decide(lambda: self._end_of_audio())
        deadline = time.monotonic() + timeout
        while not self._recognizer.idle() and time.monotonic() < deadline:
            time.sleep(0.01)
        return True

    def set_low_latency(self, on: bool) -> None:
        """Low-latency mode turned on or off: only with it is a guess's answer held ready,
        which lets an unsure turn that every pass confirms end sooner (decision 0032)."""
        with self._lock:
            self._endpointer.guesses_held(on)

    def answer_now(self) -> None:
        self._decide(lambda: self._endpointer.force(self._audio_now))

    def other_spoke(self, t: float) -> None:
        """The candidate started talking at ``t``: after that, this speaker's next words
        are a new question, whatever the pause."""
        with self._lock:
            self._endpointer.other_spoke(t)

    @property
    def overflows(self) -> int:
        """Audio blocks the source lost (a device that could not keep up)."""
        return self._source.overflows

    @property
    def passes(self) -> int:
        return self._recognizer.passes

    @property
    def decode_seconds(self) -> float:
        return self._recognizer.decode_seconds

    # --- audio thread ----------------------------------------------------------------

    def _on_frame(self, frame: AudioFrame) -> None:
        if not self._running:
            return
        level = self._meter.feed(frame)
        if level is not None:
            self._bus.emit(level)
        self._hooks.frame_heard(self._options.speaker, frame)
        if self._echo is not None:
            self._echo.decide(frame)
        step = self._vad.process(frame)  # the VAD's state changes here only, on this thread
        events: list[Event] = []
        with self._lock:
            self._audio_now = frame.end
            self._recent.append(frame)
            if step.onset:
                events += self._speech_started(step.onset)
            elif self._vad.in_speech and (turn := self._endpointer.turn) is not None:
                self._recognizer.add(frame, step.voiced)
                if step.voiced:
                    self._endpointer.voiced(frame.end)
                if step.paused and self._echoed(turn, frame.t):
                    events += self._apply(self._endpointer.discard())  # the interviewer, heard again
                else:
                    events += self._advance(frame, step)
        self._emit(events)
        if step.onset:
            self._hooks.speech_started(self._options.speaker, step.onset[0].t)

    def _advance(self, frame: AudioFrame, step: VadStep) -> list[Event]:
        """A frame inside the turn: pauses, the end-of-turn tick, the forced endpoint."""
        events: list[Event] = []
        if step.paused:
            self._recognizer.pause()
            events.append(VadEvent(t=self._clock.now(), speech=False))
        elif step.resumed:
            events.append(VadEvent(t=self._clock.now(), speech=True))
        if not step.voiced:
            self._score_sound(frame.end)
        self._endpointer.expect_pass(not self._recognizer.idle())
        decisions = self._endpointer.tick(frame.end)
        if not decisions and self._recognizer.duration() >= self._settings.asr.max_utterance_s:
            decisions = self._endpointer.force(frame.end)
        return events + self._apply(decisions)

    def _score_sound(self, now: float) -> None:
        """Smart Turn reads the utterance once a pause has lasted ``SOUND_TAIL_S`` (lock
        held): the silence it was made to judge.  With the newest partial's words (mostly a
        cache hit); the verdict counts while no newer voice came (``Endpointer.end_of_turn_scores``)."""
        voiced_end = self._vad.last_voiced_end
        turn = self._endpointer.turn
        if (not self._sound or not self._scoring or self._signals is None or turn is None
                or not self._endpointer.text or voiced_end <= self._sound_voiced_end
                or not reached(now - voiced_end, SOUND_TAIL_S)):
            return
        self._sound_voiced_end = voiced_end
        audio = self._utterance_audio(turn, now)
        self._signals.submit(SignalRequest(turn, self._endpointer.text, now, audio))

    def _utterance_audio(self, turn: int, until: float) -> npt.NDArray[np.int16] | None:
        """The turn's last ``SOUND_WINDOW_S`` of audio up to ``until`` (lock held), as
        Smart Turn reads it; None when none of it is kept."""
        began = max(self._began.get(turn, until), until - SOUND_WINDOW_S)
        kept = [f.samples for f in self._recent if reached(f.t, began) and reached(until, f.end)]
        return np.concatenate(kept) if kept else None

    def _speech_started(self, onset: list[AudioFrame]) -> list[Event]:
        """A new voiced run: a new turn, or the continuation of the one just ended (the
        endpointer's call)."""
        now = self._clock.now()
        speech_start = onset[-1].end
        events: list[Event] = [VadEvent(t=now, speech=True)]
        # The onset is reported once min_speech of voiced frames were heard: speech began then.
        went_on = self._endpointer.continues(speech_start - self._settings.vad.min_speech_ms / 1000)
        if went_on is not None:
            turn = went_on.turn
            self._recognizer.resume(turn, list(self._recent))
            events.append(ResumedEvent(t=now, turn=turn, pause=round(went_on.pause, 4)))
        else:
            turn = self._hooks.next_turn()
            self._recognizer.begin(turn, onset)
            self._began[turn] = onset[0].t
            while len(self._began) > _KEPT_TURN_STARTS:
                del self._began[next(iter(self._began))]
        self._endpointer.speech_started(turn, speech_start)
        return events

    def _on_source_error(self, message: str) -> None:
        self._bus.emit(ErrorEvent(t=self._clock.now(), stage=AUDIO_ERROR, message=message))
        self._hooks.source_failed(self._options.speaker, message)

    def _on_source_warning(self, message: str) -> None:
        """Shown like an error (a banner, the CLI's stderr), but the run goes on."""
        self._bus.emit(ErrorEvent(t=self._clock.now(), stage=AUDIO_ERROR, message=message))

    # --- ASR worker thread: RecognitionHooks ---------------------------------------------

    def on_partial(self, partial: PartialEvent) -> None:
        if self._echo is None:
            self._bus.emit(partial)
        text = partial.hypothesis or partial.text
        with self._lock:
            events = self._apply(self._endpointer.partial(partial.turn, text, partial.stable,
                                                          partial.audio_end, self._audio_now))
            current = self._endpointer.current(partial.turn, partial.audio_end)
            if self._scoring and self._signals and partial.turn == self._endpointer.turn:
                # the guess waits for the verdict on words that heard all the voice: it may
                # borrow the recogniser's idle core (decision 0029)
                lend = current and self._signals.ready.is_set()
                self._signals.submit(SignalRequest(partial.turn, text, partial.audio_end, spare_core=lend))
        self._emit(events)

    def on_no_words(self, turn: int, audio_end: float) -> None:
        with self._lock:
            self._endpointer.no_words(turn, audio_end)

    # --- end-of-turn signals thread ----------------------------------------------------

    def _on_signals_ready(self, signals: TurnSignals) -> None:
        self._bus.emit(StatusEvent(t=self._clock.now(), stage="turns", message=signals.status))
        with self._lock:
            self._endpointer.expect_words(signals.words is not None and self._scoring)
            self._sound = signals.sound is not None

    def _on_signals(self, result: SignalResult) -> None:
        self._decide(lambda: self._endpointer.end_of_turn_scores(
            result.turn, result.text, result.audio_end, self._audio_now,
            words_logp=result.words_logp, sound_p=result.sound_p))

    def on_final(self, final: FinalEvent) -> None:
        self._emit([final])

    def on_error(self, event: ErrorEvent) -> None:
        self._bus.emit(event)

    def on_language(self, event: LanguageEvent) -> None:
        """An ``auto`` session settled its language: end words and particles follow it."""
        with self._lock:
            self._language_settled(event)
        self._bus.emit(event)

    def _language_settled(self, event: LanguageEvent) -> None:
        """(Lock held.)  A language the words model was not checked on stops its scoring."""
        self._endpointer.set_language(event.language)
        if event.language not in self._words_languages:
            self._scoring = False
            self._endpointer.expect_words(False)

    # --- decisions ----------------------------------------------------------------------

    def _decide(self, decide: Callable[[], list[Decision]]) -> None:
        with self._lock:
            events = self._apply(decide())
        self._emit(events)

    def _end_of_audio(self) -> list[Decision]:
        return [Endpoint(d.turn, "end_of_audio", d.silence) if isinstance(d, Endpoint) else d
                for d in self._endpointer.force(self._audio_now)]

    def _apply(self, decisions: list[Decision]) -> list[Event]:
        """Act on the endpointer's decisions (lock held); returns the events to emit."""
        events: list[Event] = []
        for decision in decisions:
            now = self._clock.now()
            if isinstance(decision, Speculate):
                events.append(SpeculateEvent(t=now, turn=decision.turn, text=decision.text,
                                             reason=decision.reason))
            elif isinstance(decision, Discard):  # speech with no words (a noise burst): forget it
                self._vad.request_end()  # applied by the audio thread on its next frame
                self._recognizer.discard(decision.turn)
            else:
                events.append(EndpointEvent(t=now, turn=decision.turn, reason=decision.reason,
                                            silence=decision.silence))
                self._vad.request_end()
                for said in self._recognizer.finalize(decision.turn):
                    if isinstance(said, LanguageEvent):
                        self._language_settled(said)
                    events.append(said)
        return events

    def _emit(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, FinalEvent) and self._echoed(event.turn, event.audio_end):
                continue
            if self._options.asks or isinstance(event, PartialEvent | FinalEvent | LanguageEvent):
                self._bus.emit(event)

    def _echoed(self, turn: int, until: float) -> bool:
        """Was this utterance (so far) mostly the interviewer heard through the speakers?

        Asked at each pause, so an echo is dropped before it is decoded and the candidate's
        own words after it start an utterance of their own, and again of the final."""
        if self._echo is None:
            return False
        began = self._began.get(turn, until)
        return self._echo.echo_share(began, until) >= UTTERANCE_ECHO_SHARE
