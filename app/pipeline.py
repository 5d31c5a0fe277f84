"""Audio → VAD → streaming ASR → endpointer, wired together and speaking only events.

The stages do not know each other: this module feeds each one what it needs and turns
their results into events on one bus.  Frames are processed on the audio source's
thread (VAD and endpoint ticks are microseconds of work); decoding happens on the ASR
worker; the endpointer, fed from both, is guarded by one lock.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from app.asr.decoder import WhisperDecoder
from app.asr.streaming import StreamingRecognizer
from app.audio.frames import AudioFrame, AudioSource
from app.clock import SessionClock
from app.config import Settings
from app.events import (
    EndpointEvent,
    ErrorEvent,
    Event,
    EventBus,
    FinalEvent,
    LevelEvent,
    PartialEvent,
    SpeculateEvent,
    StatusEvent,
    VadEvent,
)
from app.turns.endpointer import Decision, Endpoint, Endpointer, Speculate
from app.turns.signals import SignalRequest, SignalResult, SignalWorker, TurnSignals
from app.vad.detector import VoiceDetector

LEVEL_EVERY_FRAMES = 3


@dataclass(frozen=True, slots=True)
class TranscriberOptions:
    """Switches the benchmark's baseline modes turn off; the defaults are the product."""

    reuse_final: bool = True
    question_shortcut: bool = True
    """End the turn sooner when the partial ended in "?" twice in a row."""


class Transcriber:
    def __init__(self, source: AudioSource, decoder: WhisperDecoder, settings: Settings,
                 bus: EventBus, clock: SessionClock,
                 options: TranscriberOptions = TranscriberOptions()) -> None:
        self._source = source
        self._bus = bus
        self._clock = clock
        self._settings = settings
        turns = settings.turns
        if not options.question_shortcut:
            turns = turns.model_copy(update={"endpoint_question_silence_ms": turns.endpoint_silence_ms})
        self._vad = VoiceDetector(settings.vad)
        self._endpointer = Endpointer(turns, settings.asr.language)
        self._recognizer = StreamingRecognizer(
            decoder, settings.asr, clock, on_partial=self._on_partial, on_final=self._on_final,
            on_error=bus.emit, hangover_s=settings.vad.hangover_ms / 1000, reuse_final=options.reuse_final)
        self._signals = (SignalWorker(lambda: TurnSignals.load(turns, settings.asr.language),
                                      self._on_signals, self._on_signals_ready)
                         if turns.policy == "signals" else None)
        self._lock = threading.Lock()
        self._utterance = 0
        self._audio_now = 0.0
        self._level_peak = -120.0
        self._frames = 0
        self._running = False

    # --- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        self._running = True
        if self._signals:
            self._signals.start()
        self._recognizer.start()
        self._source.start(self._on_frame, self._on_source_error)

    def stop(self) -> None:
        self._running = False
        self._source.stop()
        self._recognizer.stop()
        if self._signals:
            self._signals.stop()

    def finish(self, timeout: float = 60.0) -> bool:
        """After a file has played: end the open turn and wait until its final is out."""
        if not self._source.wait(timeout):
            return False
        self.answer_now(reason_end_of_audio=True)
        deadline = time.monotonic() + timeout
        while not self._recognizer.idle() and time.monotonic() < deadline:
            time.sleep(0.01)
        return True

    def answer_now(self, *, reason_end_of_audio: bool = False) -> None:
        with self._lock:
            decisions = self._endpointer.force(self._audio_now)
            if reason_end_of_audio:
                decisions = [Endpoint(d.turn, "end_of_audio", d.silence)
                             if isinstance(d, Endpoint) else d for d in decisions]
            self._handle(decisions)

    @property
    def overflows(self) -> int:
        """Audio blocks the source lost (a device that could not keep up)."""
        return self._source.overflows

    @property
    def passes(self) -> int:
        return self._recognizer.passes

    @property
    def decode_seconds(self) -> float:
        return self._recognizer.decode_seconds

    # --- audio thread ----------------------------------------------------------------

    def _on_frame(self, frame: AudioFrame) -> None:
        if not self._running:
            return
        self._emit_level(frame)
        step = self._vad.process(frame)
        with self._lock:
            self._audio_now = frame.end
            if step.onset:
                self._utterance += 1
                self._recognizer.begin(self._utterance, step.onset)
                self._endpointer.speech_started(self._utterance, step.onset[-1].end)
                self._bus.emit(VadEvent(t=self._clock.now(), speech=True))
                return
            if not self._vad.in_speech:
                return
            self._recognizer.add(frame, step.voiced)
            if step.voiced:
                self._endpointer.voiced(frame.end)
            if step.paused:
                self._recognizer.pause()
                self._bus.emit(VadEvent(t=self._clock.now(), speech=False))
            elif step.resumed:
                self._bus.emit(VadEvent(t=self._clock.now(), speech=True))
            decisions = self._endpointer.tick(frame.end)
            if not decisions and self._recognizer.duration() >= self._settings.asr.max_utterance_s:
                decisions = self._endpointer.force(frame.end)
            self._handle(decisions)

    def _emit_level(self, frame: AudioFrame) -> None:
        rms = float(np.sqrt(np.mean(frame.samples.astype(np.float32) ** 2))) / 32768.0
        self._level_peak = max(self._level_peak, 20 * math.log10(rms) if rms > 0 else -120.0)
        self._frames += 1
        if self._frames % LEVEL_EVERY_FRAMES == 0:
            self._bus.emit(LevelEvent(t=self._clock.now(), dbfs=round(self._level_peak, 1)))
            self._level_peak = -120.0

    def _on_source_error(self, message: str) -> None:
        self._bus.emit(ErrorEvent(t=self._clock.now(), stage="audio", message=message))

    # --- ASR worker thread -------------------------------------------------------------

    def _on_partial(self, partial: PartialEvent) -> None:
        self._bus.emit(partial)
        with self._lock:
            text = partial.hypothesis or partial.text
            self._handle(self._endpointer.partial(partial.turn, text, partial.stable, partial.audio_end,
                                                  self._audio_now))
            if self._signals and self._endpointer.current(partial.turn, partial.audio_end):
                self._signals.submit(SignalRequest(partial.turn, text, partial.audio_end))

    # --- end-of-turn signals thread ----------------------------------------------------

    def _on_signals_ready(self, signals: TurnSignals) -> None:
        self._bus.emit(StatusEvent(t=self._clock.now(), stage="turns", message=signals.status))
        with self._lock:
            self._endpointer.expect_words(signals.words is not None)

    def _on_signals(self, result: SignalResult) -> None:
        with self._lock:
            self._handle(self._endpointer.eot(result.turn, result.text, result.audio_end, self._audio_now,
                                              words_logp=result.words_logp, sound_p=result.sound_p))

    def _on_final(self, final: FinalEvent) -> None:
        self._bus.emit(final)

    # --- decisions (lock held) -------------------------------------------------------

    def _handle(self, decisions: list[Decision]) -> None:
        for decision in decisions:
            now = self._clock.now()
            event: Event
            if isinstance(decision, Speculate):
                event = SpeculateEvent(t=now, turn=decision.turn, text=decision.text,
                                       reason=decision.reason)
                self._bus.emit(event)
            else:
                self._bus.emit(EndpointEvent(t=now, turn=decision.turn, reason=decision.reason,
                                             silence=decision.silence))
                self._vad.request_end()  # applied by the audio thread on its next frame
                self._recognizer.finalize(decision.turn)
