"""What the desktop bundle ships in place of PyAV (``av``): a name, and a clear refusal.

faster-whisper imports PyAV when it is imported (``faster_whisper/audio.py``), for
``decode_audio``, a file decoder the app never calls: audio reaches faster-whisper as numpy
arrays (``app/asr/``), and the app reads WAV recordings itself (``app/audio/file_source.py``).
PyAV and the FFmpeg it carries weigh about 100 MB, an eighth of the bundle.  This package
lets ``import faster_whisper`` succeed; any use of PyAV raises :class:`NotShipped`, an
``ImportError`` saying why.

``NotShipped`` is also ``av.FFmpegError``, the error the app's file replay turns into one
sentence: replaying a recording that is not WAV in the bundle says "not a WAV file and not
decodable audio (PyAV is not shipped: …)" rather than a traceback.

It is on the PyInstaller spec's ``pathex`` only (packaging/interview-copilot.spec, lean
builds), never on a development install's path, where the real PyAV decodes every format.
``hook-av.py`` beside it replaces pyinstaller-hooks-contrib's hook, which would collect the
real package's submodules and, on Windows, its DLLs.
"""

from __future__ import annotations

from typing import NoReturn

MESSAGE = (
    "PyAV is not shipped: the app passes audio to faster-whisper as arrays "
    "and replays WAV recordings only; convert others to WAV first"
)


class NotShipped(ImportError):
    """Raised by every use of this stand-in."""

    def __init__(self, *args: object) -> None:
        super().__init__(MESSAGE, name="av")


FFmpegError = NotShipped


def __getattr__(name: str) -> NoReturn:
    if name.startswith("__") and name.endswith("__"):  # introspection (copy, inspect, pickle)
        raise AttributeError(name)
    raise NotShipped()
