"""Median and nearest-rank percentiles: the one way latencies are summarised.

Every figure the product and its benchmarks print (the latency view, ``bench``, the
paint benchmark, ``doctor``) goes through here, so a "p95" means the same thing
everywhere.  Nearest rank rather than interpolation: the value reported is always a
latency that really happened, even with few turns (below 20 samples p95 is simply the
slowest one).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable


def median(values: Iterable[float]) -> float | None:
    """The middle value (mean of the two middle ones for an even count); None when empty."""
    data = list(values)
    return statistics.median(data) if data else None


def percentile(values: Iterable[float], q: float) -> float | None:
    """Nearest-rank percentile, ``q`` in 0…1: the smallest value with at least ``q`` of
    the samples at or below it; None when empty."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def p95(values: Iterable[float]) -> float | None:
    return percentile(values, 0.95)
