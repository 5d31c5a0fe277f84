"""Echo detection: is the candidate's microphone only hearing the interviewer's speakers?

With speakers instead of headphones the microphone picks up the interviewer a few tens of
milliseconds after the loopback channel delivers it, quieter and smeared by the room.
Without this gate the interviewer's question would come back as "You: …".

The method in one sentence: the candidate frame is echo when the loudness contours (10 ms
log-energies in five bands) of the microphone's last half second follow the interviewer's
over the same span, shifted by some lag between 0 and 300 ms, with a Pearson correlation
of at least 0.6 — or 0.4 at the echo path's own delay, once an unmistakable echo (0.85)
has revealed it — while the interviewer was actually speaking.

Design notes: decision 0038.
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE, AudioFrame

SUB_MS = 10
"""Envelope window: 10 ms is shorter than any syllable yet holds a pitch period or two, so
the energy does not flicker with the glottal pulses."""
HOP_MS = 5
"""Windows overlap by half.  The two devices stamp frames on grids that can be offset by any
fraction of a window; at a 10 ms hop a 5 ms offset lost a noticeable share of the echo
frames caught, at 5 ms the worst offset is 2.5 ms, which the contours do not notice."""
_SUB = SAMPLE_RATE * SUB_MS // 1000
_HOP = SAMPLE_RATE * HOP_MS // 1000
_PER_S = 1000 // HOP_MS
_ROWS_PER_FRAME = FRAME_SAMPLES // _HOP

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
independent values per half second) and the best of 67 lags is kept, so two unrelated voices
now and then correlate well above zero.  0.6 is where unrelated voices and double talk are
rarely called echo while reverberant echo mostly is; higher loses reverberant echo, lower
lets unrelated speech through (figures: decision 0013)."""
ACQUIRE = 0.85
"""A correlation this high (above nearly all chance matches of two voices) reveals the echo
path: its lag is remembered in ``path_lag_ms`` (and replaced by the next such match)."""
ACQUIRE_ACTIVE = 0.5
"""…from a window in which the interviewer speaks at least half the time: a lone onset or
end of speech correlates highly at many lags."""
TRACK_THRESHOLD = 0.4
"""At the known path's delay the test is one comparison, not the best of 67, so chance scores
far lower and a looser bar is safe.  It is needed: a room's reflections (30–120 ms) smear
the contour, and in continuous speech (few pauses) even the right lag sags below the
search threshold.  0.4 catches the echo that searching alone misses, while the candidate's
frames over an echo are called echo hardly more often than at 0.5 — far below the
utterance-level line (figures: decision 0013)."""
TRACK_SLACK_MS = 20
"""The path's delay wanders by a hop or four (the devices' clocks, buffer re-sizing)."""

ACTIVE_DBFS = -50.0
"""The interviewer counts as speaking in a 10 ms window above this level: loopback
speech sits at −35…−15 dBFS and a digital line's silence far below."""
MIN_ACTIVE = 0.2
"""…and the interviewer must speak in at least a fifth of the window (100 ms of 500):
correlation over near-silence is the correlation of noise."""
FLOOR_DBFS = -80.0
"""Window energies are clamped here so digital silence (−∞) does not dominate the
correlation; it is below any real microphone's noise floor."""
RUN_MIN_MS = 600
"""A stretch of consecutive echo frames at least this long is one "echo run": a single
word's worth of echo is not worth bothering the user about, a sentence is."""
RUN_GAP_MS = 300
"""Non-echo frames shorter than this (the gaps between the interviewer's words) do not end
a run."""

UTTERANCE_ECHO_SHARE = 0.5
"""Drop a candidate utterance when at least half its voiced frames are echo: the interviewer
heard through a room scores near 1 per utterance, the candidate's own voice well below
half, alone or over an echo, so the middle is the point farthest from both (figures:
decision 0013)."""
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


def envelope(samples: npt.NDArray[np.float64]) -> Envelope:
    """Per-band log-energies (dBFS, clamped at FLOOR_DBFS) of 10 ms Hann windows every 5 ms
    over ``samples`` (scaled to ±1), shape (windows, bands)."""
    n = (len(samples) - _SUB) // _HOP + 1
    x = np.lib.stride_tricks.sliding_window_view(samples, _SUB)[::_HOP][:n]
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


class _Contour:
    """One stream's envelope rows, indexed by absolute hop number on the session clock.

    A frame's rows are the windows starting 5 ms before it (its first window reaches back
    into the previous frame, whose last 5 ms are carried over) up to 5 ms before its end;
    after a gap the reaching-back row is left out rather than made up.
    """

    def __init__(self, size: int) -> None:
        self.values = np.full((size, len(_BAND_BINS)), FLOOR_DBFS)
        self.index = np.full(size, -1, dtype=np.int64)
        self.size = size
        self.head = 0
        """One past the newest row."""
        self.first: int | None = None
        """The first row ever stored."""
        self._carry = np.zeros(_HOP)
        self._next = -1

    def add(self, frame: AudioFrame) -> Envelope:
        """Store ``frame``'s rows; returns them (for its level)."""
        samples = frame.samples.astype(np.float64) / 32768.0
        start = _hop_index(frame.t)
        if abs(frame.t * _PER_S - self._next) < 1.0:
            start = self._next  # contiguous: never let rounding open a hole or an overlap
        env = envelope(np.concatenate([self._carry, samples]))
        first = start - 1
        if start != self._next:  # a gap (or the very first frame): nothing to reach back to
            env, first = env[1:], start
        self._carry = samples[-_HOP:]
        self._next = start + _ROWS_PER_FRAME
        k = np.arange(first, first + len(env))
        self.values[k % self.size] = env
        self.index[k % self.size] = k
        self.head = max(self.head, first + len(env))
        if self.first is None:
            self.first = first
        return env

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
                 acquire: float = ACQUIRE, track_threshold: float = TRACK_THRESHOLD,
                 on_run: Callable[[int], None] | None = None) -> None:
        if min_lag_ms > max_lag_ms:
            raise ValueError(f"min_lag_ms {min_lag_ms} > max_lag_ms {max_lag_ms}")
        self.threshold = threshold
        self.acquire = acquire
        self.track_threshold = track_threshold
        self.path_lag_ms: int | None = None
        """The echo path's delay once an unmistakable echo was heard (candidate thread)."""
        self._window = window_ms // HOP_MS
        self._min_window = min(self._window, MIN_WINDOW_MS // HOP_MS)
        self._min_lag = min_lag_ms // HOP_MS
        self._max_lag = max_lag_ms // HOP_MS
        self._on_run = on_run
        self._lock = threading.Lock()
        self._ref = _Contour(int(_HISTORY_S * _PER_S) + self._window + self._max_lag)
        self._cand = _Contour(self._window * 2)
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
        with self._lock:
            self._ref.add(frame)

    def is_echo(self, frame: AudioFrame) -> bool:
        """Whether this candidate frame is (mostly) the interviewer's echo."""
        return self.decide(frame).echo

    def decide(self, frame: AudioFrame) -> EchoDecision:
        """:meth:`is_echo` with its evidence (correlation and lag)."""
        lo, hi = self._min_lag, self._max_lag
        with self._lock:
            env = self._cand.add(frame)
            last, cand_first = self._cand.head, self._cand.first or 0
            # The interviewer's thread may run behind (devices deliver in blocks): judge the
            # window that ends where its audio ends, so the short lags are never missing.
            end = min(last, self._ref.head)
            n = min(self._window, end - cand_first)
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
        # Window i is the reference shifted by lag (max_lag - i) hops: (lags, n, bands).
        windows = np.lib.stride_tricks.sliding_window_view(ref, n, axis=0)[:lags].transpose(0, 2, 1)
        complete = np.lib.stride_tricks.sliding_window_view(ref_ok, n)[:lags].all(axis=1)
        speaking = _level(ref) > ACTIVE_DBFS
        active = np.lib.stride_tricks.sliding_window_view(speaking, n)[:lags].mean(axis=1)
        # Whether to judge depends on the interviewer having spoken at some lag; which lag
        # wins must not (at the end of a sentence the short lags' windows are mostly silence
        # while the long ones still hold speech, and only the latter would compete).
        usable = complete
        if not (usable & (active >= MIN_ACTIVE)).any():
            return _NO_DECISION
        c = (cand - cand.mean(axis=0)).ravel()  # each band's contour about its own mean
        c_norm = float(np.sqrt(c @ c))
        if c_norm < 1e-6:  # a perfectly flat microphone: nothing to compare
            return _NO_DECISION
        w = windows[usable]
        w = (w - w.mean(axis=1, keepdims=True)).reshape(len(w), -1)
        norms = np.sqrt(np.einsum("ij,ij->i", w, w)) * c_norm
        r = (w @ c) / np.maximum(norms, 1e-9)
        lags_ms = (self._max_lag - np.flatnonzero(usable)) * HOP_MS
        best = int(np.argmax(r))
        lag, corr = int(lags_ms[best]), float(r[best])
        rich = float(active[np.flatnonzero(usable)[best]]) >= ACQUIRE_ACTIVE
        if corr >= self.acquire and rich:
            self.path_lag_ms = lag
        echo = corr >= self.threshold
        if not echo and self.path_lag_ms is not None:
            near = np.abs(lags_ms - self.path_lag_ms) <= TRACK_SLACK_MS
            if near.any():
                k = int(np.flatnonzero(near)[np.argmax(r[near])])
                if r[k] >= self.track_threshold:
                    return EchoDecision(True, float(r[k]), int(lags_ms[k]))
        return EchoDecision(echo, corr, lag)

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


def _hop_index(t: float) -> int:
    return round(t * _PER_S)
