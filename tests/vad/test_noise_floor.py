"""Pauses are found over steady room tone; the VAD's state stays on the audio thread."""

from __future__ import annotations

import threading

import numpy as np
import webrtcvad

from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE, AudioFrame
from app.core.config import VadConfig
from app.vad.detector import VoiceDetector
from app.vad.noise_floor import NoiseFloor
from tests.noise import mix, pink_noise
from tests.speech import read_wav, synth, trimmed


def frames_of(samples: np.ndarray) -> list[AudioFrame]:
    n = len(samples) // FRAME_SAMPLES
    return [AudioFrame(i * FRAME_SAMPLES / SAMPLE_RATE, samples[i * FRAME_SAMPLES:(i + 1) * FRAME_SAMPLES])
            for i in range(n)]


ROOM_LEAD_S = 0.6
"""Room tone before each question in :func:`questions_over_room_tone`."""
QUESTIONS = ("Tell me about the last project you worked on.", "Why do you want to leave your current job?")


def questions_over_room_tone(dbfs: float = -42.0) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Two espeak questions, each in its own stretch of pink room tone (0.6 s before, 2.5 s
    after) with digital silence between them, as system audio gives a call: returns the
    samples and each question's speech start and end (s).

    The silence matters: webrtcvad adapts to it, and from the second stretch of room tone
    on it calls the noise speech (what made pauses go unfound in a session).
    """
    parts: list[np.ndarray] = []
    spans: list[tuple[float, float]] = []
    t = 0.0
    for seed, text in enumerate(QUESTIONS):
        speech = read_wav(trimmed(synth(text, lead_s=0.2)))
        parts.append(np.zeros(2 * SAMPLE_RATE, dtype=np.int16))
        t += 2.0
        room = pink_noise(ROOM_LEAD_S + len(speech) / SAMPLE_RATE + 2.5, dbfs, seed=seed)
        parts.append(mix(speech, room, int(ROOM_LEAD_S * SAMPLE_RATE)))
        spans.append((t + ROOM_LEAD_S, t + ROOM_LEAD_S + len(speech) / SAMPLE_RATE))
        t += len(parts[-1]) / SAMPLE_RATE
    return np.concatenate(parts), spans


def run(detector: VoiceDetector, samples: np.ndarray) -> tuple[list[float], list[float]]:
    """Onset times and the ends of voiced frames in speech; as the pipeline does, the
    turn is ended after 0.8 s without voice."""
    onsets: list[float] = []
    voiced: list[float] = []
    for frame in frames_of(samples):
        step = detector.process(frame)
        if step.onset:
            onsets.append(step.onset[0].t)
        if step.voiced and detector.in_speech:
            voiced.append(frame.end)
        if detector.in_speech and frame.end - detector.last_voiced_end >= 0.8:
            detector.request_end()
    return onsets, voiced


def last_voice_after(voiced: list[float], end: float) -> float:
    """How long after the true end of speech the detector still heard voice (s)."""
    return max(t for t in voiced if end - 1.0 < t < end + 2.4) - end


def test_pause_found_over_pink_noise_at_minus_42_dbfs_within_300_ms() -> None:
    samples, spans = questions_over_room_tone(-42.0)
    config = VadConfig()
    onsets, voiced = run(VoiceDetector(config), samples)
    assert len(onsets) == len(spans)
    for onset, (start, end) in zip(onsets, spans, strict=True):
        # room tone out of digital silence may open the utterance (no floor for its first
        # 300 ms, see NoiseFloor): never before it (with the pre-roll), never late
        assert start - ROOM_LEAD_S - config.pre_roll_ms / 1000 - 0.03 <= onset < start + 0.4
        assert -0.3 < last_voice_after(voiced, end) <= 0.3


def test_without_the_noise_floor_the_room_tone_is_speech() -> None:
    """The failure this gate exists for: webrtcvad, adapted to the silence, calls the room
    tone of the second question speech, and the peak-relative gate sits below it."""
    samples, spans = questions_over_room_tone(-42.0)
    _, voiced = run(VoiceDetector(VadConfig(noise_margin_db=0.0)), samples)
    assert last_voice_after(voiced, spans[1][1]) > 1.0


def test_speech_resumed_out_of_a_silent_pause_starts_within_200_ms() -> None:
    """A question goes on after a pause of digital silence (gated or synthesized audio),
    after its turn was ended: the resumed words start an utterance as soon as an onset
    can count (150 ms of voice), which is what withdrawing the answer shown waits for.

    With silent pauses the window's only frames are speech, and its quietest one is no
    room: "Especially" opens ~10 dB below the body of the words, and judged against that
    floor it started speech ~280 ms after it began."""
    first = read_wav(trimmed(synth("Can you describe your current role?", lead_s=0.2)))
    then = read_wav(trimmed(synth("Especially the on-call part.", lead_s=0.2)))
    pause = np.zeros(int(0.55 * SAMPLE_RATE), dtype=np.int16)
    samples = np.concatenate([first, pause, then, pause])
    paused, resumed = len(first) / SAMPLE_RATE, (len(first) + len(pause)) / SAMPLE_RATE
    detector = VoiceDetector(VadConfig())
    onsets_after_resume = []
    for frame in frames_of(samples):
        if paused + 0.3 <= frame.t < paused + 0.33:
            detector.request_end()  # the turn ended inside the pause
        if detector.process(frame).onset and frame.t > paused:
            onsets_after_resume.append(frame.end - resumed)
    assert len(onsets_after_resume) == 1
    assert 0.0 < onsets_after_resume[0] <= 0.2


def test_no_floor_until_300_ms_of_signal_after_digital_silence() -> None:
    """Digital silence is never the floor, and what comes out of it is judged without
    one until 300 ms of signal are heard; then the room heard before it counts again."""
    floor = NoiseFloor(window_s=3.0, margin_db=12.0)
    t = 0.0

    def feed(level_db: float, frames: int) -> float:
        nonlocal t
        for _ in range(frames):
            t += 0.03
            floor.update(level_db, t)
        return floor.floor_db

    assert feed(-50.0, 9) == -120.0  # too little heard yet
    assert feed(-50.0, 1) == -50.0
    assert feed(-120.0, 5) == -120.0
    assert feed(-30.0, 9) == -120.0
    assert feed(-30.0, 1) == -50.0
    assert floor.above(-37.0) and not floor.above(-39.0)


def test_room_tone_alone_starts_no_utterance() -> None:
    onsets, _ = run(VoiceDetector(VadConfig()), pink_noise(5.0, -42.0, seed=3).astype(np.int16))
    assert onsets == []


def test_end_requested_from_another_thread_applies_on_the_next_frame() -> None:
    samples, _ = questions_over_room_tone(-42.0)
    frames = frames_of(samples)
    detector = VoiceDetector(VadConfig())
    i = 0
    while not detector.in_speech:
        detector.process(frames[i])
        i += 1
    other = threading.Thread(target=detector.request_end)
    other.start()
    other.join()
    assert detector.in_speech  # nothing changed on the other thread
    detector.process(frames[i])
    step = detector.process(frames[i + 1])
    assert not detector.in_speech or step.onset  # a new onset may follow: speech goes on


def voiced_runs(samples: np.ndarray) -> list[tuple[int, int]]:
    """(first frame, length) of each run of frames webrtcvad alone calls voiced."""
    vad = webrtcvad.Vad(VadConfig().aggressiveness)
    flags = [vad.is_speech(f.samples.tobytes(), SAMPLE_RATE) for f in frames_of(samples)]
    runs: list[tuple[int, int]] = []
    for i, flag in enumerate(flags):
        if flag and (i == 0 or not flags[i - 1]):
            runs.append((i, 1))
        elif flag:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
    return runs


def test_a_first_word_cut_by_a_stop_consonant_starts_speech_at_the_next_syllable() -> None:
    """120 ms of voice, a 90 ms closure, then the next word: speech has begun when that word
    does (what a resumed question is noticed by), not a syllable later; the same 120 ms
    alone is no speech."""
    speech = read_wav(trimmed(synth("Describe the last project you were proud of.", lead_s=0.2)))
    start, length = max(voiced_runs(speech), key=lambda run: run[1])
    assert length >= 12
    syllable = speech[start * FRAME_SAMPLES:(start + 4) * FRAME_SAMPLES]
    word = speech[(start + 4) * FRAME_SAMPLES:(start + 12) * FRAME_SAMPLES]
    quiet = np.zeros(FRAME_SAMPLES * 10, dtype=np.int16)
    closure = np.zeros(FRAME_SAMPLES * 3, dtype=np.int16)

    frames = frames_of(np.concatenate([quiet, syllable, closure, word]))

    def onset_frame(config: VadConfig) -> int:
        detector = VoiceDetector(config)
        return next(i for i, frame in enumerate(frames) if detector.process(frame).onset)

    assert onset_frame(VadConfig()) == 10 + 4 + 3  # the next word's first frame
    assert onset_frame(VadConfig(onset_window_ms=210)) > 10 + 4 + 3  # a 7-frame window: later
    assert run(VoiceDetector(VadConfig()), np.concatenate([quiet, syllable, quiet]))[0] == []
