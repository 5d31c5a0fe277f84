"""What every audio source delivers: fixed 30 ms frames of 16 kHz mono int16."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from app.platform.priority import in_thread

SAMPLE_RATE = 16_000
FRAME_MS = 30
FRAME_SAMPLES = SAMPLE_RATE * FRAME_MS // 1000  # 480: a size webrtcvad accepts

Samples = npt.NDArray[np.int16]

TIME_TOLERANCE_S = 1e-6
"""Frame times are sums of 0.03 s and sample counts over the rate, so one instant reached
two ways differs in its last bits: times closer than a microsecond are the same instant."""


def reached(t: float, mark: float) -> bool:
    """Is ``t`` at or after ``mark`` (seconds, within :data:`TIME_TOLERANCE_S`)?"""
    return t >= mark - TIME_TOLERANCE_S


def beyond(t: float, mark: float) -> bool:
    """Is ``t`` after ``mark`` by more than :data:`TIME_TOLERANCE_S`?"""
    return t > mark + TIME_TOLERANCE_S


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
    What the user should know but that stops nothing (a microphone delivering digital
    silence) goes to ``on_warning``, or to ``on_error`` when there is none: a headless
    run ends on an error from its source, never on a warning.
    """

    name: str

    def start(self, on_frame: FrameHandler, on_error: ErrorHandler,
              on_warning: ErrorHandler | None = None) -> None: ...

    def stop(self, timeout: float = 5.0) -> None:
        """Stop delivering; wait up to ``timeout`` s for the thread (0: only ask)."""
        ...

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the source has delivered its last frame (files) or was stopped."""
        ...

    @property
    def overflows(self) -> int: ...


class ThreadedSource:
    """The thread lifecycle every source shares: one producer thread, stop, wait.

    Subclasses set ``name`` and implement ``_run``, which delivers frames until
    ``self._stop`` is set or the input ends, and must set ``self._done`` when it returns.
    """

    name: str

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._warn: ErrorHandler = lambda message: None
        """Where ``_run`` says what stops nothing (see :class:`AudioSource`)."""

    def start(self, on_frame: FrameHandler, on_error: ErrorHandler,
              on_warning: ErrorHandler | None = None) -> None:
        if self._thread is not None:
            raise RuntimeError(f"{type(self).__name__}.start() called twice")
        self._warn = on_warning if on_warning is not None else on_error
        # ahead of a video call on the cores, where the OS lets us (app.platform.priority)
        self._thread = threading.Thread(target=in_thread("audio", self._run), args=(on_frame, on_error),
                                        name=f"audio:{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def _run(self, on_frame: FrameHandler, on_error: ErrorHandler) -> None:
        raise NotImplementedError
