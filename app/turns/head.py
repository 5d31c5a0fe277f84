"""The trained end-of-turn head: a logistic regression on SmolLM2's last hidden state.

Trained on interview questions and their truncations written for it, in English and
Mandarin (``python -m devtools.turns_train``; decision 0053).  It is linear in the final
hidden state ``h``, and the logits the words model computes anyway are ``E·h`` (``E`` the
output matrix), so it ships as weights over the logits, ``E(EᵀE)⁻¹w``: a verdict is one
dot product over the row llama.cpp already returns.  Switching llama.cpp's embedding output
on instead made it compute every token's logits, not the last one's (~16 % more per eval).
A second weight reads the zero-shot log P(<|im_end|>).  The file is pinned like a model:
one that is not the file we measured is refused, and the text rules decide.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from app.platform.pinned import END_OF_TURN_HEAD, IntegrityError, verify_file

HEAD_PATH = Path(__file__).with_name(END_OF_TURN_HEAD.name)
FORMAT = "end-of-turn-head/1"


@dataclass(frozen=True, slots=True)
class EndOfTurnHead:
    logit_weights: npt.NDArray[np.float64]
    """One weight per vocabulary entry: the hidden-state weights seen through the logits."""
    zero_shot_weight: float
    bias: float
    prompt: str
    """The prompt it was trained after (the words model's own)."""

    def log_p_end(self, logits: npt.NDArray[np.float64], zero_shot: float) -> float:
        """Natural log of P(the turn is over), from the last token's logits and the
        zero-shot log P(<|im_end|>) they give."""
        z = float(self.logit_weights @ logits) + self.zero_shot_weight * zero_shot + self.bias
        return -float(np.logaddexp(0.0, -z))


def load_head(path: Path | None = None, *, root: Path | None = None) -> EndOfTurnHead:
    """The shipped head, once its file is the pinned one; :class:`IntegrityError` otherwise
    (``root``: where verification markers live, as in :func:`app.platform.pinned.verify_file`)."""
    source = verify_file(path or HEAD_PATH, END_OF_TURN_HEAD, root=root)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}")
        weights = np.frombuffer(base64.b64decode(data["logit_weights"]), dtype="<f4").astype(np.float64)
        return EndOfTurnHead(weights, float(data["zero_shot_weight"]), float(data["bias"]),
                             str(data["prompt"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise IntegrityError(f"{source.name} could not be read: {exc}") from exc


def dump_head(head: EndOfTurnHead) -> bytes:
    """The file :func:`load_head` reads, the same bytes for the same weights."""
    data = {"format": FORMAT, "prompt": head.prompt,
            "zero_shot_weight": float(np.float32(head.zero_shot_weight)),
            "bias": float(np.float32(head.bias)),
            "logit_weights": base64.b64encode(head.logit_weights.astype("<f4").tobytes()).decode("ascii")}
    return (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8")
