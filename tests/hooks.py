"""Owners for a listener or a recogniser run on their own in tests (the session is the
owner in the app): the hooks protocols implemented with a turn counter and lists."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from app.audio.frames import AudioFrame
from app.core.events import ErrorEvent, FinalEvent, LanguageEvent, PartialEvent, Speaker
from app.turns.signals import TurnSignals


@dataclass
class StandaloneHooks:
    """Implements :class:`app.session.listener.ListenerHooks`: turns counted from 1, the end-of-turn
    models from ``load`` (None: no scoring)."""

    load: Callable[[], TurnSignals] | None = None
    _turns: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def next_turn(self) -> int:
        return next(self._turns)

    @property
    def scores_turns(self) -> bool:
        return self.load is not None

    def turn_signals(self) -> TurnSignals:
        assert self.load is not None
        return self.load()

    def frame_heard(self, speaker: Speaker, frame: AudioFrame) -> None:
        pass

    def speech_started(self, speaker: Speaker, t: float) -> None:
        pass

    def source_failed(self, speaker: Speaker, message: str) -> None:
        pass


@dataclass
class RecognitionRecorder:
    """Implements :class:`app.asr.streaming.RecognitionHooks` by calling ``each`` with
    everything the recogniser says (no-words as a (turn, audio_end) tuple)."""

    each: Callable[[object], None]
    final: Callable[[FinalEvent], None] | None = None
    """Called for finals instead of ``each``."""

    def on_partial(self, event: PartialEvent) -> None:
        self.each(event)

    def on_final(self, event: FinalEvent) -> None:
        (self.final or self.each)(event)

    def on_error(self, event: ErrorEvent) -> None:
        self.each(event)

    def on_language(self, event: LanguageEvent) -> None:
        self.each(event)

    def on_no_words(self, turn: int, audio_end: float) -> None:
        pass
