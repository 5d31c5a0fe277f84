"""A WAV's header is checked before anything is allocated for it (issue 54, item 3): a
rate outside 8-192 kHz, too many channels or a 'fmt ' chunk of megabytes is a clear
error, exit 2, for ``transcribe`` and ``listen`` alike."""

from __future__ import annotations

import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from app.audio.file_source import MAX_CHANNELS, MAX_RATE, MIN_RATE, FileSource, read_wav_info
from app.audio.resample import AudioError
from app.core.clock import SessionClock
from tests.frontends.test_cli_faults import DEAD, env_for

HOSTILE_RATE = 0xFFFF_FFF0
"""About 4.3 GHz: what the measured 1 MB file claimed (any rate far past 192 kHz)."""


def wav(path: Path, *, rate: int, channels: int = 1, data_bytes: int = 1 << 20, fmt_size: int = 16) -> Path:
    """A PCM 16-bit WAV of silence whose header says ``rate`` and ``channels``."""
    block = 2 * channels
    fmt = struct.pack("<HHIIHH", 1, channels, rate, (rate * block) & 0xFFFF_FFFF, block & 0xFFFF, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", fmt_size) + fmt
    body += b"data" + struct.pack("<I", data_bytes) + bytes(data_bytes)
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    return path


@pytest.mark.parametrize("rate", [1, MIN_RATE - 1, MAX_RATE + 1, 1_000_000, HOSTILE_RATE])
def test_a_rate_outside_what_recordings_have_is_refused_before_decoding(tmp_path: Path, rate: int) -> None:
    path = wav(tmp_path / "q.wav", rate=rate)
    tracemalloc.start()
    try:
        with pytest.raises(AudioError, match="sample rate") as info:
            FileSource(path, SessionClock())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f"{rate} Hz" in str(info.value) and "8-192 kHz" in str(info.value)
    assert peak < 1 << 20  # the header only: no block, no filter


@pytest.mark.parametrize("rate", [MIN_RATE, 16_000, 44_100, MAX_RATE])
def test_every_rate_a_recording_has_is_read(tmp_path: Path, rate: int) -> None:
    info = read_wav_info(wav(tmp_path / "ok.wav", rate=rate, data_bytes=rate * 2))
    assert (info.rate, info.frames) == (rate, rate)


def test_too_many_channels_are_refused(tmp_path: Path) -> None:
    read_wav_info(wav(tmp_path / "ok.wav", rate=48_000, channels=MAX_CHANNELS))
    with pytest.raises(AudioError, match="channels"):
        read_wav_info(wav(tmp_path / "bad.wav", rate=48_000, channels=MAX_CHANNELS + 1))
    with pytest.raises(AudioError, match="channels"):
        read_wav_info(wav(tmp_path / "huge.wav", rate=48_000, channels=65535))


def test_a_fmt_chunk_claiming_megabytes_is_not_read(tmp_path: Path) -> None:
    with pytest.raises(AudioError, match="'fmt ' chunk claims"):
        read_wav_info(wav(tmp_path / "q.wav", rate=16_000, fmt_size=1 << 30))


@pytest.mark.parametrize("command", ["transcribe", "listen"])
def test_the_cli_says_so_and_exits_2(tmp_path: Path, command: str) -> None:
    """The measured case: both commands exited 0 with no error line at 1.7x the memory."""
    path = wav(tmp_path / "hostile.wav", rate=HOSTILE_RATE)
    args = [sys.executable, "-m", "app", command, "--audio" if command == "listen" else "", str(path)]
    args = [a for a in args if a]
    if command == "listen":
        args += ["--headless", *DEAD]
    run = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env_for(tmp_path))
    assert run.returncode == 2, run.stderr
    assert "sample rate" in run.stderr and "hostile.wav" in run.stderr and "Traceback" not in run.stderr
