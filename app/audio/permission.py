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
says what to do, naming the permission only on macOS.
"""

from __future__ import annotations

import sys

import numpy as np
import numpy.typing as npt

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
    return (f"The input '{device}' has delivered only digital silence since it started "
            f"({window} of exact zeros): it is muted, switched off or not connected to "
            f"anything. Check its mute switch and input level, or choose another input "
            f"(Settings, or --device).")
