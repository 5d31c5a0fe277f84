"""The pass schedule of one utterance on its own: frames, pauses and pass results driven by
a fake audio clock (30 ms frames timed from sample counts, as a source's are), asserting
the phase each step leaves and which pass is due.  Decisions 0022, 0027, 0033, 0054."""

from __future__ import annotations

import pytest

import numpy as np

from app.asr.schedule import Heard, Pass, PassSchedule, PassTiming, Phase
from app.audio.frames import FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE, TIME_TOLERANCE_S, AudioFrame, beyond, reached

FRAME_S = FRAME_MS / 1000
TIMING = PassTiming(hangover=0.09, guess_hangover=0.03, partial_interval=0.3)
"""The product's defaults: the guess's pass at the first silent frame, the hangover's 90 ms
in, a caption every 300 ms of voice."""


_SILENT = np.zeros(FRAME_SAMPLES, dtype=np.int16)


class _Talk:
    """A fake audio clock and the recogniser's side of the schedule: each frame moves the
    clock one frame (an :class:`AudioFrame`'s end, so times carry the sources' rounding)
    and hands the schedule what the recogniser would."""

    def __init__(self, timing: PassTiming = TIMING, onset_frames: int = 5, start_frame: int = 337) -> None:
        self.position = start_frame * FRAME_SAMPLES
        self.start = self.position / SAMPLE_RATE
        self.now = self.start
        for _ in range(onset_frames):
            self._tick()
        self.passes = PassSchedule(self.start, self.now, timing)
        self.woken = 0

    def _tick(self) -> None:
        self.now = AudioFrame(t=self.position / SAMPLE_RATE, samples=_SILENT).end
        self.position += FRAME_SAMPLES

    def skip(self, frames: int) -> None:
        """Frames the schedule is not told of (its turn is over)."""
        for _ in range(frames):
            self._tick()

    def voice(self, frames: int) -> None:
        for _ in range(frames):
            self._tick()
            self.woken += self.passes.voiced(self.now)

    def silence(self, frames: int, *, pause: bool = True) -> None:
        """Unvoiced frames; the first is where the VAD says "paused" (unless ``pause`` is
        False: an unvoiced frame it does not call a pause)."""
        for i in range(frames):
            self._tick()
            self.woken += self.passes.unvoiced(self.now)
            if i == 0 and pause:
                self.woken += self.passes.pause(self.now)

    def run(self, *, words: bool = True) -> float:
        """The worker takes the wanted pass now and it decodes (with words, or none)."""
        assert self.passes.wanted is not None, "no pass was due"
        until = self.passes.take(self.now)
        if words:
            self.passes.decoded(until)
        return until


def test_the_tolerance_treats_one_instant_reached_two_ways_as_one() -> None:
    summed = 0.0
    for _ in range(10):
        summed += FRAME_S
    assert summed != 0.3  # the rounding the helpers exist for
    assert reached(summed, 0.3) and reached(0.3, summed)
    assert not beyond(summed, 0.3) and not beyond(0.3, summed)
    assert not reached(0.3 - 2 * TIME_TOLERANCE_S, 0.3)
    assert beyond(0.3 + 2 * TIME_TOLERANCE_S, 0.3)


def test_without_captions_no_partial_is_due_until_the_pause() -> None:
    talk = _Talk(PassTiming(hangover=0.09, guess_hangover=0.03))
    talk.voice(100)
    assert talk.passes.wanted is None and talk.woken == 0
    talk.silence(1)
    assert talk.passes.wanted is Pass.PAUSE


def test_a_pause_asks_the_guess_pass_at_its_first_silent_frame_then_the_hangover_pass() -> None:
    talk = _Talk()
    talk.voice(3)
    voiced_end = talk.now
    talk.silence(1)
    assert talk.passes.phase is Phase.AWAITING_HANGOVER_PASS
    assert talk.passes.wanted is Pass.PAUSE
    until = talk.run()
    assert reached(until, voiced_end + 0.03) and talk.passes.hears_pause(until)
    talk.silence(1, pause=False)
    assert talk.passes.wanted is None  # 60 ms in: the hangover is not
    talk.silence(1, pause=False)
    assert talk.passes.phase is Phase.PAUSED and talk.passes.wanted is Pass.PAUSE
    assert reached(talk.passes.take(talk.now), voiced_end + 0.09)
    talk.silence(20, pause=False)
    assert talk.passes.phase is Phase.PAUSED and talk.passes.wanted is None


def test_a_guess_hangover_as_long_as_the_hangover_is_one_pass() -> None:
    talk = _Talk(PassTiming(hangover=0.09, guess_hangover=0.09, partial_interval=0.3))
    talk.voice(3)
    talk.silence(1)
    assert talk.passes.phase is Phase.AWAITING_HANGOVER_PASS and talk.passes.wanted is None
    talk.silence(2, pause=False)
    assert talk.passes.phase is Phase.PAUSED and talk.passes.wanted is Pass.PAUSE
    assert talk.woken == 1


def test_a_pause_pass_waiting_for_the_worker_is_not_made_a_partial() -> None:
    """A caption asked for while the pause's pass waits keeps it a pause's pass: never spaced."""
    talk = _Talk(onset_frames=1)
    talk.voice(4)
    talk.silence(1)
    assert talk.passes.wanted is Pass.PAUSE
    talk.voice(6)  # the voice came back and a caption fell due
    assert talk.passes.phase is Phase.SPEAKING and talk.passes.wanted is Pass.PAUSE


def test_voice_before_the_hangover_is_in_cancels_the_hangover_pass() -> None:
    talk = _Talk()
    talk.voice(3)
    talk.silence(1)
    talk.run()
    talk.voice(1)
    assert talk.passes.phase is Phase.SPEAKING and talk.passes.heard is Heard.PART
    talk.silence(2, pause=False)  # unvoiced frames the VAD calls no pause ask for nothing
    assert talk.passes.wanted is None


def test_what_the_newest_pass_heard() -> None:
    talk = _Talk(onset_frames=1)
    assert talk.passes.heard is Heard.NOTHING
    talk.voice(10)
    talk.run(words=False)
    assert talk.passes.heard is Heard.NOTHING  # a pass with no words tells nothing
    talk.voice(11)
    talk.run()
    assert talk.passes.heard is Heard.VOICE
    talk.voice(1)
    assert talk.passes.heard is Heard.PART
    talk.silence(1)
    talk.run()
    assert talk.passes.heard is Heard.VOICE_END


def test_the_guess_pass_is_moot_after_a_partial_that_heard_all_the_voice() -> None:
    """Decision 0027: it would hear the same words while the words model scores them."""
    talk = _Talk(onset_frames=1)
    talk.voice(10)
    talk.run()  # taken on the last voiced frame: it heard it all
    talk.silence(1)
    assert talk.passes.wanted is Pass.PAUSE and talk.passes.moot(talk.now)
    talk.passes.drop()
    talk.silence(2, pause=False)
    assert talk.passes.wanted is Pass.PAUSE and not talk.passes.moot(talk.now)  # the hangover is in


def test_the_hangover_pass_is_moot_after_a_pass_that_heard_the_voice_end() -> None:
    """Decision 0033: what follows is room tone; the guess's pass is the final."""
    talk = _Talk()
    talk.voice(3)
    talk.silence(1)
    guess_end = talk.run()
    talk.silence(2, pause=False)
    assert talk.passes.wanted is Pass.PAUSE and talk.passes.moot(talk.now)
    talk.passes.drop()
    assert talk.passes.finalize(talk.now) > guess_end
    assert talk.passes.phase is Phase.FINALIZED and talk.passes.finalizing
    assert talk.passes.final_heard(talk.passes.until(talk.now)) == guess_end


def test_a_pass_with_no_words_yet_is_never_moot() -> None:
    talk = _Talk()
    talk.voice(3)
    talk.silence(1)
    assert not talk.passes.moot(talk.now)


def test_a_turn_whose_newest_pass_heard_only_part_needs_a_final_pass() -> None:
    talk = _Talk(onset_frames=1)
    talk.voice(10)
    talk.run()
    talk.voice(3)
    voiced_end = talk.now
    talk.silence(10)
    talk.passes.drop()
    until = talk.passes.finalize(talk.now)
    assert reached(until, voiced_end + 0.09) and reached(voiced_end + 0.09, until)  # not the 300 ms in
    assert talk.passes.phase is Phase.FINAL_DUE and talk.passes.finalizing
    assert talk.passes.wanted is None and talk.passes.final_heard(until) is None
    talk.passes.final_ran()
    assert talk.passes.phase is Phase.FINALIZED


def test_a_turn_ended_before_its_hangover_is_in_is_finalized_up_to_the_audio_in() -> None:
    talk = _Talk()
    talk.voice(3)
    talk.silence(1)
    until = talk.run()
    assert talk.passes.finalize(talk.now) == pytest.approx(until)
    assert talk.passes.phase is Phase.FINALIZED


def test_a_pause_after_a_pass_that_heard_through_the_hangover_asks_nothing() -> None:
    talk = _Talk()
    talk.voice(3)
    talk.silence(3)
    talk.run()  # taken once the hangover was in: it heard through it
    talk.passes.pause(talk.now)  # told again: no pass is due
    assert talk.passes.phase is Phase.PAUSED and talk.passes.wanted is None


def test_a_continuation_reopens_the_finalized_utterance_as_speaking() -> None:
    talk = _Talk()
    talk.voice(3)
    talk.silence(1)
    talk.run()
    talk.passes.finalize(talk.now)
    assert talk.passes.finalizing
    talk.skip(16)
    talk.passes.resume(talk.now)
    assert talk.passes.phase is Phase.SPEAKING and not talk.passes.finalizing
    assert talk.passes.heard is Heard.PART  # the new voice is not heard yet: a final pass is due
    assert talk.passes.final_heard(talk.passes.until(talk.now)) is None
    talk.silence(1)
    assert talk.passes.wanted is Pass.PAUSE


def test_a_guess_hangover_of_two_frames_waits_for_its_audio() -> None:
    talk = _Talk(PassTiming(hangover=0.09, guess_hangover=0.06))
    talk.voice(3)
    talk.silence(1)
    assert talk.passes.phase is Phase.AWAITING_GUESS_PASS and talk.passes.wanted is None
    talk.silence(1, pause=False)
    assert talk.passes.phase is Phase.AWAITING_HANGOVER_PASS and talk.passes.wanted is Pass.PAUSE
    talk.run()
    talk.silence(1, pause=False)
    assert talk.passes.phase is Phase.PAUSED and talk.passes.wanted is Pass.PAUSE


def test_a_turn_with_no_words_heard_needs_a_final_pass() -> None:
    talk = _Talk()
    talk.voice(3)
    talk.passes.finalize(talk.now)
    assert talk.passes.phase is Phase.FINAL_DUE


@pytest.mark.parametrize("start_frame", range(0, 60))
def test_a_caption_is_due_after_exactly_the_interval_of_voice_wherever_the_utterance_starts(
        start_frame: int) -> None:
    """300 ms of voice is ten frames, not ten or eleven as the rounding of the frames'
    times falls (the cadence's comparison takes the one tolerance too)."""
    talk = _Talk(onset_frames=1, start_frame=start_frame)
    talk.voice(8)
    assert talk.passes.wanted is None
    talk.voice(1)  # 10 frames since the utterance's first sample
    assert talk.passes.wanted is Pass.PARTIAL
    talk.run()
    talk.voice(9)
    assert talk.passes.wanted is None
    talk.voice(1)
    assert talk.passes.wanted is Pass.PARTIAL
