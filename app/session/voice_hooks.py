"""The session's side of its listeners: what each voice reports, and what it asks for.

One :class:`VoiceHooks` per session implements
:class:`~app.session.listener.ListenerHooks` for both listeners: turn ids unique across
Stop/Start and both voices, the end-of-turn models (loaded once), the echo gate's
reference, who spoke last, and a lost device.  It reads the voices of the current start
through ``voices`` (owned by the session thread; a reference read is safe).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from app.asr.decoder import AUTO
from app.audio.frames import AudioFrame
from app.core.config import Settings
from app.core.events import Speaker
from app.session.start_up import Voices
from app.turns.signals import TurnSignals


class VoiceHooks:
    """Implements :class:`~app.session.listener.ListenerHooks` for a session's listeners."""

    def __init__(self, settings: Settings, voices: Callable[[], Voices | None],
                 interviewer_lost: Callable[[str], None] | None) -> None:
        """``interviewer_lost``: told when the interviewer's device is gone (None: the
        session waits for it to come back)."""
        self._settings = settings
        self._voices = voices
        self._interviewer_lost = interviewer_lost
        self._turn_ids = itertools.count(1)
        self._signals: TurnSignals | None = None
        self._signals_lock = threading.Lock()

    def next_turn(self) -> int:
        """One counter for both voices and every start."""
        return next(self._turn_ids)

    @property
    def scores_turns(self) -> bool:
        return True

    def turn_signals(self) -> TurnSignals:
        """The end-of-turn models, loaded once per session (on the first listener's scoring
        thread: seconds that never hold up listening)."""
        with self._signals_lock:
            if self._signals is None:
                language = self._settings.asr.language
                spoken = "en" if language == AUTO else language  # auto: told again when settled
                self._signals = TurnSignals.load(self._settings.turns, spoken)
            return self._signals

    def frame_heard(self, speaker: Speaker, frame: AudioFrame) -> None:
        """The interviewer's frames are the echo gate's reference."""
        voices = self._voices()
        if speaker == "interviewer" and voices is not None and voices.echo is not None:
            voices.echo.feed_reference(frame)

    def speech_started(self, speaker: Speaker, t: float) -> None:
        """The candidate spoke: the interviewer's next words are a new question."""
        voices = self._voices()
        if speaker == "candidate" and voices is not None:
            voices.interviewer.other_spoke(t)

    def source_failed(self, speaker: Speaker, message: str) -> None:
        """The interviewer's device is gone (losing your microphone leaves their side going)."""
        if speaker == "interviewer" and self._interviewer_lost is not None:
            self._interviewer_lost(message)
