"""A logistic regression on the hidden state, fitted by Newton's method (plain numpy:
deterministic, no solver to install), and the figures that judge it."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from devtools.bench.signals import auc

Array = npt.NDArray[np.float64]
L2 = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
"""Penalties tried (on standardised features, summed over a balanced data set of weight
one per class); the one with the best grouped cross-validated log loss is kept."""


def logistic(x: Array, y: Array, l2: float, iterations: int = 30) -> tuple[Array, float]:
    """Weights and bias minimising the class-balanced log loss + ``l2``·|w|²/2 (the classes
    weigh the same: a verdict's prior is even, the policy's thresholds set the doubt)."""
    n, d = x.shape
    weight = np.where(y > 0, 0.5 / max(1, int(y.sum())), 0.5 / max(1, int(n - y.sum())))
    xb = np.hstack([x, np.ones((n, 1))])
    theta = np.zeros(d + 1)
    penalty = np.full(d + 1, l2)
    penalty[-1] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(xb @ theta)))
        grad = xb.T @ (weight * (p - y)) + penalty * theta
        hess = (xb * (weight * p * (1 - p))[:, None]).T @ xb + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        theta -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    return theta[:-1], float(theta[-1])


def log_loss(z: Array, y: Array) -> float:
    """Class-balanced mean log loss of log-odds ``z``."""
    lp1, lp0 = -np.logaddexp(0.0, -z), -np.logaddexp(0.0, z)
    return float(-0.5 * lp1[y > 0].mean() - 0.5 * lp0[y == 0].mean())


def choose_l2(x: Array, y: Array, groups: list[str]) -> float:
    """The penalty with the best log loss over 4 folds of whole families."""
    names = sorted(set(groups))
    fold = np.array([names.index(g) % 4 for g in groups])
    best, best_loss = L2[0], float("inf")
    for l2 in L2:
        loss = 0.0
        for k in range(4):
            w, b = logistic(x[fold != k], y[fold != k], l2)
            loss += log_loss(x[fold == k] @ w + b, y[fold == k])
        if loss < best_loss - 1e-12:
            best, best_loss = l2, loss
    return best


def accuracy(z: Array, y: Array, threshold: float = 0.0) -> float:
    return float(((z > threshold) == (y > 0)).mean())


def separation(score: Array, y: Array) -> float:
    """ROC AUC: P(a whole text scores above a cut one)."""
    value = auc(list(score[y > 0]), list(score[y == 0]))
    return float("nan") if value is None else value
