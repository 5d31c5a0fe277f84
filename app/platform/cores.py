"""How the machine's cores are shared between the recogniser and llama.cpp.

Three engines compute at once: the recogniser decodes a pass after another while anyone
speaks; the words model (llama.cpp, in process) scores each pause (one short forward
pass); the embedded answer server (llama.cpp, its own process) streams an answer while the
next question is already being transcribed.  llama.cpp's threads meet at a barrier after
every operation and spin there, so a llama.cpp thread that has to wait for a core holds
up all the others at every one of a token's hundreds of operations: beside a recognition
loop, a server given a core the recogniser uses answers several times slower than one
given fewer threads (``python -m devtools.bench.cores``; figures: decision 0007).  So
llama.cpp gets the cores the recogniser leaves, never more.
"""

from __future__ import annotations

import os

from threadpoolctl import threadpool_limits

MAX_THREADS = 4
"""CTranslate2's own default for a pass; more threads were not measured (this machine has 2)."""


def cores() -> int:
    """This machine's logical cores."""
    return os.cpu_count() or 1


def pass_threads(available: int | None = None) -> int:
    """Threads for one recognition pass: every core but one, at most 4.

    A pass never runs alone: the audio thread, the VAD, the end-of-turn model, the answer's
    HTTP stream and the window run beside it, and a pass that takes every core waits for
    them.  On a 2-core machine one thread gave faster passes in the whole pipeline than
    two, for tiny.en and for base on Chinese (decision 0007).
    """
    n = available if available is not None else cores()
    return max(1, min(MAX_THREADS, n - 1))


WORDS_THREADS = 1
"""The words model scores a sentence in one short forward pass; beside a recognition loop
on 2 cores two threads made its slow scores several times slower than one (decision
0007)."""


def spare_words_threads(available: int | None = None) -> int:
    """Threads for a verdict the recogniser waits for: its next pass is deferred until the
    verdict is in (decision 0024), so the words model may borrow the core it leaves idle.

    Two at most: a one-token verdict took ~11 ms on two threads against ~19 on one here,
    and more were not measured (this machine has 2).  One on a single core (decision 0029).
    """
    n = available if available is not None else cores()
    return max(WORDS_THREADS, min(WORDS_THREADS + 1, n))


def server_threads(available: int | None = None) -> int:
    """Threads for the embedded answer server: what the recogniser and the words model
    leave, at least one, at most 4."""
    n = available if available is not None else cores()
    return max(1, min(MAX_THREADS, n - pass_threads(n) - WORDS_THREADS))


def limit_numpy_threads() -> None:
    """numpy's BLAS on one thread, for the whole process (once, at start-up).

    Its work here is small (Whisper's mel filterbank in each pass, a few resampler and
    feature products), and OpenBLAS's idle worker spins for ~55 ms after each call before
    it sleeps: on two cores it took the second one through every recognition pass and the
    verdict and request that follow it, for no faster pass (decision 0028).  Where numpy
    uses a library threadpoolctl does not know (Accelerate on recent macOS), nothing
    changes.
    """
    import numpy  # noqa: F401  (loads the BLAS library that threadpoolctl then finds)

    threadpool_limits(limits=1, user_api="blas")
