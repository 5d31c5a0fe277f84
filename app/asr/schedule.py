"""The passes of one utterance: which pass is due, what the newest one heard, its final.

While the voice goes on a partial is due on the captions' cadence.  At the VAD's pause the
guess's pass is due once the pause's first silent audio is in, and the hangover's pass once
the hangover is in, unless a pass already heard through it; a pass that heard the voice end
is the final, and the room tone after it is not decoded again (decision 0033).  The
recogniser asks this object under its worker's lock and runs what it says; nothing here
reads a clock (times are the audio clock's, handed in).  States and transitions: decision
0054.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from app.audio.frames import beyond, reached


class Phase(enum.Enum):
    """Where the utterance is in its passes."""

    SPEAKING = "speaking"
    """Voice since the last pause: partials on the captions' cadence."""
    AWAITING_GUESS_PASS = "awaiting the guess pass"
    """Paused: the guess's pass waits for the pause's first silent audio."""
    AWAITING_HANGOVER_PASS = "awaiting the hangover pass"
    """Paused: the hangover's pass waits for the hangover's audio (the guess's is asked)."""
    PAUSED = "paused"
    """The pause's passes are asked, or none was needed: nothing is due until voice."""
    FINAL_DUE = "final due"
    """The turn is over and a final pass must decode it (queued or running)."""
    FINALIZED = "finalized"
    """The turn is over and its final is out (or the newest pass was reused as it)."""


class Pass(enum.Enum):
    """A pass the recogniser is asked to run over the newest audio."""

    PARTIAL = "partial"
    """A caption while the voice goes on: it waits out the worker's spacing."""
    PAUSE = "pause"
    """It hears the pause (the guess's or the hangover's): never spaced; a partial still
    decoding audio that stops before the voice did gives way to it."""


class Heard(enum.Enum):
    """What the newest pass with words heard, against the voice so far."""

    NOTHING = "no words yet"
    PART = "part of the voice"
    """It stops before the last voiced frame: voice came after it."""
    VOICE = "all the voice"
    """It reaches the last voiced frame and no further."""
    VOICE_END = "the voice end"
    """It heard every voiced frame and unvoiced audio after them: it is the final.  What
    follows is what the VAD calls unvoiced, room tone: decoding it again only lets the
    noise flip a word the voice did not ("…in Java" / "…in job"), and the guess made on
    this pass would then miss (decision 0033).  New voice moves the voice's end past it."""


@dataclass(frozen=True, slots=True)
class PassTiming:
    """How much audio each pass waits for (seconds of the audio clock)."""

    hangover: float
    """Unvoiced audio after the last voiced frame that the hangover's pass (and a final
    pass) hears."""
    guess_hangover: float
    """Unvoiced audio the guess's pass hears; no guess pass unless shorter than the hangover."""
    partial_interval: float = float("inf")
    """Audio between the ends of two partials' requests while the voice goes on (inf: none)."""

    @property
    def guess_pass(self) -> bool:
        return not reached(self.guess_hangover, self.hangover)


class PassSchedule:
    """The pass state of one utterance: a :class:`Phase`, the wanted :class:`Pass`, and the
    audio ends of its voice and of its newest pass with words."""

    def __init__(self, start: float, voiced_end: float, timing: PassTiming) -> None:
        """``start``: the utterance's first sample; ``voiced_end``: the end of its onset."""
        self._timing = timing
        self.phase = Phase.SPEAKING
        self.voiced_end = voiced_end
        """Audio end of the last voiced frame."""
        self.decoded_end: float | None = None
        """Audio end of the newest pass that heard words (None: none yet)."""
        self.wanted: Pass | None = None
        """The pass asked for and not yet taken by the worker."""
        self._requested_end = start
        """Audio end at which a pass was last asked for (the captions' cadence)."""

    # --- what it knows -----------------------------------------------------------------

    @property
    def heard_until(self) -> float:
        """Where a pause's (or the final's) pass ends: the last voiced frame plus the hangover."""
        return self.voiced_end + self._timing.hangover

    def until(self, audio_end: float) -> float:
        """The end of a pass taken now, with audio in up to ``audio_end``."""
        return min(audio_end, self.heard_until)

    @property
    def heard(self) -> Heard:
        if self.decoded_end is None:
            return Heard.NOTHING
        if beyond(self.decoded_end, self.voiced_end):
            return Heard.VOICE_END
        return Heard.VOICE if reached(self.decoded_end, self.voiced_end) else Heard.PART

    def hears_voice(self, until: float) -> bool:
        """Does a pass over the audio up to ``until`` hear every voiced frame so far?"""
        return reached(until, self.voiced_end)

    def hears_pause(self, until: float) -> bool:
        """Does a pass up to ``until`` hear unvoiced audio after the last voiced frame?"""
        return beyond(until, self.voiced_end)

    @property
    def finalizing(self) -> bool:
        """The turn is over (its final due or out): no partial of it is shown any more."""
        return self.phase in (Phase.FINAL_DUE, Phase.FINALIZED)

    def moot(self, audio_end: float) -> bool:
        """Would the pass wanted now add only silence?  Yes when the newest pass heard all
        the voice and the hangover is not in yet (the guess's pass after a partial that
        heard it all), or it heard the voice end: that one is the final."""
        heard = self.heard
        return heard in (Heard.VOICE, Heard.VOICE_END) and (
            not reached(audio_end, self.heard_until) or heard is Heard.VOICE_END)

    def final_heard(self, until: float) -> float | None:
        """Where the final of audio ending at ``until`` heard to, when the newest pass with
        words is that final (it heard up to there, or heard the voice end); None: a final
        pass must decode it."""
        decoded = self.decoded_end
        if decoded is not None and (reached(decoded, until) or self.heard is Heard.VOICE_END):
            return decoded
        return None

    # --- transitions ---------------------------------------------------------------------

    def voiced(self, end: float) -> bool:
        """A voiced frame ending at ``end``: SPEAKING.  True when a partial became due."""
        self.voiced_end = end
        self.phase = Phase.SPEAKING
        if reached(end - self._requested_end, self._timing.partial_interval):
            return self._want(end, Pass.PARTIAL)
        return False

    def unvoiced(self, audio_end: float) -> bool:
        """Unvoiced audio in up to ``audio_end``: the pause's passes whose audio is in are
        due.  True when one became due."""
        due = False
        if self.phase is Phase.AWAITING_GUESS_PASS and reached(
                audio_end, self.voiced_end + self._timing.guess_hangover):
            self.phase = Phase.AWAITING_HANGOVER_PASS
            due = self._want(audio_end, Pass.PAUSE)
        if (self.phase in (Phase.AWAITING_GUESS_PASS, Phase.AWAITING_HANGOVER_PASS)
                and reached(audio_end, self.heard_until)):
            self.phase = Phase.PAUSED
            due = self._want(audio_end, Pass.PAUSE)
        return due

    def pause(self, audio_end: float) -> bool:
        """The VAD heard the voice stop: unless a pass already heard through the hangover,
        the guess's pass (if any) and the hangover's are awaited.  True when one is due."""
        if self.decoded_end is not None and reached(self.decoded_end, self.heard_until):
            if self.phase is Phase.SPEAKING:
                self.phase = Phase.PAUSED
            return False
        self.phase = Phase.AWAITING_GUESS_PASS if self._timing.guess_pass else Phase.AWAITING_HANGOVER_PASS
        return self.unvoiced(audio_end)

    def decoded(self, until: float) -> None:
        """A pass over the audio up to ``until`` heard words."""
        self.decoded_end = until

    def take(self, audio_end: float) -> float:
        """The worker starts the wanted pass: the end of the audio it decodes."""
        self.wanted = None
        return self.until(audio_end)

    def drop(self) -> None:
        """The wanted pass is not run (moot, or a final took the worker)."""
        self.wanted = None

    def finalize(self, audio_end: float) -> float:
        """The turn is over: FINALIZED when the newest pass is its final, else FINAL_DUE.
        Returns the end of the audio the final is of."""
        self.wanted = None
        until = self.until(audio_end)
        self.phase = Phase.FINAL_DUE if self.final_heard(until) is None else Phase.FINALIZED
        return until

    def final_ran(self) -> None:
        """The final pass finished (its final said, unless it heard no words)."""
        if self.phase is Phase.FINAL_DUE:
            self.phase = Phase.FINALIZED

    def resume(self, voiced_end: float) -> None:
        """The speaker went on after the endpoint: voice again up to ``voiced_end``."""
        self.voiced_end = voiced_end
        self.phase = Phase.SPEAKING

    def _want(self, at: float, kind: Pass) -> bool:
        """Ask for a pass over the audio up to ``at``; a pause's pass is not made a partial
        by a partial asked for while it waits for the worker."""
        self._requested_end = at
        if self.wanted is not Pass.PAUSE:
            self.wanted = kind
        return True
