"""The captions' cadence of :class:`~app.asr.schedule.PassSchedule` wherever an utterance
starts: frame times as an :class:`AudioFrame` gives them (samples delivered / rate, plus
the frame's length), so the rounding of their differences falls both ways."""

from __future__ import annotations

import numpy as np
import pytest

from app.asr.schedule import Pass, PassSchedule, PassTiming
from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE, AudioFrame

_SILENT = np.zeros(FRAME_SAMPLES, dtype=np.int16)


def _frame_end(index: int) -> float:
    """The end of the ``index``-th frame of a session, as the audio source times it."""
    return AudioFrame(t=index * FRAME_SAMPLES / SAMPLE_RATE, samples=_SILENT).end


@pytest.mark.parametrize("first", range(60))
def test_a_caption_is_due_after_exactly_the_interval_of_voice(first: int) -> None:
    """300 ms of voice is ten frames, not ten or eleven as the rounding of the frames'
    times falls (before the fix, 48 of these 60 starts waited for an eleventh at least once)."""
    passes = PassSchedule(first * FRAME_SAMPLES / SAMPLE_RATE, _frame_end(first),
                          PassTiming(hangover=0.09, guess_hangover=0.03, partial_interval=0.3))
    due = [i for i in range(first + 1, first + 31) if passes.voiced(_frame_end(i))]
    assert due == [first + 9, first + 19, first + 29]  # frames 10, 20 and 30 of the utterance
    assert passes.wanted is Pass.PARTIAL
