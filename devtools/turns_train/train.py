"""The training run: texts, features, fit, held-out figures, the weights file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from app.turns.head import EndOfTurnHead, dump_head
from app.turns.words import PROMPT
from devtools.turns_train import dataset, features, fit

CUT_SHARE_ABOVE = 0.05
"""``words_complete_logp``: the level that no more than this share of held-out cut texts
reach (a +1 vote for words that go on is a false cut-off; the issue's target is 5 %)."""
WHOLE_SHARE_BELOW = 0.05
"""``words_incomplete_logp``: the level that no more than this share of held-out whole
questions fall under (a -1 vote, the long wait, for a finished question)."""


def _quantile(values: np.ndarray, share: float) -> float:
    return float(np.quantile(values, share, method="lower"))


def run(out: Path, feats: features.Features | None = None) -> dict[str, object]:
    """Train and write the head to ``out``; ``feats``: the texts' features, already computed."""
    examples = dataset.examples("en") + dataset.examples("zh")
    feats = feats or features.compute([e.text for e in examples])
    y = np.array([e.label for e in examples], dtype=np.float64)
    held = np.array([e.held_out for e in examples])
    lang = np.array([e.language for e in examples])
    kinds = np.array([e.kind for e in examples])
    x = np.hstack([feats.hidden, feats.zero_shot[:, None]])
    mean, std = x[~held].mean(axis=0), x[~held].std(axis=0) + 1e-9
    xs = (x - mean) / std
    groups = [f"{e.language}:{e.family}" for e, h in zip(examples, held, strict=True) if not h]
    l2 = fit.choose_l2(xs[~held], y[~held], groups)
    w, b = fit.logistic(xs[~held], y[~held], l2)
    z = xs @ w + b
    log_p = -np.logaddexp(0.0, -z)
    # the same function of the raw features, then of the logits (L = E·h, E fitted by least squares)
    raw = w / std
    bias = b - float(raw @ mean)
    e_t = np.linalg.solve(feats.hh, feats.hl)  # Eᵀ: (hidden, vocabulary)
    logit_weights = e_t.T @ np.linalg.solve(e_t @ e_t.T, raw[:-1])
    head = EndOfTurnHead(np.asarray(logit_weights, dtype=np.float64), float(raw[-1]), bias, PROMPT)
    report: dict[str, object] = {"texts": len(examples), "l2": l2, "languages": {}}
    for language in ("en", "zh"):
        sel = held & (lang == language)
        cut, whole = log_p[sel & (y == 0)], log_p[sel & (y > 0)]
        report["languages"][language] = {  # type: ignore[index]
            "train": int(((~held) & (lang == language)).sum()), "held_out": int(sel.sum()),
            "held_out_families": sorted({e.family for e in examples
                                         if e.held_out and e.language == language}),
            "head_auc": round(fit.separation(z[sel], y[sel]), 4),
            "head_accuracy": round(fit.accuracy(z[sel], y[sel]), 4),
            "zero_shot_auc": round(fit.separation(feats.zero_shot[sel], y[sel]), 4),
            "zero_shot_accuracy_at_-10": round(fit.accuracy(feats.zero_shot[sel], y[sel], -10.0), 4),
            "complete_logp": round(_quantile(cut, 1 - CUT_SHARE_ABOVE), 2),
            "incomplete_logp": round(_quantile(whole, WHOLE_SHARE_BELOW), 2),
            "by_kind_head_accuracy": {
                kind: round(fit.accuracy(z[sel & (kinds == kind)], y[sel & (kinds == kind)]), 4)
                for kind in sorted(set(kinds[sel]))},
        }
    out.mkdir(parents=True, exist_ok=True)
    (out / "end_of_turn_head.json").write_bytes(dump_head(head))
    (out / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return report
