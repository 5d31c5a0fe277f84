"""Streaming recognition: one worker re-decoding the live utterance, newest audio first.

The audio thread only appends frames and says when a pass is worth running; the worker
snapshots the utterance when it starts a pass, so passes never queue behind each other:
a late pass covers more audio.  Which pass is due is the utterance's
:class:`~app.asr.schedule.PassSchedule` (the guess's and the hangover's passes at a pause,
the pass that heard the voice end as the final: decisions 0033, 0054).  A final jumps
ahead of any partial.  Design notes: decision 0039.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

import numpy as np

from app.asr.decoder import AUTO, Hypothesis, Superseded, WhisperDecoder
from app.asr.guards import cut_sign_off, is_hallucination
from app.asr.loops import cut_repetition
from app.asr.schedule import Pass, PassSchedule, PassTiming
from app.asr.stabilizer import LocalAgreement
from app.asr.worker import DecodeWorker, Job
from app.audio.frames import SAMPLE_RATE, AudioFrame, Samples, beyond
from app.core.clock import SessionClock
from app.core.config import AsrConfig, VadConfig
from app.core.events import ErrorEvent, FinalEvent, LanguageEvent, PartialEvent, Speaker

LOCK_MIN_AUDIO_S = 1.0
LOCK_PROBABILITY = 0.5

PARTIAL_SPACING = 1.0
"""While the voice goes on, a partial pass starts no sooner than this many times the last
pass's duration after it ended: partials take at most half of the decoding thread's time.
On a quiet machine a pass (~60–100 ms) is far under the 300 ms cadence and nothing changes;
beside a video call a slowed pass does not run back to back with the next, so a pause
landing at a random instant finds a partial in progress half the time instead of always
(the pass at the pause waits on average half as long for it), and the words model and the
call keep a share of the cores.  The pause's passes and the final never wait for it.  1:
halves that wait for at most twice the captions' cadence while the decoder is behind; more
would stretch the captions further for an ever smaller gain (1/(1+k))."""



@dataclass(frozen=True, slots=True)
class Voice:
    """Whose voice a recogniser hears, and what its passes are for."""

    speaker: Speaker = "interviewer"
    captions: bool = True
    """Partials while the voice goes on; False decodes only at pauses (and for the final):
    for a speaker whose partials are not shown, so the shared worker stays free."""
    recheck: Callable[[str], bool] | None = None
    """Words a pass over a pause should not trust from a greedy decode (they would hold the
    turn for seconds): that pass decodes them again with ``AsrConfig.recheck_beam`` (see
    :meth:`WhisperDecoder.decode`).  Passes while the voice goes on never do."""


_PAUSES = VadConfig()
_VOICE = Voice()


class RecognitionHooks(Protocol):
    """How a recogniser reports to its owner (the listener), one protocol for all it says.

    Every hook is called on the decoding thread (``asr-worker``) without the worker's
    lock held (what :meth:`StreamingRecognizer.finalize` settles at once, it returns).
    """

    def on_partial(self, event: PartialEvent) -> None:
        """A pass heard words: the stabilised caption and the whole hypothesis."""

    def on_final(self, event: FinalEvent) -> None:
        """A queued final pass finished (a final reused at once is returned instead)."""

    def on_error(self, event: ErrorEvent) -> None:
        """A pass failed; the worker goes on."""

    def on_language(self, event: LanguageEvent) -> None:
        """An "auto" session settled its language (said once)."""

    def on_no_words(self, turn: int, audio_end: float) -> None:
        """A pass over ``turn`` up to ``audio_end``, which heard all its voice, heard no words."""


@dataclass(slots=True)
class _Utterance:
    number: int
    start: float
    """Audio time of the first buffered sample."""
    chunks: list[Samples]
    passes: PassSchedule
    samples: int = 0
    text: str = ""
    """The newest pass's words (``passes.decoded_end`` is where it heard to)."""
    language: str = ""
    """Language of the newest pass with text (and its probability)."""
    language_probability: float = 0.0

    @property
    def end(self) -> float:
        return self.start + self.samples / SAMPLE_RATE

    def audio(self, until: float) -> Samples:
        data = np.concatenate(self.chunks) if self.chunks else np.zeros(0, dtype=np.int16)
        return data[: max(0, round((until - self.start) * SAMPLE_RATE))]


@dataclass(frozen=True, slots=True)
class _FinalJob:
    utterance: _Utterance
    until: float


class StreamingRecognizer:
    """Owns one speaker's current utterance; its passes run on a :class:`DecodeWorker`
    (shared by the session's recognisers, or a private one)."""

    def __init__(self, decoder: WhisperDecoder, config: AsrConfig, clock: SessionClock,
                 hooks: RecognitionHooks, *, pauses: VadConfig = _PAUSES, voice: Voice = _VOICE,
                 worker: DecodeWorker | None = None) -> None:
        """``pauses``: how much unvoiced audio a pause's passes wait for (``hangover_ms``;
        ``guess_hangover_ms`` for the guess's, none when it is not shorter); ``worker``: the
        session's shared decoding thread (else a private one)."""
        self._decoder = decoder
        self._recheck = voice.recheck
        self._cfg = config
        self._clock = clock
        self._hooks = hooks
        self._language: str | None = None if decoder.language == AUTO else decoder.language
        interval = config.partial_interval_ms / 1000 if voice.captions else float("inf")
        self._timing = PassTiming(pauses.hangover_ms / 1000, pauses.guess_hangover_ms / 1000, interval)
        self._next_partial_at = 0.0
        """``time.monotonic()`` before which no partial pass starts (see :meth:`_spaced`)."""
        self._speaker: Speaker = voice.speaker
        self.priority = 0 if voice.speaker == "interviewer" else 1
        self._stabilizer = LocalAgreement()
        self._worker = worker or DecodeWorker()
        self._cond = self._worker.cond
        self._current: _Utterance | None = None
        self._last: _Utterance | None = None
        """The utterance finalized last: a continuation reopens it."""
        self._finals: list[_FinalJob] = []
        self._busy = False
        self.passes = 0
        self.decode_seconds = 0.0

    # --- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        self._worker.attach(self)

    def stop(self, timeout: float = 10.0) -> None:
        self._worker.detach(self, timeout)

    @property
    def language(self) -> str | None:
        """The session's language; None while an "auto" session has not settled it."""
        return self._language

    def idle(self) -> bool:
        """No pass running and no final waiting (used to know when a replay is done)."""
        with self._cond:
            return not self._busy and not self._finals and self._wanted() is None

    # --- called from the audio thread ---------------------------------------------

    def begin(self, utterance: int, frames: list[AudioFrame]) -> None:
        with self._cond:
            passes = PassSchedule(frames[0].t, frames[-1].end, self._timing)
            self._current = _Utterance(number=utterance, start=frames[0].t, chunks=[], passes=passes)
            self._stabilizer.reset()
            for frame in frames:
                self._append(frame)

    def add(self, frame: AudioFrame, voiced: bool) -> None:
        with self._cond:
            utt = self._current
            if utt is None:
                return
            self._append(frame)
            due = utt.passes.voiced(frame.end) if voiced else utt.passes.unvoiced(utt.end)
            if due:
                self._worker.wake()

    def pause(self) -> None:
        """The speaker just went quiet: decode everything heard so far once the hangover is
        in (a pass without it may cut a soft last consonant, and the final reuses that
        pass), and before that as soon as the guess's first silent audio is in.

        That first pass is for the guess: its words leave as soon as they are called
        finished, and, as it heard the voice end, it is also the final unless voice comes
        back (the hangover's pass is then moot: :attr:`~app.asr.schedule.Heard.VOICE_END`)."""
        with self._cond:
            utt = self._current
            if utt and utt.passes.pause(utt.end):
                self._worker.wake()

    def finalize(self, utterance: int) -> list[FinalEvent | LanguageEvent]:
        """The turn is over: its final, at once when the last partial heard it all.

        Returns that final for the caller to emit, after the language it settled if it did
        (not told to ``on_language``: the caller decides the endpoint under its own lock,
        which that hook takes); otherwise a final pass is queued and its result goes to
        the hooks' ``on_final`` from the worker.
        """
        with self._cond:
            utt = self._current
            if utt is None or utt.number != utterance:
                return []
            self._current = None
            self._last = utt
            until = utt.passes.finalize(utt.end)
            heard = utt.passes.final_heard(until)
            if heard is None:
                self._finals.append(_FinalJob(utt, until))
                self._cond.notify_all()
                return []
            locked = self._lock_language(utt.language, utt.language_probability, final=True)
            final = FinalEvent(t=self._clock.now(), turn=utt.number, text=utt.text,
                               audio_end=heard, reused=True, speaker=self._speaker)
        return [locked, final] if locked else [final]

    def resume(self, utterance: int, recent: list[AudioFrame]) -> bool:
        """The speaker went on after the endpoint: reopen the utterance just finalized.

        ``recent`` holds the latest frames (the pause and the new speech); those after the
        utterance's end are appended, so the next passes decode the whole question.
        Returns False (and begins a fresh utterance) when that utterance is gone.
        """
        with self._cond:
            utt = self._last
            if utt is None or utt.number != utterance:
                self._current = None
            else:  # a final pass of the first part, if any, is dropped
                self._finals = [job for job in self._finals if job.utterance is not utt]
                self._current = utt
                for frame in recent:
                    if beyond(frame.end, utt.end):
                        self._append(frame)
                utt.passes.resume(recent[-1].end)
                return True
        self.begin(utterance, recent[-1:])
        return False

    def discard(self, utterance: int) -> None:
        """Forget the current utterance without a final (it held no words)."""
        with self._cond:
            if self._current is not None and self._current.number == utterance:
                self._current = None

    def duration(self) -> float:
        with self._cond:
            return self._current.end - self._current.start if self._current else 0.0

    def _append(self, frame: AudioFrame) -> None:
        assert self._current is not None
        self._current.chunks.append(frame.samples)
        self._current.samples += len(frame.samples)

    def _wanted(self) -> Pass | None:
        """The pass the current utterance wants run (``cond`` held)."""
        return self._current.passes.wanted if self._current is not None else None

    # --- on the worker ---------------------------------------------------------------

    def take_job(self) -> Job | None:
        """A final waiting, else a pass over the newest audio unless spaced or moot
        (``cond`` held)."""
        if self._busy:
            return None
        utt = self._current
        if utt is not None and utt.passes.wanted is not None and utt.passes.moot(utt.end):
            # it would hear the same words, and slow down the words model scoring them,
            # which is what the guess waits for (decision 0027)
            utt.passes.drop()
        if not (self._finals or (self._wanted() is not None and not self._spaced())):
            return None
        final = self._finals.pop(0) if self._finals else None
        if final is not None:
            if utt is not None:
                utt.passes.drop()
            job: Job = partial(self._run_final, final)
        elif utt is not None:
            until = utt.passes.take(utt.end)
            # snapshot now: a pass never waits for newer audio, the next one covers it
            job = partial(self._spaced_after, partial(self._run_partial, utt, until, utt.audio(until)))
        else:
            return None
        self._busy = True
        return partial(self._guarded, job)

    def _spaced(self) -> bool:
        """A partial pass while the voice goes on, due before the last pass's rest is over
        (:data:`PARTIAL_SPACING`)?  Never the pause's pass."""
        return self._wanted() is not Pass.PAUSE and time.monotonic() < self._next_partial_at

    def ready_at(self) -> float | None:
        """When a partial held by :meth:`_spaced` becomes due (``time.monotonic()``), for
        the worker to wake up then; None when nothing is held (``cond`` held)."""
        held = self._wanted() is not None and not self._busy and self._spaced()
        return self._next_partial_at if held else None

    def _spaced_after(self, job: Job) -> None:
        """Run a pass, then hold the next partial for as long as it took, times the spacing."""
        start = time.monotonic()
        try:
            job()
        finally:
            end = time.monotonic()
            with self._cond:
                self._next_partial_at = end + PARTIAL_SPACING * (end - start)

    def job_done(self) -> None:
        self._busy = False

    def _guarded(self, job: Job) -> None:
        try:
            job()
        except Exception as exc:  # a failed pass must not kill the worker
            self._hooks.on_error(ErrorEvent(t=self._clock.now(), stage="asr",
                                            message=f"decoding failed: {exc}"))

    def _decode(self, audio: Samples, wanted: Callable[[], bool] | None = None, *,
                paused: bool) -> tuple[str, Hypothesis]:
        """``paused``: the audio ends in the speaker's pause, so these are the words an
        answer is asked for: decoded with ``config.pause_beam`` (see ``recheck``), their
        near-misses of the glossary mended (``config.mend_names``)."""
        beam = self._cfg.pause_beam if paused else 1
        recheck = self._recheck if paused and self._cfg.recheck_beam > beam else None
        hyp: Hypothesis = self._decoder.decode(audio, language=self._language, wanted=wanted,
                                               recheck=recheck, recheck_beam=self._cfg.recheck_beam,
                                               beam=beam, mend=paused and self._cfg.mend_names)
        self.passes += 1
        self.decode_seconds += hyp.seconds
        if is_hallucination(hyp, no_speech_threshold=self._cfg.no_speech_threshold,
                            log_prob_threshold=self._cfg.log_prob_threshold):
            return "", hyp
        return cut_sign_off(cut_repetition(hyp.text)), hyp

    def _lock_language(self, language: str, probability: float, *, final: bool = False,
                       seconds: float = 0.0) -> LanguageEvent | None:
        """Settle an undecided session's language (called under the lock)."""
        if self._language is not None or not language:
            return None
        if not final and (seconds < LOCK_MIN_AUDIO_S or probability < LOCK_PROBABILITY):
            return None
        self._language = language
        return LanguageEvent(t=self._clock.now(), language=language, probability=probability)

    def _still_wanted(self, utt: _Utterance, until: float) -> bool:
        """Is a partial pass over ``utt`` up to ``until`` still worth finishing?  Not once
        the speaker fell silent after ``until`` and a pass over all of it (the pause pass or
        the final) waits behind this one: while they talk on, every partial is a caption."""
        with self._cond:
            waiting = self._wanted() is Pass.PAUSE or any(job.utterance is utt for job in self._finals)
            return utt.passes.hears_voice(until) or not waiting

    def _run_partial(self, utt: _Utterance, until: float, audio: Samples) -> None:
        try:
            text, hyp = self._decode(audio, wanted=partial(self._still_wanted, utt, until),
                                     paused=utt.passes.hears_pause(until))
        except Superseded:
            return
        if not text:
            if utt.passes.hears_voice(until):
                self._hooks.on_no_words(utt.number, until)
            return
        with self._cond:
            locked = self._lock_language(hyp.language, hyp.language_probability,
                                         seconds=len(audio) / SAMPLE_RATE)
            shown = self._stabilizer.update(text) if utt is self._current else None
            utt.text = text
            utt.passes.decoded(until)
            utt.language, utt.language_probability = hyp.language, hyp.language_probability
        if locked:
            self._hooks.on_language(locked)
        # A turn that ended while we decoded keeps the text (its final, queued behind this
        # pass, reuses it) but shows no partial any more.
        if shown is not None and not utt.passes.finalizing:
            self._hooks.on_partial(PartialEvent(t=self._clock.now(), turn=utt.number, text=shown.text,
                                          stable=shown.stable, audio_end=until, hypothesis=text,
                                          speaker=self._speaker))

    def _run_final(self, job: _FinalJob) -> None:
        utt = job.utterance
        with self._cond:  # the pass the final was queued behind may have heard it all
            reused_end = utt.passes.final_heard(job.until)
        reused = reused_end is not None
        heard = job.until if reused_end is None else reused_end
        text, language, probability = utt.text, utt.language, utt.language_probability
        if not reused:
            decoded, hyp = self._decode(utt.audio(job.until), paused=True)
            if decoded:
                text, language, probability = decoded, hyp.language, hyp.language_probability
        with self._cond:
            resumed = not utt.passes.finalizing  # the speaker went on: this is no final any more
            if not resumed:
                utt.passes.final_ran()
        if text and not resumed:
            with self._cond:
                locked = self._lock_language(language, probability, final=True)
            if locked:
                self._hooks.on_language(locked)
            self._hooks.on_final(FinalEvent(t=self._clock.now(), turn=utt.number, text=text,
                                      audio_end=heard, reused=reused, speaker=self._speaker))
