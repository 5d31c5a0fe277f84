"""Any rate / channel count / sample type in, 16 kHz mono int16 frames out.

Everything here works block by block and keeps its state between blocks, so a live
device (whose blocks have arbitrary sizes) and a file (read in chunks) go through the
same code and produce the same samples: no clicks or phase jumps at block edges.

The resampler is a band-limited windowed-sinc interpolator (Kaiser window) evaluated at
exact rational positions: output ``n`` sits at input position ``n * in_rate / out_rate``,
tracked with integers so long sessions never drift.  Filter taps for the ``L`` distinct
fractional positions are tabulated once (``L = out_rate / gcd``, e.g. 1 for 48 kHz, 160
for 44.1 kHz).  Its look-ahead is a handful of input samples (about 1 ms), so it adds
no noticeable latency. Design notes: decision 0038.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE, AudioFrame, Samples

Float32 = npt.NDArray[np.float32]



class AudioError(ValueError):
    """A problem the user can fix (bad file, missing device), said as one clear sentence.

    Lives here, in the module every source imports, so that importing the file source
    never pulls in PortAudio.
    """


_ZERO_CROSSINGS = 16
"""Sinc lobes per side: with the Kaiser window below, aliases land below about -80 dB."""
_ROLLOFF = 0.92
"""Cutoff as a fraction of the lower Nyquist: the last 8 % is the transition band."""
_KAISER_BETA = 8.6
_MAX_TABLE_PHASES = 4096
"""Beyond this many fractional positions (odd rates) taps are computed per block."""


def to_mono_float(block: npt.NDArray[np.generic]) -> Float32:
    """Scale any integer or float sample type to [-1, 1] and average the channels.

    ``block`` is ``(frames,)`` or ``(frames, channels)``.  Unsigned 8-bit is centred on
    128 (as WAV stores it); wider integers are scaled by their full range so 24-bit
    audio stored in int32 containers keeps its level.
    """
    data = np.asarray(block)
    if data.dtype.kind == "u":
        info = np.iinfo(data.dtype)
        middle = (int(info.max) + 1) // 2
        samples: Float32 = (data.astype(np.float32) - np.float32(middle)) / np.float32(middle)
    elif data.dtype.kind == "i":
        scale = float(-int(np.iinfo(data.dtype).min))
        samples = data.astype(np.float32) / np.float32(scale)
    elif data.dtype.kind == "f":
        samples = data.astype(np.float32, copy=False)
    else:
        raise ValueError(f"unsupported sample type {data.dtype}")
    if samples.ndim == 2:
        samples = samples.mean(axis=1, dtype=np.float32) if samples.shape[1] > 1 else samples[:, 0]
    elif samples.ndim != 1:
        raise ValueError(f"expected (frames,) or (frames, channels) audio, got shape {data.shape}")
    return np.ascontiguousarray(samples, dtype=np.float32)


def float_to_int16(samples: Float32) -> Samples:
    """Round and clip: a float overshoot (resampler ringing, hot float files) must not wrap."""
    scaled = np.rint(samples * np.float32(32768.0))
    out: Samples = np.clip(scaled, -32768, 32767).astype(np.int16)
    return out


class Resampler:
    """Streaming band-limited resampler for float32 mono audio.

    Feed blocks of any size to :meth:`process`; each call returns every output sample
    whose filter window is already covered by input.  :meth:`flush` ends the stream
    (zeros after the last sample) and returns the rest, so a whole signal resampled in
    one call and in many blocks gives the same samples.
    """

    def __init__(self, in_rate: int, out_rate: int = SAMPLE_RATE) -> None:
        if in_rate <= 0 or out_rate <= 0:
            raise ValueError(f"sample rates must be positive, got {in_rate} -> {out_rate}")
        g = math.gcd(in_rate, out_rate)
        self.in_rate, self.out_rate = in_rate, out_rate
        self._up, self._down = out_rate // g, in_rate // g  # output n at input n*down/up
        ratio = min(1.0, out_rate / in_rate)
        self._cutoff = 0.5 * ratio * _ROLLOFF  # cycles per input sample
        self._half = math.ceil(_ZERO_CROSSINGS / ratio)  # taps per side, in input samples
        self._table: Float32 | None = (
            self._taps(np.arange(self._up) / self._up) if self._up <= _MAX_TABLE_PHASES else None
        )
        # Input history: starts with `half` zeros so output 0 (at input 0) has a full window.
        self._buffer: Float32 = np.zeros(self._half, dtype=np.float32)
        self._buffer_start = -self._half  # input index of _buffer[0]
        self._received = 0  # input samples seen so far
        self._produced = 0  # output samples emitted so far

    @property
    def passthrough(self) -> bool:
        return self.in_rate == self.out_rate

    def _taps(self, frac: npt.NDArray[np.float64]) -> Float32:
        """Filter taps for outputs at ``floor + frac``: one row of 2*half weights per frac.

        Row ``r`` weights input samples ``floor - half + 1 .. floor + half``.
        """
        offsets = np.arange(-self._half + 1, self._half + 1, dtype=np.float64)
        u = offsets[None, :] - frac[:, None]  # input index minus output position
        window = np.i0(_KAISER_BETA * np.sqrt(np.clip(1.0 - (u / self._half) ** 2, 0.0, 1.0)))
        taps = 2.0 * self._cutoff * np.sinc(2.0 * self._cutoff * u) * window / np.i0(_KAISER_BETA)
        return taps.astype(np.float32)

    def process(self, block: Float32) -> Float32:
        if self.passthrough:
            return np.asarray(block, dtype=np.float32)
        self._buffer = np.concatenate([self._buffer, np.asarray(block, dtype=np.float32)])
        self._received += len(block)
        return self._emit(available=self._received)

    def flush(self) -> Float32:
        """Finish the stream: outputs up to the last input position, zero-padded beyond it."""
        if self.passthrough:
            return np.zeros(0, dtype=np.float32)
        end = self._received
        self._buffer = np.concatenate([self._buffer, np.zeros(self._half, dtype=np.float32)])
        self._received += self._half
        out = self._emit(available=self._received, limit=-(-end * self._up // self._down))
        self._received = end
        return out

    def _emit(self, available: int, limit: int | None = None) -> Float32:
        # Output n needs inputs up to floor(n*down/up) + half, all < available.
        last = ((available - self._half) * self._up - 1) // self._down  # largest ready n
        stop = last + 1 if limit is None else min(last + 1, limit)
        n = np.arange(self._produced, max(stop, self._produced), dtype=np.int64)
        if len(n) == 0:
            return np.zeros(0, dtype=np.float32)
        base, phase = np.divmod(n * self._down, self._up)
        taps = self._table[phase] if self._table is not None else self._taps(phase / self._up)
        windows = np.lib.stride_tricks.sliding_window_view(self._buffer, 2 * self._half)
        rows = windows[base - self._half + 1 - self._buffer_start]
        out: Float32 = np.einsum("ij,ij->i", rows, taps).astype(np.float32)
        self._produced = int(n[-1]) + 1
        self._trim()
        return out

    def _trim(self) -> None:
        """Drop input no future output can reach, so memory stays bounded."""
        next_base = self._produced * self._down // self._up
        keep_from = next_base - self._half + 1
        drop = keep_from - self._buffer_start
        if drop > 0:
            self._buffer = self._buffer[drop:]
            self._buffer_start += drop


class Converter:
    """Raw device/file blocks -> 16 kHz mono int16, with resampler state across blocks."""

    def __init__(self, in_rate: int) -> None:
        self._resampler = Resampler(in_rate, SAMPLE_RATE)

    def process(self, block: npt.NDArray[np.generic]) -> Samples:
        return float_to_int16(self._resampler.process(to_mono_float(block)))

    def flush(self) -> Samples:
        return float_to_int16(self._resampler.flush())


def convert(block: npt.NDArray[np.generic], rate: int) -> Samples:
    """One-shot conversion of a whole signal (tests, short clips)."""
    converter = Converter(rate)
    return np.concatenate([converter.process(block), converter.flush()])


class FrameChunker:
    """Cuts a sample stream into exact 30 ms frames stamped on the audio clock.

    A frame's ``t`` is the number of samples emitted before it divided by 16 kHz, so
    times are exact multiples of 0.03 s and never drift from the audio.  :meth:`skip_to`
    is the one place where time is allowed to jump (a device came back after a gap).
    """

    def __init__(self) -> None:
        self._pending: Samples = np.zeros(0, dtype=np.int16)
        self._position = 0  # samples emitted (or skipped) so far

    @property
    def t(self) -> float:
        """Session time of the next frame's first sample."""
        return self._position / SAMPLE_RATE

    @property
    def pending(self) -> int:
        return len(self._pending)

    def push(self, samples: Samples) -> list[AudioFrame]:
        data = np.concatenate([self._pending, np.asarray(samples, dtype=np.int16)])
        count = len(data) // FRAME_SAMPLES
        size = FRAME_SAMPLES
        frames = [self._frame(data[i * size : (i + 1) * size]) for i in range(count)]
        self._pending = data[count * FRAME_SAMPLES :].copy()
        return frames

    def flush(self) -> AudioFrame | None:
        """The partial last frame, zero-padded to full length (None if nothing is pending)."""
        if len(self._pending) == 0:
            return None
        padded = np.zeros(FRAME_SAMPLES, dtype=np.int16)
        padded[: len(self._pending)] = self._pending
        self._pending = np.zeros(0, dtype=np.int16)
        return self._frame(padded)

    def skip_to(self, t: float) -> float:
        """Move the next frame to ``t`` (rounded up to the 30 ms grid) if that is later.

        Pending samples are dropped, so call :meth:`flush` first to keep them.  Returns
        the seconds skipped (0 if ``t`` is not ahead of the audio clock).
        """
        target = math.ceil(t * SAMPLE_RATE / FRAME_SAMPLES - 1e-9) * FRAME_SAMPLES
        self._pending = np.zeros(0, dtype=np.int16)
        if target <= self._position:
            return 0.0
        skipped = (target - self._position) / SAMPLE_RATE
        self._position = target
        return skipped

    def _frame(self, samples: Samples) -> AudioFrame:
        frame = AudioFrame(t=self._position / SAMPLE_RATE, samples=samples.copy())
        self._position += FRAME_SAMPLES
        return frame


def frames_of(samples: Iterable[Samples]) -> list[AudioFrame]:
    """All frames of a finished stream, last one zero-padded (tests and offline tools)."""
    chunker = FrameChunker()
    frames = [f for block in samples for f in chunker.push(block)]
    last = chunker.flush()
    return [*frames, last] if last is not None else frames
