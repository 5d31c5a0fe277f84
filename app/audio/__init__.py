"""Audio capture and replay: every source delivers 30 ms frames of 16 kHz mono int16.

:func:`open_source` turns what the user typed (``--audio``/``--device``) into a source.
PortAudio (``sounddevice``) is imported only when a device is actually used, so file
replay and tests of other stages never initialise it; when it cannot be loaded, using a
device raises :class:`AudioError` saying what to install (:func:`portaudio_missing`).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from app.audio.file_source import FileSource
from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE, AudioFrame, AudioSource
from app.audio.resample import AudioError, FrameChunker
from app.core.clock import SessionClock

if TYPE_CHECKING:
    from app.audio.device import DeviceInfo
    from app.core.config import AudioConfig

__all__ = [
    "FRAME_SAMPLES",
    "SAMPLE_RATE",
    "AudioError",
    "AudioFrame",
    "AudioSource",
    "FileSource",
    "FrameChunker",
    "format_device_list",
    "list_devices",
    "open_source",
    "portaudio_missing",
    "source_from_config",
]

_AUDIO_SUFFIXES = {".wav", ".wave", ".mp3", ".m4a", ".aac", ".flac", ".ogg", ".opus", ".webm",
                   ".mp4", ".mkv", ".wma"}


def open_source(spec: str | int | Path | None, clock: SessionClock, *,
                speed: float = 1.0, channel: int | None = None) -> AudioSource:
    """A source for ``spec``; raises AudioError (naming it and the fix) if it is unusable.

    - an audio file path -> :class:`FileSource` replayed at ``speed`` (only ``channel`` of
      it when given, e.g. 1 for the candidate's side of a two-channel recording)
    - ``None`` / ``"mic"`` / ``"default"`` -> the default input device
    - ``"loopback"`` -> what the speakers play (WASAPI on Windows, the default sink's
      monitor on Linux, a Core Audio process tap on macOS 14.2+, else a BlackHole-style
      device)
    - ``"pulse:NAME.monitor"`` -> that PulseAudio/PipeWire monitor (Linux)
    - an index or a part of a device name -> that input device
    """
    if isinstance(spec, Path) or (isinstance(spec, str) and _looks_like_file(spec)):
        return FileSource(spec, clock, speed=speed, channel=channel)
    if channel is not None:
        raise AudioError(f"--audio-channels applies to a recording, not to the device {spec!r}")
    if spec == "loopback":
        return _loopback(clock)
    _load_portaudio()
    from app.audio.device import DeviceSource

    return DeviceSource(spec, clock, kind="mic")


def source_from_config(config: AudioConfig, clock: SessionClock, *,
                       file: str | Path | None = None, speed: float = 1.0,
                       channel: int | None = None) -> AudioSource:
    """The source the settings ask for; ``file`` (from the command line) wins.

    ``channel`` picks one channel of the file (None downmixes); it only applies to files.
    """
    if file is not None:
        return FileSource(file, clock, speed=speed, channel=channel)
    if config.source == "file":
        if config.device is None:
            raise AudioError("audio.source is 'file' but no file was given: pass --audio FILE.")
        return FileSource(config.device, clock, speed=speed, channel=channel)
    if channel is not None:
        raise AudioError("--audio-channels applies to a recording (--audio FILE), "
                         "not to a live device.")
    if config.source == "loopback":
        if config.device is None:
            return _loopback(clock)
        _load_portaudio()
        from app.audio.device import DeviceSource

        return DeviceSource(config.device, clock, kind="loopback")
    return open_source(config.device, clock)


def list_devices() -> list[DeviceInfo]:
    _load_portaudio()
    from app.audio.device import list_devices as _list

    return _list()


def format_device_list() -> str:
    _load_portaudio()
    from app.audio.device import format_device_list as _format

    return _format()


def portaudio_missing(problem: BaseException | str, platform: str | None = None) -> str:
    """One sentence for a PortAudio that does not load, naming what to install.

    On Linux the sounddevice wheel carries no PortAudio: it loads the system's
    (``libportaudio2`` on Debian and Ubuntu, ``portaudio`` on Fedora).  On Windows and macOS
    the wheel ships PortAudio itself, so a failure there means a damaged install.
    ``platform`` defaults to ``sys.platform``, read at the call."""
    if (platform or sys.platform).startswith("linux"):
        fix = ("install it with 'sudo apt-get install libportaudio2' (Debian, Ubuntu; Fedora: "
               "'sudo dnf install portaudio')")
    else:
        fix = "reinstall Interview Copilot: PortAudio comes inside it (in the sounddevice package)"
    return (f"Live audio needs the PortAudio library, which did not load ({problem}): {fix}; "
            f"or replay a recording with --audio FILE.")


def _load_portaudio() -> None:
    """Import :mod:`app.audio.device`, which loads PortAudio: AudioError naming the fix when
    it cannot (sounddevice raises OSError when it finds no PortAudio library, ImportError
    when the package itself is missing)."""
    try:
        importlib.import_module("app.audio.device")
    except (OSError, ImportError) as exc:
        raise AudioError(portaudio_missing(exc)) from exc


def _looks_like_file(spec: str) -> bool:
    if spec.startswith("pulse:"):
        return False
    path = Path(spec)
    return path.suffix.lower() in _AUDIO_SUFFIXES or path.is_file()


def _loopback(clock: SessionClock) -> AudioSource:
    if sys.platform == "win32":
        from app.audio.loopback_windows import WasapiLoopbackSource

        return WasapiLoopbackSource(clock)
    if sys.platform == "darwin":  # 14.2+: a Core Audio process tap; else, or failing that, BlackHole
        from app.audio.process_tap import speakers_source

        return speakers_source(clock, fallback=lambda: _loopback_device(clock))
    _load_portaudio()
    from app.audio.device import DeviceSource
    from app.audio.pulse import SPEAKERS_MONITOR

    if sys.platform.startswith("linux"):  # the default sink's monitor, following the default
        return DeviceSource(SPEAKERS_MONITOR, clock, kind="loopback")
    return _loopback_device(clock)


def _loopback_device(clock: SessionClock) -> AudioSource:
    """A BlackHole-style loopback input (macOS 14.0-14.1, or where no process tap can be made)."""
    _load_portaudio()
    from app.audio.device import DeviceSource, list_devices

    candidates = [d for d in list_devices() if d.is_loopback_candidate]
    if not candidates:
        raise AudioError("No loopback input found: install BlackHole (macOS), route the call "
                         "audio to it, then pick it with --device BlackHole.")
    return DeviceSource(candidates[0].name, clock, kind="loopback")
