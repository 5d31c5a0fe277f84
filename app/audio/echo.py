"""Echo detection: is the candidate's microphone only hearing the interviewer's speakers?

With speakers instead of headphones the microphone picks up the interviewer a few tens of
milliseconds after the loopback channel delivers it, quieter and smeared by the room.
Without this gate the interviewer's question would come back as "You: …".

The method in one sentence: the candidate frame is echo when the loudness contours (10 ms
log-energies in five bands) of the microphone's last half second follow the interviewer's
over the same span, shifted by some lag between 0 and 300 ms, with a Pearson correlation
of at least 0.6 while the interviewer was actually speaking.

Why a loudness contour rather than the waveform: a room (and the speaker, the microphone,
their gain controls and noise suppression) changes the waveform's phase and spectrum
beyond recognition but keeps *when* the sound is loud; syllables are 100–250 ms long, so
10 ms energies follow them closely while being immune to phase.  Correlating logs makes
the test blind to the echo's level (−6 or −30 dB are the same), and the candidate's own
voice on top of the echo (double talk) reshapes the contour, so the correlation drops and
the frame is kept.  The cost is three 160-point FFTs and 34 dot products of 250 numbers per
30 ms frame: about 1 % of one core.

Per frame the verdict is noisy at the edges (the first ~0.1 s of an echo, the instants the
candidate pauses inside double talk), so decide per *utterance*: :meth:`EchoGate.echo_share`
says which part of a span's voiced frames were echo, and an utterance with at least
UTTERANCE_ECHO_SHARE of them is the interviewer's, not the candidate's.
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.audio.frames import SAMPLE_RATE, AudioFrame, Samples

SUB_MS = 10
"""Envelope resolution: 10 ms is shorter than any syllable yet long enough that the room's
phase scrambling averages out inside one sub-frame."""
_SUB = SAMPLE_RATE * SUB_MS // 1000
_PER_S = 1000 // SUB_MS

WINDOW_MS = 500
"""Half a second holds 2–3 syllables: enough contour for two unrelated voices to disagree,
short enough that the gate reacts (and lets the candidate through) within ~0.3 s."""
MIN_WINDOW_MS = 250
"""At the start of a session the window is shorter; below this there is too little contour
to judge, and the frame is not echo."""
MAX_LAG_MS = 300
"""Loopback → speaker → room → microphone is 20–200 ms on real machines (output and input
buffers included, worse with Bluetooth speakers); 300 ms covers it with margin."""
MIN_LAG_MS = -30
"""The two streams are stamped by separate devices that start a few ms apart, so the echo
may appear up to one frame *before* the reference on the session clock."""
THRESHOLD = 0.6
"""Pearson r of the band contours.  Chance is not zero: speech contours are smooth (few
independent values per half second) and the best of 34 lags is kept, so two unrelated voices
reach 0.5–0.8 now and then.  Measured on synthetic speech (tests/test_echo.py, not on the
dev corpora): at 0.6 unrelated voices and double talk are called echo in ≤ 20 % of frames,
while an echo with a reverb tail (RT60 0.4–0.6 s) or discrete reflections is called echo in
≥ 80 % (a plain delayed copy in 99 %).  0.7 loses a third of reverberant echo; 0.5 lets a
quarter of unrelated speech through."""
ACTIVE_DBFS = -50.0
"""The interviewer counts as speaking in a 10 ms sub-frame above this level: loopback
speech sits at −35…−15 dBFS and a digital line's silence far below."""
MIN_ACTIVE = 0.2
"""…and the interviewer must speak in at least a fifth of the window (100 ms of 500):
correlation over near-silence is the correlation of noise."""
FLOOR_DBFS = -80.0
"""Sub-frame energies are clamped here so digital silence (−∞) does not dominate the
correlation; it is below any real microphone's noise floor."""
RUN_MIN_MS = 600
"""A stretch of consecutive echo frames at least this long is one "echo run": a single
word's worth of echo is not worth bothering the user about, a sentence is."""
RUN_GAP_MS = 300
"""Non-echo frames shorter than this (the gaps between the interviewer's words) do not end
a run."""

UTTERANCE_ECHO_SHARE = 0.5
"""Drop a candidate utterance when at least half its voiced frames are echo: reverberant
echo scores ≥ 0.8 frame by frame, the candidate's own voice (even over an echo) ≤ 0.2, so
the middle is the point farthest from both."""
VOICED_RANGE_DB = 30.0
"""For :meth:`EchoGate.echo_share`, a frame is voiced when within this range of the span's
loudest: the pre-roll's and the pauses' quiet frames would otherwise dilute the share."""
_VERDICTS_S = 35.0
"""Verdicts kept for :meth:`EchoGate.echo_share`: longer than the longest utterance (30 s)."""

HEADPHONES_HINT = ("Your microphone is hearing the interviewer through your speakers; "
                   "use headphones so your own words are transcribed cleanly.")
"""What the status bar says (``StatusEvent(stage="echo", …)``) when echo keeps coming back."""

_HISTORY_S = 3.0
"""Reference kept: window + the largest lag + generous slack for the two threads' skew."""

_MAX_SKEW = _PER_S // 2
"""A reference more than 0.5 s behind the candidate is stalled (or off): no verdict."""

Envelope = npt.NDArray[np.float64]


BANDS_HZ = (0, 500, 1000, 2000, 4000, 8001)
"""Edges of the bands whose contours are compared.  A room or a loudspeaker colours the
sound by a fixed gain per band (a constant offset in log, removed by the correlation), so
an echo keeps every band's contour; two different voices differ band by band, which
multiplies the evidence a half-second window holds."""
_BIN_HZ = SAMPLE_RATE / _SUB
_BAND_BINS = [(int(np.ceil(lo / _BIN_HZ)), int(np.ceil(hi / _BIN_HZ)))
              for lo, hi in itertools.pairwise(BANDS_HZ)]
_WINDOW = np.hanning(_SUB)


def envelope(samples: Samples) -> Envelope:
    """Per-band 10 ms log-energies (dBFS, clamped at FLOOR_DBFS), shape (sub-frames, bands)."""
    n = len(samples) // _SUB
    x = samples[: n * _SUB].astype(np.float64).reshape(n, _SUB) / 32768.0
    spec = np.abs(np.fft.rfft(x * _WINDOW, axis=1)) ** 2 / _SUB
    power = np.stack([spec[:, lo:hi].sum(axis=1) for lo, hi in _BAND_BINS], axis=1)
    env: Envelope = np.maximum(10.0 * np.log10(np.maximum(power, 1e-12)), FLOOR_DBFS)
    return env


@dataclass(frozen=True, slots=True)
class EchoDecision:
    """One candidate frame's verdict and the evidence for it (for logs and tuning)."""

    echo: bool
    correlation: float
    """Best Pearson r over the lags (NaN when the interviewer was silent or no contour)."""
    lag_ms: int
    """The lag of the best correlation: the echo path's delay when ``echo`` is true."""


_NO_DECISION = EchoDecision(False, float("nan"), 0)


class _Ring:
    """Envelope rows indexed by absolute sub-frame number on the session clock."""

    def __init__(self, size: int) -> None:
        self.values = np.full((size, len(_BAND_BINS)), FLOOR_DBFS)
        self.index = np.full(size, -1, dtype=np.int64)
        self.size = size

    def put(self, first: int, values: Envelope) -> None:
        k = np.arange(first, first + len(values))
        self.values[k % self.size] = values
        self.index[k % self.size] = k

    def get(self, first: int, count: int) -> tuple[Envelope, npt.NDArray[np.bool_]]:
        """``count`` rows from ``first``, and which of them are really stored."""
        k = np.arange(first, first + count)
        present = self.index[k % self.size] == k
        return np.where(present[:, None], self.values[k % self.size], FLOOR_DBFS), present


class EchoGate:
    """Tells whether a candidate frame is the interviewer's audio heard by the microphone.

    Thread-safe: ``feed_reference`` runs on the interviewer's audio thread and ``is_echo``
    on the candidate's; each holds the lock only to copy a few hundred floats.  Both take
    frames stamped on the same session clock.  ``on_run`` (if given) is called on the
    candidate's thread with the new ``echo_runs`` count each time a run of echo reaches
    RUN_MIN_MS, so the caller can suggest headphones (e.g. from the second run on).
    """

    def __init__(self, *, threshold: float = THRESHOLD, window_ms: int = WINDOW_MS,
                 min_lag_ms: int = MIN_LAG_MS, max_lag_ms: int = MAX_LAG_MS,
                 on_run: Callable[[int], None] | None = None) -> None:
        if min_lag_ms > max_lag_ms:
            raise ValueError(f"min_lag_ms {min_lag_ms} > max_lag_ms {max_lag_ms}")
        self.threshold = threshold
        self._window = window_ms // SUB_MS
        self._min_window = min(self._window, MIN_WINDOW_MS // SUB_MS)
        self._min_lag = min_lag_ms // SUB_MS
        self._max_lag = max_lag_ms // SUB_MS
        self._on_run = on_run
        self._lock = threading.Lock()
        self._ref = _Ring(int(_HISTORY_S * _PER_S) + self._window + self._max_lag)
        self._cand = _Ring(self._window * 2)
        self._cand_first: int | None = None
        self._ref_head = 0
        """One past the newest reference sub-frame."""
        # Run tracking: candidate thread only.
        self._run_start: float | None = None
        self._run_last: float | None = None
        self._run_counted = False
        self.echo_runs = 0
        """Echo runs of at least RUN_MIN_MS so far (read from any thread)."""
        self.echo_frames = 0
        self.frames = 0
        self._verdicts: collections.deque[tuple[float, float, bool]] = collections.deque(
            maxlen=int(_VERDICTS_S * 1000 / 30))
        """(frame start, level dBFS, echo) of recent candidate frames, for echo_share."""

    def feed_reference(self, frame: AudioFrame) -> None:
        """An interviewer frame (call from the interviewer's audio thread, every frame)."""
        env = envelope(frame.samples)
        with self._lock:
            first = _sub_index(frame.t)
            self._ref.put(first, env)
            self._ref_head = max(self._ref_head, first + len(env))

    def is_echo(self, frame: AudioFrame) -> bool:
        """Whether this candidate frame is (mostly) the interviewer's echo."""
        return self.decide(frame).echo

    def decide(self, frame: AudioFrame) -> EchoDecision:
        """:meth:`is_echo` with its evidence (correlation and lag)."""
        env = envelope(frame.samples)
        last = _sub_index(frame.t) + len(env)  # one past the frame's last sub-frame
        lo, hi = self._min_lag, self._max_lag
        with self._lock:
            self._cand.put(last - len(env), env)
            if self._cand_first is None:
                self._cand_first = last - len(env)
            # The interviewer's thread may run behind (devices deliver in blocks): judge the
            # window that ends where its audio ends, so the short lags are never missing.
            end = min(last, self._ref_head)
            n = min(self._window, end - self._cand_first)
            if last - end > _MAX_SKEW or n <= 0:
                n = 0
            cand, cand_ok = self._cand.get(end - n, n)
            # Reference spans [end - n - hi, end - lo): every lag's window inside it.
            ref, ref_ok = self._ref.get(end - n - hi, n + hi - lo)
        decision = self._judge(cand, cand_ok, ref, ref_ok, n, hi - lo + 1)
        level = float(np.max(_level(env))) if len(env) else FLOOR_DBFS
        with self._lock:
            self._verdicts.append((frame.t, level, decision.echo))
        self._track_run(frame, decision.echo)
        return decision

    def echo_share(self, start: float, end: float) -> float:
        """Which part (0–1) of the candidate's voiced frames starting in [start, end) were
        echo; 0 when none were judged.  Call from any thread (e.g. the ASR worker, with an
        utterance's span, before showing its partial or final)."""
        with self._lock:
            span = [(level, echo) for t, level, echo in self._verdicts if start <= t < end]
        if not span:
            return 0.0
        loudest = max(level for level, _ in span)
        voiced = [echo for level, echo in span if level >= loudest - VOICED_RANGE_DB]
        return sum(voiced) / len(voiced)

    def _judge(self, cand: Envelope, cand_ok: npt.NDArray[np.bool_], ref: Envelope,
               ref_ok: npt.NDArray[np.bool_], n: int, lags: int) -> EchoDecision:
        if n < self._min_window or not cand_ok.all():
            return _NO_DECISION
        # Window i is the reference shifted by lag (max_lag - i) sub-frames: (lags, n, bands).
        windows = np.lib.stride_tricks.sliding_window_view(ref, n, axis=0)[:lags].transpose(0, 2, 1)
        complete = np.lib.stride_tricks.sliding_window_view(ref_ok, n)[:lags].all(axis=1)
        speaking = _level(ref) > ACTIVE_DBFS
        active = np.lib.stride_tricks.sliding_window_view(speaking, n)[:lags].mean(axis=1)
        usable = complete & (active >= MIN_ACTIVE)
        if not usable.any():
            return _NO_DECISION
        c = (cand - cand.mean(axis=0)).ravel()  # each band's contour about its own mean
        c_norm = float(np.sqrt(c @ c))
        if c_norm < 1e-6:  # a perfectly flat microphone: nothing to compare
            return _NO_DECISION
        w = windows[usable]
        w = (w - w.mean(axis=1, keepdims=True)).reshape(len(w), -1)
        norms = np.sqrt(np.einsum("ij,ij->i", w, w)) * c_norm
        r = (w @ c) / np.maximum(norms, 1e-9)
        best = int(np.argmax(r))
        lag = (self._max_lag - int(np.flatnonzero(usable)[best])) * SUB_MS
        corr = float(r[best])
        return EchoDecision(corr >= self.threshold, corr, lag)

    def _track_run(self, frame: AudioFrame, echo: bool) -> None:
        self.frames += 1
        if not echo:
            if self._run_last is not None and frame.t - self._run_last > RUN_GAP_MS / 1000:
                self._run_start = self._run_last = None
                self._run_counted = False
            return
        self.echo_frames += 1
        if self._run_start is None:
            self._run_start = frame.t
        self._run_last = frame.end
        if not self._run_counted and frame.end - self._run_start >= RUN_MIN_MS / 1000:
            self._run_counted = True
            self.echo_runs += 1
            if self._on_run is not None:
                self._on_run(self.echo_runs)


def _level(env: Envelope) -> npt.NDArray[np.float64]:
    """Broadband dBFS of each envelope row (the bands' powers summed)."""
    level: npt.NDArray[np.float64] = 10.0 * np.log10(np.sum(10.0 ** (env / 10.0), axis=1))
    return level


def _sub_index(t: float) -> int:
    return round(t * _PER_S)
