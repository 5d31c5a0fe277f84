"""An input that is exact digital zero from the start: on macOS, a denied microphone.

When the user (or an MDM profile) has not allowed an app to use the microphone, macOS
still opens the stream and delivers blocks at the normal pace, every sample exactly
0.0.  Nothing fails, so without this check the window just waits for speech forever.
A working microphone never does that: even a silent room through a muted preamp
carries a few least-significant bits of analog noise, so *exact* zeros (not "quiet")
mean no signal path at all.

:class:`DigitalSilence` is pure (no clock, no I/O): the capture thread feeds it every
block from the moment the stream starts, by sample count, and it answers True exactly
once, when :data:`ZERO_WINDOW_S` of exact zeros have passed.  :func:`silence_message`
says what to do, naming the permission on macOS and the privacy switches on Windows.

Design notes: decision 0038.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from app.audio.resample import AudioError

log = logging.getLogger(__name__)

ZERO_WINDOW_S = 3.0
"""How long the start of a stream must be exact zeros before we say so.  Long enough
that a granted microphone's start-up is never mistaken for it (CoreAudio and USB
devices may hand over a few zero-filled buffers while they start: tens to a few hundred
ms), short enough that the hint is on screen before the interviewer's first question
has ended (questions last 3-10 s)."""

PRIVACY_PATH = "System Settings → Privacy & Security → Microphone"


class DigitalSilence:
    """Watches the first :data:`ZERO_WINDOW_S` of a stream for samples that are all 0.

    ``feed`` every block in order from the stream's start (any shape, any sample type:
    zero is zero in all of them); it returns True once, on the block that completes the
    window, if no sample so far was non-zero.  One non-zero sample settles it for good.
    Make a new one when the stream is reopened.
    """

    def __init__(self, rate: float, window_s: float = ZERO_WINDOW_S) -> None:
        if rate <= 0 or window_s <= 0:
            raise ValueError("rate and window_s must be positive")
        self._needed = round(rate * window_s)
        self._seen = 0
        self._settled = False

    @property
    def settled(self) -> bool:
        """True once the answer is known (a sample was heard, or the silence was reported)."""
        return self._settled

    def feed(self, block: npt.NDArray[np.generic]) -> bool:
        if self._settled:
            return False
        data = np.asarray(block)
        if np.any(data):
            self._settled = True
            return False
        self._seen += data.shape[0] if data.ndim else 0
        if self._seen >= self._needed:
            self._settled = True
            return True
        return False


def silence_message(device: str, platform: str = sys.platform) -> str:
    """What to tell the user when ``device`` gave :data:`ZERO_WINDOW_S` of exact zeros."""
    window = f"{ZERO_WINDOW_S:g} s"
    if platform == "darwin":
        return (f"The microphone '{device}' has delivered only digital silence since it started "
                f"({window} of exact zeros): macOS has not given this app permission to use "
                f"the microphone. "
                f"Allow Interview Copilot (or the terminal you started it from) in "
                f"{PRIVACY_PATH}, then quit and reopen the app.")
    if platform == "win32":
        return windows_silence_message(device)
    return (f"The input '{device}' has delivered only digital silence since it started "
            f"({window} of exact zeros): it is muted, switched off or not connected to "
            f"anything. Check its mute switch and input level, or choose another input "
            f"(Settings, or --device).")


# --- Windows: the microphone switches in Settings -------------------------------------------

WINDOWS_PRIVACY_PATH = "Settings → Privacy & security → Microphone"
"""Windows 11's name for it; Windows 10 calls it Settings → Privacy → Microphone."""
_WINDOWS_SWITCHES = (f"'Microphone access' and 'Let desktop apps access your microphone' in "
                     f"{WINDOWS_PRIVACY_PATH} (Windows 10: Settings → Privacy → Microphone)")
E_ACCESSDENIED = 0x80070005
"""The HRESULT WASAPI answers when the microphone switches are off (signed: -2147024891)."""


def windows_silence_message(device: str) -> str:
    """Exact zeros from a Windows microphone: what a microphone the privacy switches keep
    from desktop apps delivers, and also what a muted one may; both are named."""
    return (f"The microphone '{device}' has delivered only digital silence since it started "
            f"({ZERO_WINDOW_S:g} s of exact zeros): Windows may not be letting this app use the "
            f"microphone, or it is muted. Turn on {_WINDOWS_SWITCHES}, "
            f"check its mute switch and input level, then stop and start again.")


def windows_access_denied(exc: BaseException) -> bool:
    """Whether opening an input failed with E_ACCESSDENIED.

    PortAudio's WASAPI host puts the HRESULT in sounddevice's ``PortAudioError`` as the
    host error code (``args[2]``: host API, code, text; the text is "UNKNOWN ERROR" for
    this one); other hosts and wrappers say it in words, so the text is read too.
    """
    for arg in exc.args:
        if isinstance(arg, tuple) and len(arg) == 3 and isinstance(arg[1], int) and (
                arg[1] & 0xFFFFFFFF == E_ACCESSDENIED):
            return True
    text = str(exc).lower()
    return any(words in text for words in ("e_accessdenied", "access is denied", "access denied",
                                           f"{E_ACCESSDENIED:#x}", str(E_ACCESSDENIED - 2**32)))


def access_denied_message(exc: BaseException, device: str, platform: str | None = None) -> str | None:
    """The sentence for an open that Windows refused (its privacy switches), else None.

    ``platform`` defaults to ``sys.platform``, read at the call."""
    if (platform or sys.platform) != "win32" or not windows_access_denied(exc):
        return None
    return (f"Windows does not let this app use the microphone '{device}' (access denied): "
            f"turn on {_WINDOWS_SWITCHES}.")


# --- macOS: the permission, asked before any input is opened, loopbacks included ------------

AV_NOT_DETERMINED, AV_RESTRICTED, AV_DENIED, AV_AUTHORIZED = 0, 1, 2, 3
"""``AVAuthorizationStatus`` (AVCaptureDevice.h)."""
_UNANSWERED = -1
ANSWER_WAIT_S = 60.0
"""How long a start waits for the user to answer macOS's "allow the microphone?" dialog:
long enough to read it, bounded so a dialog left behind a full-screen call ends the start
with a sentence instead of "starting" forever."""

_NEEDS = "which it needs to hear any input, BlackHole included"
_REFUSED = {
    AV_DENIED: (f"macOS does not allow Interview Copilot to use the microphone, {_NEEDS}: allow "
                f"Interview Copilot (or the terminal you started it from) in {PRIVACY_PATH}, then quit "
                f"and reopen it."),
    AV_RESTRICTED: (f"Microphone use is restricted on this Mac (by a device-management profile or Screen "
                    f"Time), so Interview Copilot cannot hear any input, BlackHole included: ask whoever "
                    f"manages this Mac to allow Interview Copilot in {PRIVACY_PATH}."),
    _UNANSWERED: (f"macOS is still asking whether Interview Copilot may use the microphone, {_NEEDS}: "
                  f"answer its dialog (or allow Interview Copilot in {PRIVACY_PATH}), then start again."),
}


def load_av_foundation() -> Any:
    """pyobjc's AVFoundation (raises ImportError without ``pyobjc-framework-AVFoundation``)."""
    return importlib.import_module("AVFoundation")


def require_microphone_access(*, platform: str | None = None, av_foundation: Callable[[], Any] | None = None,
                              wait_s: float = ANSWER_WAIT_S) -> None:
    """On macOS, raise :class:`AudioError` (one sentence: what to allow, and where) unless
    this app may use the microphone; asks the user first if they were never asked.

    Call it before opening any input: macOS gives a denied app a stream of exact zeros,
    from BlackHole as from a microphone, and nothing fails.  Elsewhere, and on a Mac
    without pyobjc (said in the log), it returns at once.  ``platform`` defaults to
    ``sys.platform`` and ``av_foundation`` to :func:`load_av_foundation`, read at the call.
    """
    if (platform or sys.platform) != "darwin":
        return
    try:
        av = (av_foundation or load_av_foundation)()
        device, audio = av.AVCaptureDevice, av.AVMediaTypeAudio
        status = device.authorizationStatusForMediaType_(audio)
    except Exception as exc:  # the digital-silence check is left to tell a denied user
        missing = " (pyobjc-framework-AVFoundation is not installed)" if isinstance(exc, ImportError) else ""
        log.warning("cannot ask macOS whether this app may use the microphone: %s%s", exc, missing)
        return
    if status == AV_NOT_DETERMINED:
        status = _ask(device, audio, wait_s)
    if status in _REFUSED:
        raise AudioError(_REFUSED[status])


def _ask(device: Any, audio: Any, wait_s: float) -> int:
    """Show macOS's dialog and wait (bounded) for the answer, which comes on a queue of
    macOS's own: authorized, denied, or unanswered."""
    answered = threading.Event()
    granted: list[bool] = []

    def on_answer(ok: bool) -> None:
        granted.append(bool(ok))
        answered.set()

    device.requestAccessForMediaType_completionHandler_(audio, on_answer)
    if not answered.wait(wait_s):
        return _UNANSWERED
    return AV_AUTHORIZED if granted[0] else AV_DENIED


def watches_for_silence(*, loopback: bool, platform: str | None = None) -> bool:
    """Whether an input's first seconds are watched for exact zeros.

    A microphone always (analog noise is never exactly zero).  A loopback or monitor only
    on macOS: elsewhere it is exact zeros whenever nothing plays, but on a Mac it is also
    what a denied permission sounds like, and nothing else would tell the user.
    """
    return not loopback or (platform or sys.platform) == "darwin"


def silence_warning(device: str, *, loopback: bool, platform: str | None = None) -> str:
    """What to say when ``device`` gave :data:`ZERO_WINDOW_S` of exact zeros: a loopback
    on macOS may only be waiting for the call, so both causes are named."""
    platform = platform or sys.platform
    if not (loopback and platform == "darwin"):
        return silence_message(device, platform)
    return (f"The loopback input '{device}' has delivered only digital silence since it started "
            f"({ZERO_WINDOW_S:g} s of exact zeros): if the call is already playing, macOS has not given "
            f"this app permission to use the microphone, which a loopback input needs too, so allow "
            f"Interview Copilot (or the terminal you started it from) in {PRIVACY_PATH}, then quit and "
            f"reopen the app; if not, send the call's sound to '{device}' (or to a Multi-Output Device "
            f"that includes it).")
