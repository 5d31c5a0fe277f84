"""Replay of a recording as if it were a live interviewer, paced on the wall clock.

Pacing is absolute: frame ``k`` is handed over at ``origin + (k + 1) * 0.03 / speed``,
the instant its last sample would have arrived from a microphone.  A slow consumer
therefore delays frames but never accumulates drift, and latency measured against the
session clock means the same thing as in a live session.

WAV files (PCM 8/16/24/32-bit, IEEE float 32/64-bit, WAVE_FORMAT_EXTENSIBLE) are read
with a small RIFF parser (Python 3.11's ``wave`` rejects float and extensible files) and
converted with :mod:`app.audio.resample`.  The header's rate, channels and length are
checked before anything is allocated for them: a replay costs what the file's size says.
Anything else is decoded with PyAV (installed with faster-whisper) when available.

Design notes: decision 0038.
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from app.audio.frames import (
    FRAME_SAMPLES,
    SAMPLE_RATE,
    AudioFrame,
    ErrorHandler,
    FrameHandler,
    Samples,
    ThreadedSource,
)
from app.audio.resample import AudioError, Converter, FrameChunker
from app.core.clock import SessionClock

_BLOCK_SECONDS = 0.5
"""Decode this much at a time: small enough to start at once, big enough to be cheap."""
_FRAME_SECONDS = FRAME_SAMPLES / SAMPLE_RATE

MIN_RATE, MAX_RATE = 8_000, 192_000
"""Sample rates a recording can have: telephone audio (8 kHz) to studio masters (192 kHz).
A header claiming more is damaged or made to cost: the resampler's filter and each read
block grow with the rate, and a 1 MB file claiming a huge rate took 1.7x a normal run's
memory to replay nothing."""
MAX_CHANNELS = 32
"""More than any recording layout (7.1.4 is 12, ambisonics of third order 16): beyond it
a header is damaged, and each block read grows with the channels."""
MAX_FMT_BYTES = 4096
"""A 'fmt ' chunk is 16 to 40 bytes; a header claiming megabytes is not read into memory."""

_PCM, _FLOAT, _EXTENSIBLE = 0x0001, 0x0003, 0xFFFE
_FORMAT_NAMES = {0x0002: "MS ADPCM", 0x0006: "A-law", 0x0007: "µ-law", 0x0011: "IMA ADPCM",
                 0x0055: "MP3"}


_DTYPES: dict[str, np.dtype[np.generic]] = {
    "i8": np.dtype(np.uint8), "i16": np.dtype("<i2"), "i24": np.dtype("<i4"),
    "i32": np.dtype("<i4"), "f32": np.dtype("<f4"), "f64": np.dtype("<f8"),
}


@dataclass(frozen=True, slots=True)
class WavInfo:
    path: Path
    rate: int
    channels: int
    dtype: np.dtype[np.generic]
    sample_bytes: int
    data_offset: int
    frames: int

    @property
    def block_align(self) -> int:
        return self.channels * self.sample_bytes

    @property
    def duration(self) -> float:
        return self.frames / self.rate


def read_wav_info(path: Path) -> WavInfo:
    """Parse a RIFF/WAVE header, or raise AudioError saying exactly what is wrong."""
    with path.open("rb") as f:
        header = f.read(12)
        if len(header) < 12 or header[:4] not in (b"RIFF", b"RF64") or header[8:12] != b"WAVE":
            raise AudioError(f"{path}: not a WAV file (no RIFF/WAVE header)")
        fmt: bytes | None = None
        while True:
            chunk = f.read(8)
            if len(chunk) < 8:
                missing = "'fmt ' chunk" if fmt is None else "'data' chunk"
                raise AudioError(f"{path}: corrupt WAV file: no {missing}")
            chunk_id, size = chunk[:4], struct.unpack("<I", chunk[4:])[0]
            if chunk_id == b"fmt ":
                if size > MAX_FMT_BYTES:
                    raise AudioError(f"{path}: corrupt WAV file: 'fmt ' chunk claims {size} bytes")
                fmt = f.read(size)
            elif chunk_id == b"data":
                if fmt is None:
                    raise AudioError(f"{path}: corrupt WAV file: 'data' chunk before 'fmt ' chunk")
                return _wav_info(path, fmt, f.tell(), size, _file_size(f))
            else:
                f.seek(size, 1)
            if size % 2:
                f.seek(1, 1)  # RIFF chunks are word aligned


def _file_size(f: BinaryIO) -> int:
    here = f.tell()
    end = f.seek(0, 2)
    f.seek(here)
    return end


def _wav_info(path: Path, fmt: bytes, offset: int, size: int, file_size: int) -> WavInfo:
    if len(fmt) < 16:
        raise AudioError(f"{path}: corrupt WAV file: 'fmt ' chunk is {len(fmt)} bytes, need 16")
    tag, channels, rate, _, _, bits = struct.unpack("<HHIIHH", fmt[:16])
    if tag == _EXTENSIBLE and len(fmt) >= 26:
        tag = struct.unpack("<H", fmt[24:26])[0]  # first two bytes of the sub-format GUID
    if channels < 1 or rate < 1:
        raise AudioError(f"{path}: corrupt WAV file: {channels} channels at {rate} Hz")
    if not MIN_RATE <= rate <= MAX_RATE:
        raise AudioError(f"{path}: unsupported WAV sample rate {rate} Hz: a recording is "
                         f"{MIN_RATE // 1000}-{MAX_RATE // 1000} kHz (the header may be damaged); "
                         "convert it, e.g. `sox in.wav -r 16000 out.wav`")
    if channels > MAX_CHANNELS:
        raise AudioError(f"{path}: corrupt WAV file: {channels} channels (at most {MAX_CHANNELS})")
    dtype = _sample_dtype(path, tag, bits)
    sample_bytes = bits // 8
    # Streaming writers leave the size at 0 or 0xFFFFFFFF; truncated files claim too much.
    available = file_size - offset
    if size in (0, 0xFFFFFFFF) or size > available:
        size = available
    frames = size // (channels * sample_bytes)
    if frames == 0:
        raise AudioError(f"{path}: the WAV file contains no audio samples")
    return WavInfo(path, rate, channels, dtype, sample_bytes, offset, frames)


def _sample_dtype(path: Path, tag: int, bits: int) -> np.dtype[np.generic]:
    if tag == _PCM and bits in (8, 16, 24, 32):
        # 24-bit samples are widened to int32 by _decode_block.
        return _DTYPES[f"i{bits}"]
    if tag == _FLOAT and bits in (32, 64):
        return _DTYPES[f"f{bits}"]
    if tag in (_PCM, _FLOAT):
        kind = "integer" if tag == _PCM else "float"
        raise AudioError(f"{path}: unsupported WAV sample size: {bits}-bit {kind}")
    name = _FORMAT_NAMES.get(tag, f"format tag 0x{tag:04x}")
    raise AudioError(
        f"{path}: unsupported WAV encoding {name}; convert it to PCM, e.g. "
        f"`sox in.wav -e signed-integer -b 16 out.wav`"
    )


def _decode_block(info: WavInfo, raw: bytes) -> npt.NDArray[np.generic]:
    usable = len(raw) - len(raw) % info.block_align
    if info.sample_bytes == 3:
        b = np.frombuffer(raw[:usable], dtype=np.uint8).reshape(-1, 3).astype(np.uint32)
        data: npt.NDArray[np.generic] = ((b[:, 0] << 8) | (b[:, 1] << 16) | (b[:, 2] << 24)).view(
            np.int32
        )
    else:
        data = np.frombuffer(raw[:usable], dtype=info.dtype)
    return data.reshape(-1, info.channels)


def wav_samples(info: WavInfo, block_seconds: float = _BLOCK_SECONDS,
                channel: int | None = None) -> Iterator[Samples]:
    """The file's audio (or one ``channel`` of it) as 16 kHz mono int16 blocks, decoded
    lazily."""
    converter = Converter(info.rate)
    block_bytes = max(1, int(info.rate * block_seconds)) * info.block_align
    remaining = info.frames * info.block_align
    with info.path.open("rb") as f:
        f.seek(info.data_offset)
        while remaining > 0:
            raw = f.read(min(block_bytes, remaining))
            if not raw:
                break
            remaining -= len(raw)
            block = _decode_block(info, raw)
            yield converter.process(block if channel is None else block[:, channel])
    yield converter.flush()


def _av_check(path: Path, channel: int | None = None) -> None:
    """Fail early (in the constructor) when PyAV is missing, finds no audio stream, or the
    stream lacks ``channel``."""
    try:
        import av
    except ImportError as exc:
        raise AudioError(f"{path}: not a WAV file, and PyAV is not installed to decode it") from exc
    try:
        with av.open(str(path)) as container:
            if not container.streams.audio:
                raise AudioError(f"{path}: the file has no audio stream")
            _check_channel(path, channel, container.streams.audio[0].codec_context.layout.nb_channels)
    except av.FFmpegError as exc:
        raise AudioError(f"{path}: not a WAV file and not decodable audio ({exc})") from exc


def av_samples(path: Path, channel: int | None = None) -> Iterator[Samples]:
    """Any FFmpeg-readable audio (mp3, m4a, flac, ogg…), or one ``channel`` of it, as
    16 kHz mono int16 blocks."""
    import av

    try:
        with av.open(str(path)) as container:
            stream = container.streams.audio[0]
            if channel is None:
                resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
            else:  # planar keeps the channels apart: row ``channel`` is the one wanted
                resampler = av.AudioResampler(format="s16p", rate=SAMPLE_RATE)
            row = 0 if channel is None else channel
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    yield out.to_ndarray()[row].astype(np.int16, copy=False)
            for out in resampler.resample(None):
                yield out.to_ndarray()[row].astype(np.int16, copy=False)
    except av.FFmpegError as exc:
        raise AudioError(f"{path}: decoding failed: {exc}") from exc


def _check_channel(path: Path, channel: int | None, channels: int) -> None:
    """Said the way audio editors number channels (from 1)."""
    if channel is not None and not 0 <= channel < channels:
        have = "1 channel" if channels == 1 else f"{channels} channels"
        raise AudioError(f"{path}: no channel {channel + 1}: the file has {have}")


def _is_riff(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) in (b"RIFF", b"RF64")


class FileSource(ThreadedSource):
    """Plays a recording into the pipeline on its own thread, at ``speed`` x real time.

    ``speed`` 0 or infinity means as fast as the consumer takes frames; the session clock
    then runs at 1x wall time, so the pipeline's own latencies are still measured in real
    seconds (there is no meaningful "audio now" to compare them with).
    """

    def __init__(self, path: str | Path, clock: SessionClock, speed: float = 1.0, *,
                 channel: int | None = None) -> None:
        super().__init__()
        self.path = Path(path)
        self.channel = channel
        """Which channel of a multi-channel file (0 = first); None downmixes them all."""
        self.name = self.path.name if channel is None else f"{self.path.name}#{channel}"
        if math.isnan(speed) or speed < 0:
            raise ValueError(f"speed must be >= 0 (0 = as fast as possible), got {speed}")
        self.speed = math.inf if speed == 0 else speed
        self._clock = clock
        self._wav = self._probe()
        self.frames_delivered = 0

    def _probe(self) -> WavInfo | None:
        if not self.path.is_file():
            raise AudioError(f"{self.path}: audio file not found")
        try:
            if _is_riff(self.path):
                info = read_wav_info(self.path)
                _check_channel(self.path, self.channel, info.channels)
                return info
        except OSError as exc:
            raise AudioError(f"{self.path}: cannot read the file ({exc.strerror})") from exc
        _av_check(self.path, self.channel)
        return None

    @property
    def duration(self) -> float | None:
        """Length in seconds when the header says so (WAV), else None."""
        return self._wav.duration if self._wav is not None else None

    @property
    def overflows(self) -> int:
        return 0

    def frames(self) -> Iterator[AudioFrame]:
        """Every frame of the file, unpaced, last one zero-padded."""
        blocks = (wav_samples(self._wav, channel=self.channel) if self._wav is not None
                  else av_samples(self.path, self.channel))
        chunker = FrameChunker()
        for block in blocks:
            yield from chunker.push(block)
        last = chunker.flush()
        if last is not None:
            yield last

    def _run(self, on_frame: FrameHandler, on_error: ErrorHandler) -> None:
        try:
            self._replay(on_frame)
        except AudioError as exc:
            on_error(str(exc))
        except OSError as exc:
            on_error(f"{self.path}: reading failed: {exc}")
        finally:
            self._done.set()

    def _replay(self, on_frame: FrameHandler) -> None:
        frames = self.frames()
        first = next(frames, None)  # decode before the origin: time 0 = first sample
        if first is None:
            return
        origin = time.perf_counter()  # the session clock's time base (app/core/clock.py)
        self._clock.start(origin, self.speed if math.isfinite(self.speed) else 1.0)
        pending: AudioFrame | None = first
        k = 0
        while pending is not None and not self._stop.is_set():
            if math.isfinite(self.speed):
                due = origin + (k + 1) * _FRAME_SECONDS / self.speed
                delay = due - time.perf_counter()
                if delay > 0 and self._stop.wait(delay):
                    return
            on_frame(pending)
            self.frames_delivered += 1
            k += 1
            pending = next(frames, None)
