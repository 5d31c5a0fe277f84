"""FileSource: real-time replay on an exact clock, format conversion, clear errors."""

from __future__ import annotations

import shutil
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from app.audio import AudioError, FileSource, open_source
from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE, AudioFrame
from app.core.clock import SessionClock
from tests.patience import NEVER_S
from tests.speech import read_wav, synth


def write_wav(path: Path, data: npt.NDArray[np.generic], rate: int, *, bits: int | None = None,
              extensible: bool = False, tag: int | None = None) -> Path:
    """Any WAV flavour, written by hand (``wave`` only writes integer PCM)."""
    data = data if data.ndim == 2 else data[:, None]
    channels = data.shape[1]
    if data.dtype.kind == "f":
        fmt_tag, bits = 3, bits or data.dtype.itemsize * 8
        payload = data.astype(f"<f{bits // 8}").tobytes()
    elif bits == 24:
        fmt_tag = 1
        wide = data.astype("<i4").reshape(-1, 1).view(np.uint8).reshape(-1, 4)
        payload = wide[:, :3].tobytes()
    else:
        fmt_tag, bits = 1, bits or data.dtype.itemsize * 8
        payload = data.tobytes()
    fmt_tag = tag if tag is not None else fmt_tag
    align = channels * bits // 8
    fmt = struct.pack("<HHIIHH", 0xFFFE if extensible else fmt_tag, channels, rate,
                      rate * align, align, bits)
    if extensible:
        guid_tail = b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"
        fmt += struct.pack("<HHI", 22, bits, 0) + struct.pack("<H", fmt_tag) + guid_tail
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"LIST" + struct.pack("<I", 5) + b"INFOx\x00"  # odd chunk: must be skipped
    body += b"data" + struct.pack("<I", len(payload)) + payload
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    return path


def collect(source: FileSource, timeout: float = 10.0,
            now: Callable[[], float] = time.monotonic) -> tuple[list[AudioFrame], list[float]]:
    frames: list[AudioFrame] = []
    arrivals: list[float] = []
    errors: list[str] = []

    def on_frame(frame: AudioFrame) -> None:
        arrivals.append(now())
        frames.append(frame)

    source.start(on_frame, errors.append)
    assert source.wait(timeout)
    assert errors == []
    return frames, arrivals


def samples_of(frames: list[AudioFrame]) -> npt.NDArray[np.int16]:
    return np.concatenate([f.samples for f in frames])


class ScriptedTime:
    """The replay's clock, moved only by its own waits: wait ``k`` wakes ``late(k)`` seconds
    after the time it asked for, as a busy machine would wake it.  The pacing rule is then
    checked exactly, whatever this machine is doing."""

    def __init__(self, late: Callable[[int], float]) -> None:
        self.now = 1000.0
        self.late = late
        self.waits: list[float] = []

    def perf_counter(self) -> float:
        return self.now

    def install(self, source: FileSource, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr("app.audio.file_source.time", self)
        scripted = self

        class Stop(threading.Event):
            def wait(self, timeout: float | None = None) -> bool:
                assert timeout is not None
                scripted.now += timeout + scripted.late(len(scripted.waits))
                scripted.waits.append(timeout)
                return self.is_set()

        source._stop = Stop()


def assert_on_schedule(arrivals: list[float], origin: float, period: float) -> None:
    """Frame k is delivered once its last sample is due (origin + (k+1)*period), never
    before; and the schedule is absolute: a late frame makes no later frame late."""
    due = origin + (np.arange(len(arrivals)) + 1) * period
    lateness = np.array(arrivals) - due
    assert lateness.min() >= -1e-9


def chord(rate: int, seconds: float) -> npt.NDArray[np.float64]:
    """A signal we can evaluate exactly at any rate: the reference for conversions."""
    t = np.arange(int(rate * seconds)) / rate
    return 0.3 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 2500 * t + 1.0)


# --- replay clock ----------------------------------------------------------------------


@pytest.mark.parametrize("speed", [1.0, 10.0])
def test_replay_is_on_an_absolute_schedule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           speed: float) -> None:
    """Every wait wakes 0.5 ms late and the tenth 100 ms late: the frames after the long one
    catch up, then are exactly as late as one wait (no drift)."""
    path = write_wav(tmp_path / "a.wav", np.zeros(2 * SAMPLE_RATE, dtype=np.int16), SAMPLE_RATE)
    clock = SessionClock()
    source = FileSource(path, clock, speed=speed)
    scripted = ScriptedTime(lambda k: 0.1 if k == 10 else 0.0005)
    scripted.install(source, monkeypatch)
    frames, arrivals = collect(source, now=scripted.perf_counter)
    period = FRAME_SAMPLES / SAMPLE_RATE / speed
    assert len(frames) == 2 * SAMPLE_RATE // FRAME_SAMPLES + 1  # 66.67 frames -> 67
    assert [f.t for f in frames] == [k * FRAME_SAMPLES / SAMPLE_RATE for k in range(len(frames))]
    assert clock.started and clock.speed == speed
    origin = clock.to_counter(0.0)
    assert origin == 1000.0  # session time 0 is the first sample's delivery schedule
    assert_on_schedule(arrivals, origin, period)
    lateness = np.array(arrivals) - (origin + (np.arange(len(arrivals)) + 1) * period)
    assert lateness[10] == pytest.approx(0.1)
    assert lateness[-10:] == pytest.approx(0.0005)


def test_speed_zero_is_as_fast_as_possible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_wav(tmp_path / "a.wav", np.zeros(20 * SAMPLE_RATE, dtype=np.int16), SAMPLE_RATE)
    source = FileSource(path, SessionClock(), speed=0)
    scripted = ScriptedTime(lambda k: 0.0)
    scripted.install(source, monkeypatch)
    frames, _ = collect(source)
    assert len(frames) == 20 * SAMPLE_RATE // FRAME_SAMPLES + 1
    assert scripted.waits == []  # it never waits


def test_stop_ends_replay_early(tmp_path: Path) -> None:
    """Stop ends the replay thread: no frame comes after it returns, and the rest of the
    file is never played."""
    path = write_wav(tmp_path / "a.wav", np.zeros(10 * SAMPLE_RATE, dtype=np.int16), SAMPLE_RATE)
    source = FileSource(path, SessionClock())
    frames: list[AudioFrame] = []
    third = threading.Event()

    def on_frame(frame: AudioFrame) -> None:
        frames.append(frame)
        if len(frames) == 3:
            third.set()

    source.start(on_frame, lambda _: None)
    assert third.wait(30)
    source.stop(timeout=30)
    assert source.wait(0) and not source._thread.is_alive()  # type: ignore[union-attr]
    assert len(frames) < 10 * SAMPLE_RATE // FRAME_SAMPLES


# --- content ---------------------------------------------------------------------------


def test_last_partial_frame_is_zero_padded(tmp_path: Path) -> None:
    data = np.full(2 * FRAME_SAMPLES + 40, 1000, dtype=np.int16)
    path = write_wav(tmp_path / "a.wav", data, SAMPLE_RATE)
    frames, _ = collect(FileSource(path, SessionClock(), speed=0))
    assert [f.t for f in frames] == pytest.approx([0.0, 0.03, 0.06])
    assert np.all(frames[2].samples[:40] == 1000) and np.all(frames[2].samples[40:] == 0)


def test_48khz_stereo_float_matches_the_16khz_reference(tmp_path: Path) -> None:
    left, right = chord(48000, 1.0), 0.5 * chord(48000, 1.0)
    path = write_wav(tmp_path / "f.wav", np.stack([left, right], axis=1).astype(np.float32), 48000)
    out = samples_of(collect(FileSource(path, SessionClock(), speed=0))[0])
    expected = 0.75 * chord(SAMPLE_RATE, 1.0) * 32768
    assert len(out) == 34 * FRAME_SAMPLES and np.all(out[SAMPLE_RATE:] == 0)
    err = out[100 : SAMPLE_RATE - 100] - expected[100:-100]
    assert np.sqrt(np.mean(err**2)) / np.sqrt(np.mean(expected**2)) < 1e-3  # better than -60 dB


@pytest.mark.parametrize(("bits", "extensible"), [(8, False), (16, True), (24, False),
                                                  (24, True), (32, False)])
def test_integer_widths_keep_level_and_shape(tmp_path: Path, bits: int, extensible: bool) -> None:
    ref = chord(44100, 0.5)
    full = 2 ** (bits - 1) - 1
    ints = np.rint(ref * full).astype(np.int32)
    data = (ints + 128).astype(np.uint8) if bits == 8 else ints
    if bits == 16:
        data = ints.astype(np.int16)
    path = write_wav(tmp_path / "i.wav", np.stack([data, data], axis=1), 44100, bits=bits,
                     extensible=extensible)
    out = samples_of(collect(FileSource(path, SessionClock(), speed=0))[0]).astype(np.float64)
    expected = chord(SAMPLE_RATE, 0.5) * 32768
    n = len(expected)
    tolerance = 0.02 if bits == 8 else 1e-3  # 8-bit audio is itself only ~48 dB clean
    err = out[100 : n - 100] - expected[100:-100]
    assert np.sqrt(np.mean(err**2)) / np.sqrt(np.mean(expected**2)) < tolerance


@pytest.mark.usefixtures("speech")
def test_speech_at_16khz_is_replayed_sample_exact(tmp_path: Path) -> None:
    clip = synth("Tell me about yourself.", tail_s=0.2)
    frames, _ = collect(FileSource(clip, SessionClock(), speed=0))
    original = read_wav(clip)
    out = samples_of(frames)
    np.testing.assert_array_equal(out[: len(original)], original)
    assert np.all(out[len(original) :] == 0)


@pytest.mark.skipif(shutil.which("sox") is None, reason="sox is not installed")
def test_non_wav_files_are_decoded_with_pyav(tmp_path: Path) -> None:
    wav = write_wav(tmp_path / "c.wav", (chord(44100, 0.5) * 32767).astype(np.int16), 44100)
    flac = tmp_path / "c.flac"
    subprocess.run(["sox", str(wav), str(flac)], check=True)
    frames, _ = collect(FileSource(flac, SessionClock(), speed=0))
    out = samples_of(frames).astype(np.float64)
    expected = chord(SAMPLE_RATE, 0.5) * 32767
    corr = np.corrcoef(out[200:7000], expected[200:7000])[0, 1]
    assert corr > 0.99


# --- errors ----------------------------------------------------------------------------


def _bad(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("notes.wav", b"hello, this is text and not audio at all", "not a WAV file"),
        ("short.wav", b"RIFF\x04\x00\x00\x00WAVE", "no 'fmt ' chunk"),
        ("empty.wav", None, "no audio samples"),
        ("adpcm.wav", None, "MS ADPCM"),
        ("odd.wav", None, "12-bit integer"),
        ("random.bin", bytes(range(256)) * 8, "not a WAV file"),
    ],
)
def test_bad_files_fail_in_the_constructor_with_a_clear_message(
    tmp_path: Path, name: str, content: bytes | None, says: str
) -> None:
    tone = (chord(SAMPLE_RATE, 0.1) * 1000).astype(np.int16)
    if name == "empty.wav":
        path = write_wav(tmp_path / name, np.zeros(0, dtype=np.int16), SAMPLE_RATE)
    elif name == "adpcm.wav":
        path = write_wav(tmp_path / name, tone, SAMPLE_RATE, tag=0x0002)
    elif name == "odd.wav":
        path = write_wav(tmp_path / name, tone, SAMPLE_RATE, bits=12)
    else:
        assert content is not None
        path = _bad(tmp_path, name, content)
    with pytest.raises(AudioError) as info:
        FileSource(path, SessionClock())
    assert says in str(info.value) and str(path) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(AudioError, match=r"missing\.wav: audio file not found"):
        open_source(str(tmp_path / "missing.wav"), SessionClock())


def test_truncated_data_plays_what_is_there(tmp_path: Path) -> None:
    path = write_wav(tmp_path / "t.wav", np.ones(4800, dtype=np.int16), SAMPLE_RATE)
    path.write_bytes(path.read_bytes()[:-1000])  # header still claims 4800 samples
    frames, _ = collect(FileSource(path, SessionClock(), speed=0))
    assert len(frames) == 9 and np.count_nonzero(samples_of(frames)) == 4800 - 500


def test_frames_arrive_on_the_source_thread(tmp_path: Path) -> None:
    path = write_wav(tmp_path / "a.wav", np.zeros(960, dtype=np.int16), SAMPLE_RATE)
    threads: set[str] = set()
    source = FileSource(path, SessionClock(), speed=0)
    source.start(lambda _: threads.add(threading.current_thread().name), lambda _: None)
    assert source.wait(NEVER_S)
    assert threads == {"audio:a.wav"}


# --- one channel of a multi-channel recording --------------------------------------------


def _two_voices() -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16]]:
    """The interviewer (left) and the candidate (right) of a call, as 16 kHz speech."""
    left = read_wav(synth("Tell me about yourself.", tail_s=0.2))
    right = read_wav(synth("I build streaming systems.", "en-us+f3", lead_s=1.0, tail_s=0.2))
    n = max(len(left), len(right))
    pad = lambda x: np.concatenate([x, np.zeros(n - len(x), np.int16)])  # noqa: E731
    return pad(left), pad(right)


@pytest.mark.usefixtures("speech")
def test_each_channel_of_a_two_channel_call_is_its_own_source(tmp_path: Path) -> None:
    left, right = _two_voices()
    path = write_wav(tmp_path / "call.wav", np.stack([left, right], axis=1), SAMPLE_RATE)
    interviewer = FileSource(path, SessionClock(), speed=0, channel=0)
    candidate = FileSource(path, SessionClock(), speed=0, channel=1)
    assert interviewer.name != candidate.name  # two threads, two names in the logs
    np.testing.assert_array_equal(samples_of(collect(interviewer)[0])[: len(left)], left)
    np.testing.assert_array_equal(samples_of(collect(candidate)[0])[: len(right)], right)
    mixed = samples_of(collect(FileSource(path, SessionClock(), speed=0))[0])[: len(left)]
    assert np.abs(mixed.astype(np.int32) - (left.astype(np.int32) + right) // 2).max() <= 1


def test_a_channel_is_resampled_on_its_own(tmp_path: Path) -> None:
    tone, other = chord(44100, 0.5), np.sin(2 * np.pi * 150 * np.arange(22050) / 44100)
    path = write_wav(tmp_path / "f.wav", np.stack([other, tone, other], axis=1)
                     .astype(np.float32), 44100)
    out = samples_of(collect(FileSource(path, SessionClock(), speed=0, channel=1))[0])
    expected = chord(SAMPLE_RATE, 0.5) * 32768
    err = out[100: len(expected) - 100] - expected[100:-100]
    assert np.sqrt(np.mean(err**2)) / np.sqrt(np.mean(expected**2)) < 1e-3


@pytest.mark.skipif(shutil.which("sox") is None, reason="sox is not installed")
def test_a_channel_of_a_compressed_file(tmp_path: Path) -> None:
    tone = (chord(44100, 0.5) * 32767).astype(np.int16)
    silent = np.zeros_like(tone)
    wav = write_wav(tmp_path / "c.wav", np.stack([silent, tone], axis=1), 44100)
    flac = tmp_path / "c.flac"
    subprocess.run(["sox", str(wav), str(flac)], check=True)
    right = samples_of(collect(FileSource(flac, SessionClock(), speed=0, channel=1))[0])
    left = samples_of(collect(FileSource(flac, SessionClock(), speed=0, channel=0))[0])
    expected = chord(SAMPLE_RATE, 0.5) * 32767
    assert np.corrcoef(right[200:7000].astype(np.float64), expected[200:7000])[0, 1] > 0.99
    assert np.abs(left).max() <= 1
    with pytest.raises(AudioError, match="no channel 3: the file has 2 channels"):
        FileSource(flac, SessionClock(), channel=2)


def test_a_missing_channel_is_named(tmp_path: Path) -> None:
    mono = write_wav(tmp_path / "m.wav", np.zeros(1600, np.int16), SAMPLE_RATE)
    with pytest.raises(AudioError, match=r"m.wav: no channel 2: the file has 1 channel$"):
        FileSource(mono, SessionClock(), channel=1)
    with pytest.raises(AudioError, match="no channel 0"):
        FileSource(mono, SessionClock(), channel=-1)


def test_open_source_and_the_settings_pass_the_channel_to_files(tmp_path: Path) -> None:
    from app.audio import source_from_config
    from app.core.config import AudioConfig

    path = write_wav(tmp_path / "s.wav", np.zeros((1600, 2), np.int16), SAMPLE_RATE)
    source = open_source(str(path), SessionClock(), channel=1)
    assert isinstance(source, FileSource) and source.channel == 1
    chosen = source_from_config(AudioConfig(), SessionClock(), file=path, channel=0)
    assert isinstance(chosen, FileSource) and chosen.channel == 0
    with pytest.raises(AudioError, match="applies to a recording"):
        source_from_config(AudioConfig(), SessionClock(), channel=1)
