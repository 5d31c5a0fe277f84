"""Partial passes shed when the decoder falls behind (a video call on the same cores): while
the voice goes on, the next partial waits as long as the last one took; the pass at the
pause never waits.  A stand-in decoder that takes a fixed time stands for a slowed one
(what it hears does not matter here, only when passes start and end)."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from app.asr.decoder import Hypothesis
from app.asr.streaming import PARTIAL_SPACING, StreamingRecognizer
from app.audio.frames import FRAME_SAMPLES, AudioFrame
from app.audio.resample import frames_of
from app.core.clock import SessionClock
from app.core.config import AsrConfig
from tests.hooks import RecognitionRecorder
from tests.patience import NEVER_S

FRAME_S = FRAME_SAMPLES / 16000


class _SlowDecoder:
    """Every pass takes ``seconds`` of wall time; logs when each started and ended, and how
    much audio it heard."""

    language = "en"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.passes: list[tuple[float, float, int]] = []
        self.done = threading.Condition()

    def decode(self, audio: Any, previous_text: str | None = None, *, language: str | None = None,
               wanted: Callable[[], bool] | None = None, recheck: Callable[[str], bool] | None = None,
               recheck_beam: int = 5, beam: int = 1, mend: bool = False) -> Hypothesis:
        start = time.monotonic()
        time.sleep(self.seconds)
        with self.done:
            self.passes.append((start, time.monotonic(), len(audio)))
            self.done.notify_all()
        return Hypothesis("so tell me about", 0.0, -0.1, 1.0, self.seconds)

    def wait_for(self, count: int) -> None:
        with self.done:
            assert self.done.wait_for(lambda: len(self.passes) >= count, NEVER_S)


def _recogniser(decoder: _SlowDecoder) -> StreamingRecognizer:
    return StreamingRecognizer(decoder, AsrConfig(), SessionClock(),  # type: ignore[arg-type]
                               RecognitionRecorder(lambda said: None))


def _voice(seconds: float) -> list[AudioFrame]:
    return frames_of([np.zeros(round(seconds * 16000), dtype=np.int16)])


def _talk(rec: StreamingRecognizer, frames: list[AudioFrame]) -> None:
    """Voiced frames at the pace a speaker says them."""
    for frame in frames:
        rec.add(frame, voiced=True)
        time.sleep(FRAME_S)


def _gaps(decoder: _SlowDecoder) -> list[tuple[float, float]]:
    """(idle time before each pass, the duration of the pass before it)."""
    p = decoder.passes
    return [(nxt[0] - prev[1], prev[1] - prev[0]) for prev, nxt in itertools.pairwise(p)]


def _slow_talk() -> list[tuple[float, float]]:
    """Three seconds of voice to a decoder slower than the 300 ms cadence (behind): the
    gaps between its passes."""
    decoder = _SlowDecoder(0.4)
    rec = _recogniser(decoder)
    rec.start()
    frames = _voice(3.0)
    try:
        rec.begin(1, frames[:1])
        _talk(rec, frames[1:])
    finally:
        rec.stop()
    return _gaps(decoder)


def test_while_the_voice_goes_on_a_slow_pass_is_followed_by_as_long_a_rest() -> None:
    gaps = _slow_talk()
    assert len(gaps) >= 2
    for rest, took in gaps:
        assert rest >= PARTIAL_SPACING * took - 0.005, gaps


def test_without_spacing_slow_passes_run_back_to_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no rest (a spacing of 0): what the test above would see, so it can fail."""
    monkeypatch.setattr("app.asr.streaming.PARTIAL_SPACING", 0.0)
    assert any(rest < 0.5 * took for rest, took in _slow_talk())


def test_the_pass_at_the_pause_never_waits_for_the_spacing() -> None:
    decoder = _SlowDecoder(0.5)
    rec = _recogniser(decoder)
    rec.start()
    voice, silence = _voice(1.0), _voice(0.3)
    try:
        rec.begin(1, voice[:1])
        for frame in voice[1:14]:  # 0.42 s: the first partial is wanted and taken
            rec.add(frame, voiced=True)
        decoder.wait_for(1)  # it ended: the next partial is held for 0.5 s
        for frame in voice[14:]:  # the voice goes on: a partial is wanted, and held
            rec.add(frame, voiced=True)
        rec.pause()
        for frame in silence:  # the hangover's audio: the pause's passes are due at once
            rec.add(frame, voiced=False)
        decoder.wait_for(2)
    finally:
        rec.stop()
    (_, first_end, _), (second_start, _, heard) = decoder.passes[:2]
    assert heard > len(voice) * FRAME_SAMPLES  # the second pass heard the pause...
    assert second_start - first_end < PARTIAL_SPACING * 0.5  # ...and was not held like a partial
