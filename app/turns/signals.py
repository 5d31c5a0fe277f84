"""The end-of-turn signals, loaded once, scored off the audio thread, newest request only.

:class:`TurnSignals` loads what is installed and enabled (the words model, and Smart
Turn when the setting asks for it) and says in :attr:`TurnSignals.status` which signals
decide; one that is missing or fails to load is left out and the others (in the end
today's text rules) decide.  :class:`SignalWorker` runs the scoring on its own thread:
partials can come faster than a model call, and only the newest matters, so a new
request replaces one still waiting.  Results go to a callback on the worker's thread,
tagged with the text and audio they were computed for (see ``Endpointer.end_of_turn_scores``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from app.core.config import TurnConfig
from app.platform.cores import WORDS_THREADS
from app.platform.priority import in_thread
from app.turns.sound import SmartTurn, SoundUnavailable
from app.turns.words import WordsScorer, WordsUnavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SignalRequest:
    turn: int
    text: str
    """The current partial (what the words model scores)."""
    audio_end: float
    """Audio-clock end of ``audio`` when given, else of the audio the partial was decoded
    from (a sound verdict counts while no voice came after it)."""
    audio: npt.NDArray[np.int16] | None = None
    """The utterance's last ``WINDOW_S`` of audio up to ``audio_end`` (16 kHz), for Smart
    Turn; None: no sound."""
    spare_core: bool = False
    """The recogniser's next pass waits for this verdict, so the words model may borrow
    its idle core (:class:`app.turns.words.SpareCore`, decision 0029)."""


@dataclass(frozen=True, slots=True)
class SignalResult:
    turn: int
    text: str
    audio_end: float
    words_logp: float | None
    sound_p: float | None


class TurnSignals:
    """The loaded signals for one language; ``score`` is synchronous (worker or bench)."""

    def __init__(self, words: WordsScorer | None, sound: SmartTurn | None, status: str) -> None:
        self.words = words
        self.sound = sound
        self.status = status

    @classmethod
    def load(cls, cfg: TurnConfig, language: str, *, threads: int = WORDS_THREADS) -> TurnSignals:
        lang = language.split("-")[0]
        parts: list[str] = []
        words: WordsScorer | None = None
        sound: SmartTurn | None = None
        if not cfg.words_model:
            parts.append("words model off")
        elif lang not in cfg.words_languages:
            parts.append(f"words model not used for '{lang}' (not checked on it)")
        else:
            try:
                words = WordsScorer(threads=threads)
                parts.append("words model (SmolLM2-135M)")
            except WordsUnavailable as exc:
                parts.append(f"words model unavailable: {exc}")
        if cfg.smart_turn and cfg.smart_turn_weight > 0:
            try:
                sound = SmartTurn(threads=1)
                parts.append(f"Smart Turn v3.2 (weight {cfg.smart_turn_weight:g})")
            except SoundUnavailable as exc:
                parts.append(f"Smart Turn unavailable: {exc}")
        decide = "signals and text rules decide" if words or sound else "text rules decide"
        status = f"End of turn: {'; '.join(parts)}; {decide}."
        log.info(status)
        return cls(words, sound, status)

    def calibrate(self) -> bool:
        """One step of the timing the signals do once loaded (the words model's spare core,
        :meth:`WordsScorer.calibrate`); False once none is left."""
        return self.words is not None and self.words.calibrate()

    def score(self, request: SignalRequest) -> SignalResult:
        """Both signals for one request (their CPU cost is measured by ``bench signals``)."""
        words_logp = sound_p = None
        if self.words is not None and request.text.strip():
            try:
                words_logp = self.words.log_p_end(request.text, spare_core=request.spare_core)
            except Exception:  # one failed call must not stop the turn: the rules decide it
                log.exception("words model call failed")
        if self.sound is not None and request.audio is not None and len(request.audio):
            try:
                sound_p = self.sound.p_end(request.audio)
            except Exception:
                log.exception("Smart Turn call failed")
        return SignalResult(request.turn, request.text, request.audio_end, words_logp, sound_p)


class SignalWorker:
    """One thread scoring the newest request; ``on_result`` is called on that thread."""

    def __init__(self, load: Callable[[], TurnSignals], on_result: Callable[[SignalResult], None],
                 on_ready: Callable[[TurnSignals], None] | None = None) -> None:
        self._load = load
        self._on_result = on_result
        self._on_ready = on_ready
        self._cond = threading.Condition()
        self._pending: SignalRequest | None = None
        self._running = False
        self._busy = False
        self._thread: threading.Thread | None = None
        self.signals: TurnSignals | None = None
        """Set once loaded (on the worker thread, so start() returns at once)."""
        self.ready = threading.Event()

    def start(self) -> None:
        self._running = True
        # ahead of a video call on the cores, where the OS lets us (app.platform.priority)
        self._thread = threading.Thread(target=in_thread("decode", self._run), name="turn-signals",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._running = False
            self._pending = None
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def submit(self, request: SignalRequest) -> None:
        """Score this next; a request still waiting is dropped (it is older), but a pause's
        audio it carried goes on with the newer words (a partial landing while Smart Turn
        waits must not cost the pause its sound verdict)."""
        with self._cond:
            pending = self._pending
            if (pending is not None and pending.audio is not None and request.audio is None
                    and pending.turn == request.turn):
                request = replace(request, audio=pending.audio, audio_end=pending.audio_end)
            self._pending = request
            self._cond.notify_all()

    def idle(self) -> bool:
        with self._cond:
            return self._pending is None and not self._busy

    def _run(self) -> None:
        try:
            self.signals = self._load()
        except Exception as exc:  # never expected (load catches), but never fatal either
            log.exception("end-of-turn signals did not load")
            self.signals = TurnSignals(None, None, f"End of turn: signals failed ({exc}); text rules decide.")
        self.ready.set()
        if self._on_ready is not None:
            try:
                self._on_ready(self.signals)
            except Exception:
                log.exception("end-of-turn ready handler failed")
        calibrating = True  # between requests, until the signals have timed what they need
        while True:
            with self._cond:
                while self._running and self._pending is None and not calibrating:
                    self._cond.wait()
                if not self._running:
                    return
                request, self._pending = self._pending, None
                self._busy = True
            try:
                if request is None:
                    calibrating = self.signals.calibrate()
                    continue
                self._on_result(self.signals.score(request))
            except Exception:
                log.exception("end-of-turn result handler failed")
            finally:
                with self._cond:
                    self._busy = False
