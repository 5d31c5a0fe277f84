"""The streaming recogniser on the real tiny.en model: a partial pass made stale by a pause
is given up after its encoder, while the speaker talks on every partial is a caption."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from app.asr.decoder import AUTO, Hypothesis, Superseded, WhisperDecoder
from app.asr.streaming import LOCK_MIN_AUDIO_S, StreamingRecognizer, Voice
from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE
from app.audio.resample import frames_of
from app.core.clock import SessionClock
from app.core.config import AsrConfig, VadConfig
from app.core.events import ErrorEvent, FinalEvent, LanguageEvent, PartialEvent
from tests.hooks import RecognitionRecorder
from tests.noise import mix, pink_noise
from tests.patience import NEVER_S
from tests.speech import read_wav, synth

QUESTION = "Why are you interested in this role and what do you know about our team?"


def _until(condition: Callable[[], bool], seconds: float = NEVER_S) -> None:
    """Wait until ``condition`` holds (what follows asserts on it), at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_pass_nobody_wants_stops_after_its_encoder(decoder: WhisperDecoder) -> None:
    audio = read_wav(synth("Why are you interested in this role?"))
    asked: list[bool] = []

    def unwanted() -> bool:
        asked.append(False)
        return False

    with pytest.raises(Superseded):
        decoder.decode(audio, wanted=unwanted)
    assert asked == [False]  # asked once, after the encoder
    assert "interested" in decoder.decode(audio, wanted=lambda: True).text.lower()


class _SpyDecoder:
    """The real decoder, watched: how many samples each pass heard, what ``wanted``
    answered and whether the pass was asked to recheck its words.  ``held``: the first
    pass waits, as if still encoding, until the test releases it.  ``detected``: every
    pass says it detected this language (the English decoder standing in for a
    multilingual one in an "auto" session)."""

    def __init__(self, real: WhisperDecoder, *, held: bool = False, detected: str | None = None) -> None:
        self._real = real
        self._detected = detected
        self.language = AUTO if detected else real.language
        self.entered = threading.Event()
        self.release = threading.Event()
        if not held:
            self.release.set()
        self.heard: list[int] = []
        self.answers: list[bool] = []
        self.rechecked: list[bool] = []
        self.beams: list[int] = []
        self.mended: list[bool] = []

    def decode(self, audio: Any, previous_text: str | None = None, *, language: str | None = None,
               wanted: Callable[[], bool] | None = None, recheck: Callable[[str], bool] | None = None,
               recheck_beam: int = 5, beam: int = 1, mend: bool = False) -> Hypothesis:
        self.entered.set()
        assert self.release.wait(NEVER_S)
        self.heard.append(len(audio))
        self.rechecked.append(recheck is not None)
        self.beams.append(beam)
        self.mended.append(mend)
        if wanted is not None:
            self.answers.append(wanted())
        hyp = self._real.decode(audio, language=None if self._detected else language, wanted=wanted,
                                recheck=recheck, recheck_beam=recheck_beam, beam=beam, mend=mend)
        return dataclasses.replace(hyp, language=self._detected, language_probability=0.9) \
            if self._detected else hyp


def _run(decoder: WhisperDecoder, speaker_pauses: bool,
         recheck: Callable[[str], bool] | None = None) -> tuple[_SpyDecoder, list[PartialEvent]]:
    """Hold the first partial pass (1.2 s of the question), then either go on talking or
    fall silent past the hangover; let the pass go and collect the partials."""
    held = _SpyDecoder(decoder, held=True)
    partials: list[PartialEvent] = []
    errors: list[ErrorEvent] = []
    finals: list[FinalEvent] = []

    def record(said: object) -> None:
        for kind, seen in ((PartialEvent, partials), (FinalEvent, finals), (ErrorEvent, errors)):
            if isinstance(said, kind):
                seen.append(said)  # type: ignore[arg-type]

    rec = StreamingRecognizer(held, AsrConfig(), SessionClock(),  # type: ignore[arg-type]
                              RecognitionRecorder(record), voice=Voice(recheck=recheck))
    rec.start()
    speech = read_wav(synth(QUESTION, lead_s=0.0, tail_s=0.1))
    voiced = -(-len(speech) // FRAME_SAMPLES)  # the question's frames, then 6 of silence
    frames = frames_of([speech, np.zeros(FRAME_SAMPLES * 6, dtype=np.int16)])
    try:
        cut = 40
        rec.begin(1, frames[:cut])
        rec.add(frames[cut], voiced=True)  # the first periodic pass: wanted, taken and held
        assert held.entered.wait(NEVER_S)
        for frame in frames[cut + 1:voiced]:
            rec.add(frame, voiced=True)  # they talk on: more passes are wanted meanwhile
        if speaker_pauses:
            rec.pause()
            for frame in frames[voiced:]:  # the hangover's audio: the pause pass is due
                rec.add(frame, voiced=False)
        held.release.set()
        _until(lambda: len(held.answers) >= 2 and rec.idle(), seconds=20)
    finally:
        held.release.set()
        rec.stop()
    assert not errors
    return held, partials


def test_a_partial_made_stale_by_a_pause_gives_way_to_the_pass_that_heard_it_all(
        decoder: WhisperDecoder) -> None:
    held, partials = _run(decoder, speaker_pauses=True)
    assert held.answers[:2] == [False, True]  # the held pass gave up, the pause pass ran
    assert len(partials) == 1 and "team" in partials[0].text.lower()


def test_while_the_speaker_talks_on_every_partial_is_finished(decoder: WhisperDecoder) -> None:
    held, partials = _run(decoder, speaker_pauses=False)
    assert held.answers[:2] == [True, True]
    assert partials[0].audio_end < 1.5 and len(partials) >= 2


def test_a_reused_final_that_settles_the_language_returns_it_with_the_final(decoder: WhisperDecoder) -> None:
    """The listener finalizes while deciding an endpoint, under its own lock, which its
    ``on_language`` hook takes: a language settled by a final reused at once comes back
    with it (before it), never through the hook, or an "auto" session whose first words
    were too short for a partial to settle it would hang there."""
    said: list[object] = []
    rec = StreamingRecognizer(_SpyDecoder(decoder, detected="en"), AsrConfig(), SessionClock(),  # type: ignore[arg-type]
                              RecognitionRecorder(said.append))
    speech = read_wav(synth("Hello.", lead_s=0.0, tail_s=0.0))
    assert len(speech) / SAMPLE_RATE < LOCK_MIN_AUDIO_S  # too short for a partial to settle it
    voiced = -(-len(speech) // FRAME_SAMPLES)
    frames = frames_of([speech, np.zeros(FRAME_SAMPLES * 6, dtype=np.int16)])
    rec.start()
    try:
        rec.begin(1, frames[:voiced])
        rec.pause()
        for frame in frames[voiced:]:  # the hangover's audio: the pause pass hears it all
            rec.add(frame, voiced=False)
        _until(lambda: rec.idle() and rec.passes > 0, seconds=20)
        returned = rec.finalize(1)
    finally:
        rec.stop()
    # the passes heard words and said no language yet: the guess's pass and the
    # hangover's are one pass or two, as the worker thread happens to be scheduled
    assert said and all(isinstance(e, PartialEvent) for e in said)
    assert [type(e) for e in returned] == [LanguageEvent, FinalEvent]
    assert rec.language == "en" and returned[1].reused  # type: ignore[union-attr]


def _over_room_tone(audio: np.ndarray) -> np.ndarray:
    """``audio`` over pink room tone at -42 dBFS (a quiet office), as the held-out sets have."""
    return mix(audio, pink_noise(len(audio) / SAMPLE_RATE + 1, -42.0, seed=7)[:len(audio)], 0)


def _passes_at_pause(spy: _SpyDecoder, silent_frames: int, *, guess_hangover_s: float,
                     talks_on: bool = False, recheck: Callable[[str], bool] | None = None,
                     config: AsrConfig | None = None, room_tone: bool = False,
                     ) -> tuple[list[int], StreamingRecognizer, list[PartialEvent]]:
    """The whole question, then ``silent_frames`` unvoiced frames one by one (the listener's
    order: the frame is added, then the first one says "pause"), each pass let finish
    before the next frame; ``talks_on``: a voiced frame after them.  ``room_tone``: those
    frames and the speech are over pink room tone instead of digital silence.  Returns how
    many frames past the last voiced one each pass heard, the recogniser and its partials."""
    partials: list[PartialEvent] = []

    def keep(said: object) -> None:
        if isinstance(said, PartialEvent):
            partials.append(said)

    rec = StreamingRecognizer(spy, config or AsrConfig(), SessionClock(),  # type: ignore[arg-type]
                              RecognitionRecorder(keep),
                              pauses=VadConfig(guess_hangover_ms=round(guess_hangover_s * 1000)),
                              voice=Voice(captions=False, recheck=recheck))
    speech = read_wav(synth("Why are you interested in this role?", lead_s=0.0, tail_s=0.0))
    voiced = -(-len(speech) // FRAME_SAMPLES)
    audio = np.concatenate([speech, np.zeros(FRAME_SAMPLES * 8, dtype=np.int16)])
    if room_tone:
        audio = _over_room_tone(audio)
    frames = frames_of([audio])

    rec.start()
    try:
        rec.begin(1, frames[:voiced])
        for i, frame in enumerate(frames[voiced:voiced + silent_frames]):
            rec.add(frame, voiced=False)
            if i == 0:
                rec.pause()
            _until(rec.idle)
        if talks_on:
            rec.add(frames[voiced], voiced=True)
            _until(rec.idle)
    finally:
        rec.stop()
    return [n // FRAME_SAMPLES - voiced for n in spy.heard], rec, partials


@pytest.mark.parametrize("room_tone", [False, True], ids=["silence", "room-tone"])
def test_a_pause_is_decoded_once_for_the_guess_and_that_pass_is_the_final(
        decoder: WhisperDecoder, room_tone: bool) -> None:
    """The guess's pass at the pause's first silent frame heard every voiced frame and the
    voice end: the hangover's frames after it are unvoiced, room tone at most, which is no
    evidence.  No pass decodes them, and the final is that pass, word for word, so the
    final never disagrees with a guess made on the same voice (decision 0033)."""
    silent_heard, rec, partials = _passes_at_pause(_SpyDecoder(decoder), 3, guess_hangover_s=0.03,
                                                   room_tone=room_tone)
    assert silent_heard == [1] and len(partials) == 1
    final = rec.finalize(1)[-1]
    assert isinstance(final, FinalEvent) and final.reused
    assert final.text == partials[0].hypothesis
    assert final.audio_end == pytest.approx(partials[0].audio_end)


def test_a_turn_ended_before_the_hangover_is_the_guess_pass(decoder: WhisperDecoder) -> None:
    """An endpoint before the hangover was in: the guess's pass heard the voice end, so it
    is the final at once, no pass queued."""
    silent_heard, rec, partials = _passes_at_pause(_SpyDecoder(decoder), 2, guess_hangover_s=0.03,
                                                   room_tone=True)
    assert silent_heard == [1] and len(partials) == 1
    final = rec.finalize(1)[-1]
    assert isinstance(final, FinalEvent) and final.reused and final.text == partials[0].hypothesis


def test_a_final_queued_behind_the_guess_pass_reuses_it(decoder: WhisperDecoder) -> None:
    """The turn ends while the guess's pass still decodes: the final waits for that pass
    and is it (one decode in all), not a second pass over the same voice and more tone."""
    held = _SpyDecoder(decoder, held=True)
    finals: list[FinalEvent] = []
    partials: list[PartialEvent] = []

    def keep(said: object) -> None:
        if isinstance(said, PartialEvent):
            partials.append(said)

    rec = StreamingRecognizer(held, AsrConfig(), SessionClock(),  # type: ignore[arg-type]
                              RecognitionRecorder(keep, final=finals.append), voice=Voice(captions=False))
    speech = read_wav(synth("Why are you interested in this role?", lead_s=0.0, tail_s=0.0))
    voiced = -(-len(speech) // FRAME_SAMPLES)
    audio = np.concatenate([speech, np.zeros(FRAME_SAMPLES * 8, dtype=np.int16)])
    frames = frames_of([_over_room_tone(audio)])
    rec.start()
    try:
        rec.begin(1, frames[:voiced])
        rec.add(frames[voiced], voiced=False)
        rec.pause()  # the guess's pass: taken and held
        assert held.entered.wait(NEVER_S)
        for frame in frames[voiced + 1:voiced + 4]:  # the hangover's room tone
            rec.add(frame, voiced=False)
        assert rec.finalize(1) == []  # the pass has no words yet: the final is queued
        held.release.set()
        _until(lambda: bool(finals) and rec.idle())
    finally:
        held.release.set()
        rec.stop()
    assert [n // FRAME_SAMPLES - voiced for n in held.heard] == [1]
    assert len(finals) == 1 and finals[0].reused and partials == []  # a turn over shows no partial
    assert "interested" in finals[0].text.lower()


def test_voice_back_before_the_hangover_cancels_its_pass(decoder: WhisperDecoder) -> None:
    silent_heard, _, _ = _passes_at_pause(_SpyDecoder(decoder), 2, guess_hangover_s=0.03, talks_on=True)
    assert silent_heard == [1]


def test_a_guess_hangover_as_long_as_the_hangover_is_one_pass(decoder: WhisperDecoder) -> None:
    """As the candidate's recogniser has it (their words are never guessed): the pause is
    decoded once, when the hangover is in."""
    silent_heard, _, _ = _passes_at_pause(_SpyDecoder(decoder), 3, guess_hangover_s=0.09)
    assert silent_heard == [3]


def test_a_pass_that_heard_all_the_voice_leaves_the_guess_no_pass_of_its_own(
        decoder: WhisperDecoder) -> None:
    """A partial pass that started after the last voiced frame and was still decoding when
    the voice stopped has heard every word: the guess's pass would only add one silent
    frame, beside the words model scoring that partial.  The pass over the hangover (the
    final's) still runs (decision 0027)."""
    held = _SpyDecoder(decoder, held=True)
    rec = StreamingRecognizer(held, AsrConfig(), SessionClock(),  # type: ignore[arg-type]
                              RecognitionRecorder(lambda said: None))
    speech = read_wav(synth("Why are you interested in this role?", lead_s=0.0, tail_s=0.0))
    voiced = -(-len(speech) // FRAME_SAMPLES)
    frames = frames_of([speech, np.zeros(FRAME_SAMPLES * 8, dtype=np.int16)])
    rec.start()
    try:
        rec.begin(1, frames[:voiced - 1])
        rec.add(frames[voiced - 1], voiced=True)  # a periodic pass, taken over all the voice
        assert held.entered.wait(NEVER_S)
        rec.add(frames[voiced], voiced=False)
        rec.pause()  # the guess's pass is due while that pass still decodes
        held.release.set()
        silent = [0]
        _until(lambda: rec.idle() and len(held.heard) == len(silent))
        for frame in frames[voiced + 1:voiced + 3]:  # the hangover's audio
            rec.add(frame, voiced=False)
        _until(lambda: rec.idle() and len(held.heard) == len(silent) + 1)
    finally:
        held.release.set()
        rec.stop()
    assert [n // FRAME_SAMPLES - voiced for n in held.heard] == [*silent, 3]
    assert rec.finalize(1)  # the hangover's pass is the final, reused


def _always(text: str) -> bool:
    return True


def test_only_a_pass_over_a_pause_rechecks_its_words(decoder: WhisperDecoder) -> None:
    """Words that trail off hold the turn for seconds, so the passes that decide it (the
    guess's and the final's, over the pause) give doubtful ones a second look; a pass
    while the voice goes on never does: its last word is still being said."""
    talking, _ = _run(decoder, speaker_pauses=False, recheck=_always)
    assert talking.rechecked and not any(talking.rechecked)
    pausing, _ = _run(decoder, speaker_pauses=True, recheck=_always)
    assert pausing.rechecked[:2] == [False, True]  # the held partial, then the pause's pass
    spy = _SpyDecoder(decoder)
    _passes_at_pause(spy, 3, guess_hangover_s=0.03, recheck=_always)
    assert spy.rechecked == [True]  # the guess's pass, which is the final


def test_the_words_an_answer_is_asked_for_are_decoded_with_a_beam(decoder: WhisperDecoder) -> None:
    """A greedy decoder loses a steered name to its first ordinary piece; the passes over
    a pause (the guess's, the final's) search wider, captions while the voice goes on
    stay greedy: they are many, and their last word is still being said."""
    talking, _ = _run(decoder, speaker_pauses=False)
    assert talking.beams and set(talking.beams) == {1}
    assert not any(talking.mended)
    pausing, _ = _run(decoder, speaker_pauses=True)
    assert pausing.beams[:2] == [1, AsrConfig().pause_beam] and AsrConfig().pause_beam > 1
    assert pausing.mended[:2] == [False, True]  # the words of record: near-misses mended too
    spy = _SpyDecoder(decoder)
    _passes_at_pause(spy, 3, guess_hangover_s=0.03, config=AsrConfig(pause_beam=1, mend_names=False))
    assert spy.beams == [1]  # 1: greedy everywhere
    assert spy.mended == [False]


def test_a_recheck_beam_of_one_never_rechecks(decoder: WhisperDecoder) -> None:
    spy = _SpyDecoder(decoder)
    _passes_at_pause(spy, 3, guess_hangover_s=0.03, recheck=_always, config=AsrConfig(recheck_beam=1))
    assert spy.rechecked == [False]
