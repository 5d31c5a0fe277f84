"""How the machine's cores are shared between the recogniser and llama.cpp.

Three engines compute at once: the recogniser decodes a pass after another while anyone
speaks; the words model (llama.cpp, in process) scores each pause (one short forward
pass); the embedded answer server (llama.cpp, its own process) streams an answer while the
next question is already being transcribed.  llama.cpp's threads meet at a barrier after
every operation and spin there, so a llama.cpp thread that has to wait for a core holds
up all the others at every one of a token's hundreds of operations.  Measured on this
project's 2-core machine beside a recognition loop (``python -m devtools.bench.cores``):
the server at 2 threads took 2.2 s to its first token (p95 7.9 s) and over 20 s for 40
tokens, at 1 thread 0.43 s and 1.6 s.  So llama.cpp gets the cores the recogniser leaves,
never more.
"""

from __future__ import annotations

import os

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
    two, for tiny.en (146 against 161 ms) and for base on Chinese (295 against 316 ms).
    """
    n = available if available is not None else cores()
    return max(1, min(MAX_THREADS, n - 1))


WORDS_THREADS = 1
"""The words model scores a sentence in one forward pass (~30-50 ms on one thread); beside
a recognition loop on 2 cores one thread kept its p95 at 108 ms, where two reached 709."""


def server_threads(available: int | None = None) -> int:
    """Threads for the embedded answer server: what the recogniser and the words model
    leave, at least one, at most 4."""
    n = available if available is not None else cores()
    return max(1, min(MAX_THREADS, n - pass_threads(n) - WORDS_THREADS))
