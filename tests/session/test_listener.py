"""The listening half: audio → VAD → streaming ASR → end of turn through FileSource, the
microphone's path."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from app.asr.decoder import WhisperDecoder
from app.asr.schedule import Pass, PassSchedule
from app.audio import FileSource
from app.audio.frames import AudioFrame
from app.core.clock import SessionClock
from app.core.config import Settings
from app.core.events import (
    EndpointEvent,
    Event,
    EventBus,
    FinalEvent,
    PartialEvent,
    ResumedEvent,
    Speaker,
    SpeculateEvent,
    VadEvent,
)
from app.session.listener import Listener, ListenerOptions
from app.turns.signals import SignalRequest, SignalResult, TurnSignals
from devtools.bench.corpus import wer, words
from tests.hooks import StandaloneHooks
from tests.speech import concat, speech_bounds, synth, trimmed, write_wav

QUESTION = "What is the difference between a process and a thread, and when would you use each one?"


def replay(decoder: WhisperDecoder, path: Path, speed: float = 4.0,
           settings: Settings | None = None,
           turn_signals: Callable[[], TurnSignals] | None = None,
           options: ListenerOptions = ListenerOptions(),
           hooks: StandaloneHooks | None = None) -> tuple[list[Event], Listener]:
    events: list[Event] = []
    bus = EventBus()
    bus.subscribe(events.append)
    clock = SessionClock()
    source = FileSource(path, clock, speed=speed)
    transcriber = Listener(source, decoder, settings or Settings(), bus, clock,
                           hooks or StandaloneHooks(turn_signals), options)
    transcriber.start()
    assert transcriber.finish(timeout=60)
    transcriber.stop()
    return events, transcriber


def of(events: list[Event], kind: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, kind)]


@dataclass
class OnsetHooks(StandaloneHooks):
    """Where on the audio clock (samples heard / rate) each speech onset was: the first
    frame of the utterance (pre-roll included), and the end of the frame on which the VAD
    declared it."""

    onsets: list[tuple[float, float]] = field(default_factory=list)
    _heard_to: float = 0.0

    def frame_heard(self, speaker: Speaker, frame: AudioFrame) -> None:
        self._heard_to = frame.end

    def speech_started(self, speaker: Speaker, t: float) -> None:
        self.onsets.append((t, self._heard_to))


def test_partials_grow_and_the_final_matches(decoder: WhisperDecoder) -> None:
    events, _ = replay(decoder, synth(QUESTION), speed=1.0)  # real time: passes keep up anywhere
    partials: list[PartialEvent] = of(events, PartialEvent)
    finals: list[FinalEvent] = of(events, FinalEvent)
    assert len(partials) >= 3
    for earlier, later in itertools.pairwise(partials):
        assert words(later.stable)[: len(words(earlier.stable))] == words(earlier.stable), \
            (earlier.stable, later.stable)
        assert later.text.startswith(later.stable)
    assert len(finals) == 1
    assert wer([QUESTION], [finals[0].text]) <= 0.25, finals[0].text


def test_the_final_reuses_the_last_pass_instead_of_decoding_again(decoder: WhisperDecoder) -> None:
    events, _ = replay(decoder, synth("Why are you interested in this role?"), speed=1.0)
    final = of(events, FinalEvent)[0]
    assert final.reused
    # the pass it reused heard up to the final's audio end (its partial is not shown when
    # the turn ended while it ran, on a slow machine)
    same_pass = [p for p in of(events, PartialEvent) if abs(p.audio_end - final.audio_end) < 1e-6]
    assert all(p.hypothesis == final.text for p in same_pass)


def test_endpoint_and_speculation_come_after_the_speech(decoder: WhisperDecoder) -> None:
    """In order: the voice stops, any guess, the endpoint, the final (how soon each comes
    is measured by ``bench turns``, not here; on a busy machine the pause pass may land
    before a guess was due, and the final alone asks)."""
    clip = synth("Why are you interested in this role?")
    _, speech_end = speech_bounds(clip)
    events, _ = replay(decoder, clip, speed=1.0)
    endpoint = of(events, EndpointEvent)[0]
    final = of(events, FinalEvent)[0]
    assert speech_end < endpoint.t <= final.t and endpoint.turn == final.turn
    for guess in of(events, SpeculateEvent):
        assert speech_end < guess.t <= endpoint.t and guess.turn == final.turn


def test_the_words_heard_so_far_are_scored_before_the_pass_that_hears_the_pause_lands(
        decoder: WhisperDecoder) -> None:
    """A guess on words without "?" waits for the words model: partials are scored as they
    land, so when the voice stops the words heard so far have their verdict before the
    pass that hears the pause lands, instead of a model call later."""
    scored: list[tuple[float, SignalRequest]] = []

    class Recording(TurnSignals):
        def score(self, request: SignalRequest) -> SignalResult:
            scored.append((time.monotonic(), request))
            return super().score(request)

    def load() -> TurnSignals:
        loaded = TurnSignals.load(Settings().turns, "en")
        return Recording(loaded.words, loaded.sound, loaded.status)

    events, _ = replay(decoder, synth("Tell me about a project you are proud of.", lead_s=2.0),
                       speed=1.0, turn_signals=load)
    final = of(events, FinalEvent)[0]
    heard = {p.hypothesis for p in of(events, PartialEvent) if p.audio_end < final.audio_end - 1e-6}
    early = [r for _, r in scored if r.audio_end < final.audio_end - 1e-6]
    # words heard while the voice went on were scored (and their verdicts delivered), so
    # the newest had one before any pass heard the pause, which may even come too late
    # to be shown (the turn ended on those words)
    assert early and all(r.text in heard for r in early)


@pytest.mark.parametrize("speaker", ["interviewer", "candidate"])
def test_only_the_interviewers_pauses_are_decoded_for_a_guess(
        decoder: WhisperDecoder, monkeypatch: pytest.MonkeyPatch, speaker: Speaker) -> None:
    """The pass at a pause's first silent frame is for a guess: every pause of the
    interviewer's has one, whether or not a words model scores the turn (decision 0023),
    and the candidate's words are never guessed, so their pauses have none."""
    hangover = Settings().vad.hangover_ms / 1000
    silence_heard: list[float] = []
    want = PassSchedule._want

    def recording(self: PassSchedule, at: float, kind: Pass) -> bool:
        if kind is Pass.PAUSE:
            silence_heard.append(at - self.voiced_end)
        return want(self, at, kind)

    monkeypatch.setattr(PassSchedule, "_want", recording)
    replay(decoder, synth("Tell me about a project you are proud of.", lead_s=0.5), speed=1.0,
           options=ListenerOptions(speaker=speaker))
    assert silence_heard, "no pause was decoded"
    guess_passes = [s for s in silence_heard if s < hangover - 1e-6]
    assert bool(guess_passes) == (speaker == "interviewer"), silence_heard


@pytest.mark.parametrize("speed", [1.0, 4.0])
def test_replay_clock_matches_the_audio(decoder: WhisperDecoder, speed: float) -> None:
    """The onset is found where the voice is in the file (audio clock: samples heard), and
    the session clock that stamps events runs at the audio's pace whatever the replay
    speed: an event is never stamped before the audio that caused it was played.  (How
    late it may come is this machine's speed: ``bench turns`` measures that.)"""
    clip = synth("Tell me about yourself.", lead_s=1.0)
    start, _ = speech_bounds(clip)
    hooks = OnsetHooks()
    events, _ = replay(decoder, clip, speed=speed, hooks=hooks)
    (began, declared_at), *_ = hooks.onsets
    assert began <= start  # the utterance holds the voice from its first sample
    assert start <= declared_at <= start + 0.3  # the onset needs min_speech_ms of voice
    onset = of(events, VadEvent)[0]
    assert onset.speech and onset.t >= declared_at - 1e-6, (onset.t, declared_at)


def test_silence_and_noise_produce_nothing(decoder: WhisperDecoder, tmp_path: Path) -> None:
    silence = tmp_path / "silence.wav"
    write_wav(silence, np.zeros(16_000 * 3, dtype=np.int16))
    noise = tmp_path / "noise.wav"
    write_wav(noise, (np.random.default_rng(1).standard_normal(16_000 * 3) * 2000).astype(np.int16))
    for clip in (silence, noise):
        events, _ = replay(decoder, clip, speed=8.0)
        assert of(events, PartialEvent) == [] and of(events, FinalEvent) == [], clip.name


def test_a_thinking_pause_of_700_ms_does_not_split_the_question(decoder: WhisperDecoder) -> None:
    first = trimmed(synth("Tell me about a time you disagreed with your manager."))
    second = trimmed(synth("How did you handle it?"))
    clip = concat([0.5, first, 0.7, second, 1.5], "pause-question")
    events, _ = replay(decoder, clip)
    finals = of(events, FinalEvent)
    assert len(finals) == 1, [f.text for f in finals]
    assert "handle" in finals[0].text.lower()


def test_the_interviewer_s_words_that_seem_to_trail_off_get_a_second_look(decoder: WhisperDecoder) -> None:
    """tiny.en's greedy pass can hear this question's end as "rate limit or" (its int8
    kernels do on some CPUs), a thinking pause that would hold the turn for 1.5 s: the
    interviewer's pause pass, greedy, decodes it again with a beam (``asr.recheck_beam``);
    by default that pass searches with a beam already (``asr.pause_beam``)."""
    clip = Path(__file__).parents[1] / "data" / "rate-limiter.wav"
    greedy = Settings()
    greedy.asr.pause_beam = 1
    for settings in (Settings(), greedy):
        events, _ = replay(decoder, clip, settings=settings)
        final = of(events, FinalEvent)[-1].text
        assert "limiter" in final.lower() and "limit or" not in final


def test_two_questions_are_two_utterances(decoder: WhisperDecoder) -> None:
    clip = concat([synth("Why are you interested in this role?", tail_s=0.0), 3.0,
                   synth("What is your biggest weakness?", lead_s=0.0)], "two-questions")
    events, _ = replay(decoder, clip)
    finals = of(events, FinalEvent)
    assert [f.turn for f in finals] == [1, 2]  # 3 s after the endpoint: a new question
    assert "weakness" in finals[1].text.lower()
    assert of(events, ResumedEvent) == []


def test_a_question_that_goes_on_after_the_endpoint_is_one_turn(decoder: WhisperDecoder) -> None:
    first = trimmed(synth("Have you ever led a team?"))
    second = trimmed(synth("I mean a team of more than ten people."))
    clip = concat([0.5, first, 1.0, second, 1.5], "continued-question")
    events, _ = replay(decoder, clip, speed=1.0)
    endpoints = of(events, EndpointEvent)
    resumed = of(events, ResumedEvent)
    finals = of(events, FinalEvent)
    assert len(endpoints) == 2 and [r.turn for r in resumed] == [1], [e.name for e in events]
    assert endpoints[0].t < resumed[0].t and 0.5 < resumed[0].pause < 1.3
    assert {f.turn for f in finals} == {1}
    whole = finals[-1].text.lower()
    assert "team" in whole and "people" in whole  # the whole question, decoded together


def test_a_noise_burst_before_a_question_is_dropped(decoder: WhisperDecoder, tmp_path: Path) -> None:
    burst = tmp_path / "burst.wav"
    rng = np.random.default_rng(7)
    write_wav(burst, (rng.standard_normal(int(16_000 * 0.3)) * 6000).astype(np.int16))
    question = trimmed(synth("What is your biggest weakness?"))
    clip = concat([0.5, burst, 3.0, question, 3.0], "burst-then-question")  # room for the pause
    events, _ = replay(decoder, clip, speed=2.0)
    finals = of(events, FinalEvent)
    assert len(finals) == 1 and "weakness" in finals[0].text.lower(), [f.text for f in finals]
    assert finals[0].text.lower().startswith("what")  # not glued to the burst
    # Ended by the question's own pause, on the audio clock: not forced at max_utterance_s,
    # not held until the recording ran out ("end_of_audio").
    endpoint = of(events, EndpointEvent)[0]
    assert endpoint.reason in ("silence", "question"), endpoint


def test_cli_transcribe_writes_json_lines(tmp_path: Path) -> None:
    clip = synth("Why are you interested in this role?")
    # in real time: a partial pass is due every 300 ms of voice, whatever the machine
    command = [sys.executable, "-m", "app", "transcribe", str(clip), "--events", "-"]
    out = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = {line["event"] for line in lines}
    assert {"vad", "partial", "final"} <= kinds
    final = next(line for line in lines if line["event"] == "final")
    assert set(final) >= {"t", "turn", "text", "audio_end"}
    assert "interested" in final["text"].lower()


def test_cli_transcribe_prints_a_readable_transcript() -> None:
    clip = synth("What is your biggest weakness?")
    out = subprocess.run([sys.executable, "-m", "app", "transcribe", str(clip), "--speed", "4"],
                         capture_output=True, text=True, timeout=120, check=True)
    assert "Q: " in out.stdout and "biggest" in out.stdout.lower()


def test_cli_reports_a_missing_file_clearly(tmp_path: Path) -> None:
    """Exit 2, a problem to fix before starting (README, "Exit codes"), said in one line."""
    missing = tmp_path / "nope.wav"
    out = subprocess.run([sys.executable, "-m", "app", "transcribe", str(missing)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines() == [f"error: {missing}: audio file not found"]


@pytest.mark.parametrize("low_latency", [True, False])
def test_only_low_latency_mode_holds_guesses_ready(decoder: WhisperDecoder, tmp_path: Path,
                                                    low_latency: bool) -> None:
    """An unsure turn may end sooner only when its guess's answer is held ready, which is
    low-latency mode (decision 0032): the listener tells its endpointer, also when the
    mode is switched while listening."""
    clip = tmp_path / "silence.wav"
    write_wav(clip, np.zeros(16_000, dtype=np.int16))
    settings = Settings()
    settings.answer.low_latency = low_latency
    clock = SessionClock()
    listener = Listener(FileSource(clip, clock), decoder, settings, EventBus(), clock, StandaloneHooks(None),
                        ListenerOptions())
    assert listener._endpointer.holds_guesses is low_latency
    listener.set_low_latency(not low_latency)
    assert listener._endpointer.holds_guesses is not low_latency
