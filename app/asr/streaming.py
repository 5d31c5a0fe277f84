"""Streaming recognition: one worker re-decoding the live utterance, newest audio first.

The audio thread only appends frames and says when a pass is worth running; the worker
snapshots the utterance when it starts a pass, so passes never queue behind each other:
a late pass covers more audio.  A pause is decoded for the guess at its first silent
frame, and again once the hangover is in unless that pass heard the voice end: then it
is the final, word for word (decision 0033).  A final jumps ahead of any partial.
Design notes: decision 0039.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

import numpy as np

from app.asr.decoder import AUTO, Hypothesis, Superseded, WhisperDecoder
from app.asr.guards import is_hallucination
from app.asr.loops import cut_repetition
from app.asr.stabilizer import LocalAgreement
from app.asr.worker import DecodeWorker, Job
from app.audio.frames import SAMPLE_RATE, AudioFrame, Samples
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
    samples: int = 0
    last_voiced_end: float = 0.0
    decoded_end: float = -1.0
    """Audio end of the newest pass that produced a transcript."""
    text: str = ""
    language: str = ""
    """Language of the newest pass with text (and its probability)."""
    language_probability: float = 0.0
    finalizing: bool = False
    guess_pass_due: bool = False
    """The speaker went quiet: decode once the guess's first silent audio is in."""
    pause_pass_due: bool = False
    """The speaker went quiet: decode once the hangover's audio is in."""

    @property
    def end(self) -> float:
        return self.start + self.samples / SAMPLE_RATE

    def voice_heard_by(self, until: float) -> bool:
        """Does a pass over the audio up to ``until`` hear every voiced frame so far?"""
        return until >= self.last_voiced_end - 1e-6

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
        self._hangover = pauses.hangover_ms / 1000
        self._guess_hangover = pauses.guess_hangover_ms / 1000
        self._next_partial_at = 0.0
        """``time.monotonic()`` before which no partial pass starts (see :meth:`_spaced`)."""
        self._speaker: Speaker = voice.speaker
        self.priority = 0 if voice.speaker == "interviewer" else 1
        self._interval = config.partial_interval_ms / 1000 if voice.captions else float("inf")
        self._stabilizer = LocalAgreement()
        self._worker = worker or DecodeWorker()
        self._cond = self._worker.cond
        self._current: _Utterance | None = None
        self._last: _Utterance | None = None
        """The utterance finalized last: a continuation reopens it."""
        self._pass_wanted = False
        self._pause_pass_wanted = False
        """The pass wanted is one that hears the pause (see :meth:`_still_wanted`)."""
        self._last_pass_request_end = 0.0
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
            return not self._busy and not self._finals and not self._pass_wanted

    # --- called from the audio thread ---------------------------------------------

    def begin(self, utterance: int, frames: list[AudioFrame]) -> None:
        with self._cond:
            self._current = _Utterance(number=utterance, start=frames[0].t, chunks=[])
            self._stabilizer.reset()
            self._last_pass_request_end = frames[0].t
            for frame in frames:
                self._append(frame)
            self._current.last_voiced_end = frames[-1].end

    def add(self, frame: AudioFrame, voiced: bool) -> None:
        with self._cond:
            utt = self._current
            if utt is None:
                return
            self._append(frame)
            if voiced:
                utt.last_voiced_end = frame.end
                utt.guess_pass_due = utt.pause_pass_due = False
                if frame.end - self._last_pass_request_end >= self._interval:
                    self._want_pass(frame.end)
            else:
                self._pass_if_due(utt)

    def pause(self) -> None:
        """The speaker just went quiet: decode everything heard so far once the hangover is
        in (a pass without it may cut a soft last consonant, and the final reuses that
        pass), and before that as soon as the guess's first silent audio is in.

        That first pass is for the guess: its words leave as soon as they are called
        finished, and, as it heard the voice end, it is also the final unless voice comes
        back (the hangover's pass then never runs: :meth:`_heard_voice_end`)."""
        with self._cond:
            utt = self._current
            if utt and utt.decoded_end < self._heard_until(utt) - 1e-6:  # no pass heard it all yet
                utt.guess_pass_due = self._guess_hangover < self._hangover - 1e-6
                utt.pause_pass_due = True
                self._pass_if_due(utt)

    def _pass_if_due(self, utt: _Utterance) -> None:
        """Ask for the pause's passes whose audio is in (``cond`` held); a pass still
        waiting for the worker when the next is due becomes that one."""
        if utt.guess_pass_due and utt.end >= utt.last_voiced_end + self._guess_hangover - 1e-6:
            utt.guess_pass_due = False
            self._want_pass(utt.end, pause=True)
        if utt.pause_pass_due and utt.end >= self._heard_until(utt) - 1e-6:
            utt.guess_pass_due = utt.pause_pass_due = False
            self._want_pass(utt.end, pause=True)

    def _heard_until(self, utt: _Utterance) -> float:
        """Where a pass over this utterance ends: the last voiced frame plus the hangover."""
        return utt.last_voiced_end + self._hangover

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
            self._pass_wanted = self._pause_pass_wanted = False
            utt.finalizing = True
            until = min(utt.end, self._heard_until(utt))
            if self._is_final(utt, until):
                locked = self._lock_language(utt.language, utt.language_probability, final=True)
                final = FinalEvent(t=self._clock.now(), turn=utt.number, text=utt.text,
                                   audio_end=utt.decoded_end, reused=True, speaker=self._speaker)
            else:
                self._finals.append(_FinalJob(utt, until))
                self._cond.notify_all()
                return []
        return [locked, final] if locked else [final]

    def _is_final(self, utt: _Utterance, until: float) -> bool:
        """Is the newest pass with words the final of a turn whose audio ends at ``until``
        (``cond`` held)?  Yes when it heard up to there, or heard the voice end: what
        follows it up to ``until`` is room tone, no evidence (:meth:`_heard_voice_end`)."""
        return bool(utt.text and (utt.decoded_end >= until - 1e-6 or self._heard_voice_end(utt)))

    def _heard_voice_end(self, utt: _Utterance) -> bool:
        """Did the newest pass with words hear every voiced frame *and* audio after the
        last one (the pause's first silent frame, for the guess)?  Then what came after it
        is what the VAD calls unvoiced: room tone, no evidence about the words.  Decoding it
        again only lets the noise flip a word the voice did not ("…works in Java" / "…in
        job"), and the guess made on that pass then misses (decision 0033).  A voiced
        frame after the pass moves ``last_voiced_end`` past it: new voice, a new pass."""
        return utt.decoded_end > utt.last_voiced_end + 1e-6

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
            else:
                utt.finalizing = False  # a final pass of the first part, if any, is dropped
                self._finals = [job for job in self._finals if job.utterance is not utt]
                self._current = utt
                for frame in recent:
                    if frame.end > utt.end + 1e-6:
                        self._append(frame)
                utt.last_voiced_end = recent[-1].end
                return True
        self.begin(utterance, recent[-1:])
        return False

    def discard(self, utterance: int) -> None:
        """Forget the current utterance without a final (it held no words)."""
        with self._cond:
            if self._current is not None and self._current.number == utterance:
                self._current = None
                self._pass_wanted = self._pause_pass_wanted = False

    def duration(self) -> float:
        with self._cond:
            return self._current.end - self._current.start if self._current else 0.0

    def _append(self, frame: AudioFrame) -> None:
        assert self._current is not None
        self._current.chunks.append(frame.samples)
        self._current.samples += len(frame.samples)

    def _want_pass(self, at: float, *, pause: bool = False) -> None:
        self._last_pass_request_end = at
        self._pass_wanted = True
        self._pause_pass_wanted |= pause
        self._worker.wake()

    # --- on the worker ---------------------------------------------------------------

    def take_job(self) -> Job | None:
        """A final waiting, else a pass over the newest audio unless spaced or moot
        (``cond`` held)."""
        if self._busy:
            return None
        if self._pass_wanted and self._adds_only_silence():
            self._pass_wanted = self._pause_pass_wanted = False
        if not (self._finals or (self._pass_wanted and not self._spaced())):
            return None
        final = self._finals.pop(0) if self._finals else None
        self._pass_wanted = self._pause_pass_wanted = False
        if final is not None:
            job: Job = partial(self._run_final, final)
        elif self._current is not None:
            utt = self._current
            until = min(utt.end, self._heard_until(utt))
            # snapshot now: a pass never waits for newer audio, the next one covers it
            job = partial(self._spaced_after, partial(self._run_partial, utt, until, utt.audio(until)))
        else:
            return None
        self._busy = True
        return partial(self._guarded, job)

    def _adds_only_silence(self) -> bool:
        """Did the newest pass hear every voiced frame, and is the hangover not in yet, or
        did it hear the voice end?  A pass now would hear the same words and less silence
        than the final's: the guess's pass is moot when a partial pass taken just before
        the voice stopped heard it all, and it would only slow down the words model
        scoring that partial (on two cores each makes the other ~20 ms slower), which is
        what the guess waits for.  The hangover's pass is moot once a pass heard the
        voice end: it would add only room tone, and that pass is the final
        (:meth:`_heard_voice_end`)."""
        utt = self._current
        return (utt is not None and utt.voice_heard_by(utt.decoded_end)
                and (utt.end < self._heard_until(utt) - 1e-6 or self._heard_voice_end(utt)))

    def _spaced(self) -> bool:
        """A partial pass while the voice goes on, due before the last pass's rest is over
        (:data:`PARTIAL_SPACING`)?  Never the pause's pass."""
        return not self._pause_pass_wanted and time.monotonic() < self._next_partial_at

    def ready_at(self) -> float | None:
        """When a partial held by :meth:`_spaced` becomes due (``time.monotonic()``), for
        the worker to wake up then; None when nothing is held (``cond`` held)."""
        held = self._pass_wanted and not self._busy and self._spaced()
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
                paused: bool, last_word: bool = False) -> tuple[str, Hypothesis]:
        """``paused``: the audio ends in the speaker's pause, so these are the words an
        answer is asked for: decoded with ``config.pause_beam`` (see ``recheck``), their
        near-misses of the glossary mended (``config.mend_names``); ``last_word``: with the
        last word's probability and timing (decision 0055)."""
        beam = self._cfg.pause_beam if paused else 1
        recheck = self._recheck if paused and self._cfg.recheck_beam > beam else None
        hyp: Hypothesis = self._decoder.decode(audio, language=self._language, wanted=wanted,
                                               recheck=recheck, recheck_beam=self._cfg.recheck_beam,
                                               beam=beam, mend=paused and self._cfg.mend_names,
                                               last_word=last_word)
        self.passes += 1
        self.decode_seconds += hyp.seconds
        if is_hallucination(hyp, no_speech_threshold=self._cfg.no_speech_threshold,
                            log_prob_threshold=self._cfg.log_prob_threshold):
            return "", hyp
        return cut_repetition(hyp.text), hyp

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
            waiting = self._pause_pass_wanted or any(job.utterance is utt for job in self._finals)
            return utt.voice_heard_by(until) or not waiting

    def _run_partial(self, utt: _Utterance, until: float, audio: Samples) -> None:
        paused = until > utt.last_voiced_end + 1e-6
        try:  # the last word costs a pass ~13 %: only at a pause, whose passes decide the turn
            text, hyp = self._decode(audio, wanted=partial(self._still_wanted, utt, until),
                                     paused=paused, last_word=paused)
        except Superseded:
            return
        if not text:
            if utt.voice_heard_by(until):
                self._hooks.on_no_words(utt.number, until)
            return
        with self._cond:
            locked = self._lock_language(hyp.language, hyp.language_probability,
                                         seconds=len(audio) / SAMPLE_RATE)
            shown = self._stabilizer.update(text) if utt is self._current else None
            utt.text, utt.decoded_end = text, until
            utt.language, utt.language_probability = hyp.language, hyp.language_probability
        if locked:
            self._hooks.on_language(locked)
        # A turn that ended while we decoded keeps the text (its final, queued behind this
        # pass, reuses it) but shows no partial any more.
        if shown is not None and not utt.finalizing:
            self._hooks.on_partial(PartialEvent(t=self._clock.now(), turn=utt.number, text=shown.text,
                                          stable=shown.stable, audio_end=until, hypothesis=text,
                                          speaker=self._speaker,
                                          last_word=hyp.last_word and hyp.last_word.shifted(utt.start)))

    def _run_final(self, job: _FinalJob) -> None:
        utt = job.utterance
        with self._cond:  # the pass the final was queued behind may have heard it all
            reused = self._is_final(utt, job.until)
            heard = utt.decoded_end if reused else job.until
        text, language, probability = utt.text, utt.language, utt.language_probability
        if not reused:
            decoded, hyp = self._decode(utt.audio(job.until), paused=True)
            if decoded:
                text, language, probability = decoded, hyp.language, hyp.language_probability
        with self._cond:
            resumed = not utt.finalizing  # the speaker went on: this is no final any more
        if text and not resumed:
            with self._cond:
                locked = self._lock_language(language, probability, final=True)
            if locked:
                self._hooks.on_language(locked)
            self._hooks.on_final(FinalEvent(t=self._clock.now(), turn=utt.number, text=text,
                                      audio_end=heard, reused=reused, speaker=self._speaker))
