"""What every audio source delivers: fixed 30 ms frames of 16 kHz mono int16."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16_000
FRAME_MS = 30
FRAME_SAMPLES = SAMPLE_RATE * FRAME_MS // 1000  # 480: a size webrtcvad accepts

Samples = npt.NDArray[np.int16]


@dataclass(frozen=True, slots=True)
class AudioFrame:
    t: float
    """Session time of the frame's first sample (audio clock: samples delivered / rate)."""
    samples: Samples
    """Exactly FRAME_SAMPLES int16 samples, 16 kHz mono."""

    @property
    def end(self) -> float:
        return self.t + len(self.samples) / SAMPLE_RATE


FrameHandler = Callable[[AudioFrame], None]
ErrorHandler = Callable[[str], None]


class AudioSource(Protocol):
    """A producer of frames on its own thread; the pipeline does not care which kind.

    ``start`` returns at once; frames then arrive on ``on_frame`` from the source's
    thread, in order, without gaps (a dropped block is counted in ``overflows`` and
    replaced by nothing: frame times stay on the audio clock).  Problems the user can
    fix (device missing, unplugged) go to ``on_error`` as a sentence naming the device
    and the fix; the source keeps trying to recover rather than ending the session.
    """

    name: str

    def start(self, on_frame: FrameHandler, on_error: ErrorHandler) -> None: ...

    def stop(self) -> None: ...

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the source has delivered its last frame (files) or was stopped."""
        ...

    @property
    def overflows(self) -> int: ...
