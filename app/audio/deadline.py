"""A PortAudio call with a deadline: on its own short-lived thread, waited for at most so long.

On a dead sound server (ALSA's ``pulse`` plugin after the PulseAudio daemon died)
``Pa_AbortStream`` and ``Pa_CloseStream`` can wait forever for the host's callback thread,
so :mod:`app.audio.device` opens, starts and closes streams through :func:`with_deadline`
(decision 0014).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class PortAudioWedged(Exception):
    """A PortAudio call did not return before its deadline; it goes on on its own thread."""


def with_deadline(call: Callable[[], T], deadline: float, what: str,
                   on_late: Callable[[T], None] | None = None) -> T:
    """``call()`` on a daemon thread of its own: its result, its exception, or
    :class:`PortAudioWedged` after ``deadline`` seconds.

    A call that returns after we gave up hands its result to ``on_late`` (an opened stream
    nobody will use is closed there), so giving up never leaks what the call made.
    """
    lock = threading.Lock()
    finished = threading.Event()
    outcome: list[tuple[bool, Any]] = []
    gave_up = False

    def run() -> None:
        try:
            result: tuple[bool, Any] = (True, call())
        except BaseException as exc:  # handed to the caller, who decides
            result = (False, exc)
        with lock:
            outcome.append(result)
            finished.set()
            late = gave_up
        if late and result[0] and on_late is not None:
            with contextlib.suppress(Exception):
                on_late(result[1])

    threading.Thread(target=run, name=f"portaudio-{what}", daemon=True).start()
    finished.wait(deadline)
    with lock:
        if not outcome:
            gave_up = True
            raise PortAudioWedged(f"PortAudio did not {what} the stream within {deadline:g} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]
