"""How much a glossary term needs steering, by the recogniser's own prior.

A term Whisper already expects ("Go", "Python") gains little from the prompt; one it
finds unlikely ("Kubernetes", "PostgreSQL") is the one it mishears ("Cuba next",
"post-gorescuel").  :func:`term_prior` asks the decoder how likely each term is after a
neutral sentence start ("We use …") with no speech to hear: its log-probability, the
model's own prior, which ranks terms better than counting their pieces (a one-piece
"Helm" is as unlikely as a two-piece "Redis"; "Go" is likelier than both) and needs no
speech synthesizer at run time.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

PRIOR_CONTEXT = "We use"
"""A sentence start any tool name can follow, and no name's hint."""


class Scorer(Protocol):
    """What :class:`app.asr.decoder.WhisperDecoder` offers for scoring (a protocol, so
    this module needs no model to import)."""

    @property
    def terms(self) -> tuple[str, ...]: ...

    def pieces(self, term: str) -> int: ...

    def token_log_probs(self, audio: npt.NDArray[np.int16] | npt.NDArray[np.float32], texts: list[str], *,
                        language: str = "en", steered: bool = True,
                        whole: bool = False) -> list[list[float]]: ...


def term_prior(scorer: Scorer, terms: list[str]) -> list[float]:
    """Each term's log-probability to the decoder after :data:`PRIOR_CONTEXT`, over 1 s of
    silence (the decoder always hears something; silence is the sound of no hint):
    lower means the term needs steering more."""
    if not terms:
        return []
    skip = scorer.pieces(PRIOR_CONTEXT)
    silence = np.zeros(16_000, dtype=np.int16)
    scores = scorer.token_log_probs(silence, [f"{PRIOR_CONTEXT} {t}" for t in terms], steered=False,
                                    whole=True)
    return [sum(s[skip: skip + scorer.pieces(t)]) for s, t in zip(scores, terms, strict=True)]
