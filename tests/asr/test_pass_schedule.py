"""The passes of one utterance, on their own: frames, pauses and pass results driven on a
fake audio clock, the states and the pass due asserted after each (decision 0054)."""

from __future__ import annotations

import pytest

from app.asr.schedule import Heard, Pass, PassSchedule, PassTiming, Phase
from app.audio.frames import FRAME_MS, SAMPLE_RATE

FRAME = FRAME_MS / 1000
TIMING = PassTiming(hangover=0.09, guess_hangover=0.03, partial_interval=0.3)


class FrameClock:
    """The audio clock as a source keeps it: each frame's end is samples heard / rate."""

    def __init__(self, start: float = 1.0) -> None:
        self.samples = round(start * SAMPLE_RATE)

    @property
    def now(self) -> float:
        return self.samples / SAMPLE_RATE

    def frame(self) -> float:
        self.samples += round(FRAME * SAMPLE_RATE)
        return self.now


class Utterance:
    """A schedule and its clock, fed as the recogniser feeds it."""

    def __init__(self, timing: PassTiming = TIMING, onset_frames: int = 3) -> None:
        self.clock = FrameClock()
        start = self.clock.now
        for _ in range(onset_frames):
            self.clock.frame()
        self.passes = PassSchedule(start, self.clock.now, timing)

    def voice(self, frames: int = 1) -> list[bool]:
        return [self.passes.voiced(self.clock.frame()) for _ in range(frames)]

    def silence(self, frames: int = 1) -> list[bool]:
        return [self.passes.unvoiced(self.clock.frame()) for _ in range(frames)]

    def pause(self) -> bool:
        """The VAD's pause: the first unvoiced frame, then the pause it reports."""
        self.passes.unvoiced(self.clock.frame())
        return self.passes.pause(self.clock.now)

    def run(self, *, words: bool = True) -> float:
        """The worker takes the wanted pass now and it finishes (with words or none)."""
        until = self.passes.take(self.clock.now)
        if words:
            self.passes.decoded(until)
        return until


def test_while_the_voice_goes_on_a_partial_is_due_on_the_captions_cadence() -> None:
    utt = Utterance()
    assert utt.passes.phase is Phase.SPEAKING and utt.passes.wanted is None
    due = utt.voice(20)  # 0.6 s of voice after the onset's 90 ms
    assert [i for i, d in enumerate(due) if d] == [6, 16]  # 0.3 s of audio between requests
    assert utt.passes.wanted is Pass.PARTIAL


def test_no_captions_no_partials() -> None:
    utt = Utterance(PassTiming(0.09, 0.03))
    assert not any(utt.voice(100)) and utt.passes.wanted is None


def test_a_pause_asks_for_the_guess_pass_at_its_first_silent_frame_then_the_hangovers() -> None:
    utt = Utterance()
    utt.voice(2)
    voice_end = utt.passes.voiced_end
    assert utt.pause()  # the first silent frame is in: the guess's pass
    assert utt.passes.phase is Phase.AWAITING_HANGOVER_PASS and utt.passes.wanted is Pass.PAUSE
    assert utt.run(words=False) == pytest.approx(voice_end + FRAME)
    assert utt.silence() == [False]
    assert utt.passes.phase is Phase.AWAITING_HANGOVER_PASS and utt.passes.wanted is None
    assert utt.silence() == [True]  # the hangover's 90 ms are in
    assert utt.passes.phase is Phase.PAUSED and utt.passes.wanted is Pass.PAUSE
    assert utt.run() == pytest.approx(voice_end + 0.09)
    assert not any(utt.silence(10)) and utt.passes.phase is Phase.PAUSED


def test_a_guess_pass_wanted_and_not_taken_becomes_the_hangovers() -> None:
    utt = Utterance()
    utt.pause()
    utt.silence(2)
    assert utt.passes.phase is Phase.PAUSED and utt.passes.wanted is Pass.PAUSE
    assert utt.run() == pytest.approx(utt.passes.heard_until)


def test_without_a_shorter_guess_hangover_a_pause_has_one_pass() -> None:
    """The candidate's pauses: no guess, so no pass at the first silent frame."""
    utt = Utterance(PassTiming(hangover=0.09, guess_hangover=0.09))
    assert not utt.pause()
    assert utt.passes.phase is Phase.AWAITING_HANGOVER_PASS and utt.passes.wanted is None
    assert utt.silence(2) == [False, True] and utt.passes.phase is Phase.PAUSED


def test_the_guess_pass_is_waited_for_until_its_audio_is_in() -> None:
    utt = Utterance(PassTiming(hangover=0.15, guess_hangover=0.06))
    assert not utt.pause()
    assert utt.passes.phase is Phase.AWAITING_GUESS_PASS and utt.passes.wanted is None
    assert utt.silence() == [True] and utt.passes.phase is Phase.AWAITING_HANGOVER_PASS
    utt.run()
    assert utt.silence(3) == [False, False, True] and utt.passes.phase is Phase.PAUSED


def test_voice_coming_back_drops_the_pauses_passes() -> None:
    utt = Utterance(PassTiming(hangover=0.15, guess_hangover=0.06))
    utt.pause()
    assert utt.voice() == [False]
    assert utt.passes.phase is Phase.SPEAKING
    assert not any(utt.silence(10)) and utt.passes.wanted is None  # no pause was called


def test_a_pass_that_heard_through_the_hangover_leaves_the_pause_nothing_to_decode() -> None:
    utt = Utterance()
    utt.silence(3)  # unvoiced frames the VAD has not called a pause yet (a one-frame dip)
    utt.passes.decoded(utt.passes.heard_until)
    assert not utt.passes.pause(utt.clock.now)
    assert utt.passes.phase is Phase.PAUSED and utt.passes.wanted is None


def test_what_the_newest_pass_heard_follows_the_voice() -> None:
    utt = Utterance()
    assert utt.passes.heard is Heard.NOTHING
    utt.voice(10)
    utt.passes.decoded(utt.passes.voiced_end - 0.15)
    assert utt.passes.heard is Heard.PART
    utt.passes.decoded(utt.passes.voiced_end)
    assert utt.passes.heard is Heard.VOICE
    utt.pause()
    utt.run()  # the guess's pass: the first silent frame
    assert utt.passes.heard is Heard.VOICE_END
    utt.voice()
    assert utt.passes.heard is Heard.PART  # new voice, a new pass


def test_the_guess_pass_is_moot_after_a_partial_that_heard_all_the_voice() -> None:
    """Decision 0027: it would hear the same words and slow the words model down."""
    utt = Utterance()
    utt.voice(4)
    utt.passes.decoded(utt.passes.voiced_end)  # a partial taken as the voice stopped
    assert utt.pause() and utt.passes.moot(utt.clock.now)
    utt.passes.drop()
    assert utt.silence(2) == [False, True]
    assert not utt.passes.moot(utt.clock.now)  # the hangover's pass hears the pause


def test_the_hangovers_pass_is_moot_after_a_pass_that_heard_the_voice_end() -> None:
    """Decision 0033: what follows is room tone; that pass is the final."""
    utt = Utterance()
    utt.pause()
    utt.run()
    utt.silence(2)
    assert utt.passes.wanted is Pass.PAUSE and utt.passes.moot(utt.clock.now)


def test_a_partial_asked_for_while_a_pause_pass_waits_does_not_replace_it() -> None:
    utt = Utterance()
    utt.pause()
    utt.voice(10)
    assert utt.passes.phase is Phase.SPEAKING and utt.passes.wanted is Pass.PAUSE


def test_the_pass_that_heard_the_voice_end_is_reused_as_the_final() -> None:
    utt = Utterance()
    utt.pause()
    guess_end = utt.run()
    utt.silence(5)
    until = utt.passes.finalize(utt.clock.now)
    assert until == pytest.approx(utt.passes.heard_until)
    assert utt.passes.phase is Phase.FINALIZED and utt.passes.finalizing
    assert utt.passes.final_heard(until) == guess_end and utt.passes.wanted is None


def test_a_final_that_no_pass_heard_is_due_and_runs() -> None:
    utt = Utterance()
    utt.voice(5)
    utt.passes.decoded(utt.passes.voiced_end - 0.09)  # behind the voice
    utt.pause()
    until = utt.passes.finalize(utt.clock.now)  # ended before the hangover was in
    assert until == pytest.approx(utt.passes.voiced_end + FRAME)
    assert utt.passes.phase is Phase.FINAL_DUE and utt.passes.final_heard(until) is None
    utt.passes.decoded(until)  # the pass it was queued behind heard up to there
    assert utt.passes.final_heard(until) == until
    utt.passes.final_ran()
    assert utt.passes.phase is Phase.FINALIZED


@pytest.mark.parametrize("ran", [False, True])
def test_speech_after_the_endpoint_reopens_the_utterance(ran: bool) -> None:
    utt = Utterance()
    utt.pause()
    utt.run()
    utt.passes.finalize(utt.clock.now)
    if ran:
        utt.passes.final_ran()
    utt.passes.resume(utt.clock.now + 0.6)
    assert utt.passes.phase is Phase.SPEAKING and not utt.passes.finalizing
    assert utt.passes.heard is Heard.PART


def test_times_reached_two_ways_are_one_instant() -> None:
    """A frame end as a sum of 0.03 s and as a sample count over the rate differ in their
    last bits; the schedule treats them as one instant."""
    summed = 0.0
    for _ in range(10):
        summed += FRAME
    counted = 10 * 480 / SAMPLE_RATE
    assert summed != counted
    passes = PassSchedule(0.0, summed, TIMING)
    passes.decoded(counted)
    assert passes.heard is Heard.VOICE and passes.hears_voice(counted) and not passes.hears_pause(counted)
