"""End of turn as the field measures it: false cut-offs at mid-turn pauses against the delay.

LiveKit's eot-bench scores a turn detector by two numbers swept over its thresholds: the
share of pauses *inside* a turn at which it called the turn over (a false cut-off), and
the delay after the true end at which it did.  ``bench turns --pauses`` scores the whole
pipeline the same way, on any corpus whose manifest lists ``pauses``:

- a pause is a *false cut-off* when an answer reached the screen after the pause began and
  before the question's true end (withdrawn later or not: the user saw it);
- a question's *delay* is the first token of the answer left on screen after its true end
  (``response_latency`` of :mod:`devtools.bench.turns`), so ours runs further than
  eot-bench's, to the first token painted.

Each mode of the run is a point (rate, p50 delay); the modes of one sweep
(``product@turns.endpoint_confirmed_ms=300``, ``…=500``) are joined into a curve, drawn
beside eot-bench's published English points (:data:`PUBLISHED`)::

    interview-copilot bench turns --pauses --corpus ../shared/corpus/dev-pauses --modes product,rules
    python -m devtools.bench.eot bench-out/bench-turns.json --out docs/eot-curve.png
"""

from __future__ import annotations

import argparse
import bisect
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from app.observing.percentile import median, p95

PUBLISHED: dict[str, tuple[tuple[float, float], ...]] = {
    "LiveKit turn detector v1": ((0.300, 0.099), (0.600, 0.045)),
    "Deepgram Flux": ((0.300, 0.129), (0.600, 0.099)),
    "Smart Turn v3.2": ((0.300, 0.352), (0.600, 0.148)),
    "VAD silence": ((0.300, 0.556), (0.600, 0.217)),
}
"""eot-bench's English figures (LiveKit, June 2026): (delay budget s, false cut-off rate).
Their delay is to the detector's verdict; ours to the first token on screen."""

LENGTH_BUCKETS = (0.5, 0.7, 0.9, 1.2)
"""Pause lengths are reported up to each bound (s): the longer the pause, the harder."""


def cut_offs(shown_at: Iterable[float], pauses: Sequence[tuple[float, float]], true_end: float) -> list[bool]:
    """For each pause (start, length), did an answer reach the screen after it began and
    before the next pause began (or the question's true end, for the last)?  An answer
    shown before the first pause (mid-word) is counted at the first."""
    starts = sorted(start for start, _ in pauses)
    cut = [False] * len(starts)
    for t in shown_at:
        if not starts or t >= true_end:
            continue
        cut[max(0, bisect.bisect_right(starts, t) - 1)] = True
    order = sorted(range(len(pauses)), key=lambda i: pauses[i][0])
    return [cut[order.index(i)] for i in range(len(pauses))]


def summary(pauses: Sequence[Sequence[float]], cut: Sequence[Sequence[bool]],
            delays: Sequence[float | None]) -> dict[str, Any]:
    """Per clip: its pause lengths, whether each was cut, its delay (None: no answer)."""
    lengths = [length for clip in pauses for length in clip]
    flags = [flag for clip in cut for flag in clip]
    answered = [d for d in delays if d is not None]
    buckets: dict[str, list[int]] = {}
    low = 0.0
    for high in LENGTH_BUCKETS:
        inside = [f for length, f in zip(lengths, flags, strict=True) if low < length <= high]
        buckets[f"{low:.1f}-{high:.1f}"] = [sum(inside), len(inside)]
        low = high
    return {
        "pauses": len(flags),
        "false_cutoffs": sum(flags),
        "false_cutoff_rate": round(sum(flags) / len(flags), 3) if flags else None,
        "by_length": buckets,
        "delay_median_s": median(answered),
        "delay_p95_s": p95(answered),
        "unanswered": len(delays) - len(answered),
    }


def sweeps(modes: Iterable[str]) -> dict[str, list[str]]:
    """Modes grouped into curves: ``product@turns.x=1`` and ``product@turns.x=2`` are one
    sweep of ``product@turns.x`` (``…@turns.x=1@turns.y=2``: of x and y together); a mode
    with no change is a point of its own."""
    groups: dict[str, list[str]] = {}
    for mode in modes:
        if "~" in mode:
            continue
        base, *changes = mode.split("@")
        key = "@".join([base, *(c.partition("=")[0] for c in changes)])
        groups.setdefault(key, []).append(mode)
    return groups


def draw(reports: Sequence[tuple[str, dict[str, Any]]], out: Path) -> None:
    """The curve of each report (a title and ``bench-turns.json``'s summary) in one PNG."""
    from devtools.bench.plots import _figure

    fig = _figure(6.4 * len(reports), 4.8)
    axes = fig.subplots(1, len(reports), squeeze=False)[0]
    for ax, (title, modes) in zip(axes, reports, strict=True):
        for name, points in PUBLISHED.items():
            xs, ys = zip(*points, strict=True)
            ax.plot([x * 1000 for x in xs], [y * 100 for y in ys], "--", marker="s", alpha=0.45,
                    label=f"{name} (eot-bench, to verdict)")
        for curve, members in sweeps(m for m in modes if m != "ratios").items():
            scored = [(m, modes[m].get("eot") or {}) for m in members]
            pts = sorted((e["delay_median_s"] * 1000, e["false_cutoff_rate"] * 100, m) for m, e in scored
                         if e.get("delay_median_s") is not None and e.get("false_cutoff_rate") is not None)
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", linewidth=2, label=curve)
            for x, y, m in pts:
                values = [c.partition("=")[2] for c in m.split("@")[1:]]  # "1000/800": x and y
                ax.annotate("/".join(values), (x, y), fontsize=7,
                            textcoords="offset points", xytext=(4, 4))
        ax.set_title(title)
        ax.set_xlabel("p50 delay after the true end, ms (ours: to the first token on screen)")
        ax.set_ylabel("false cut-offs at mid-turn pauses, %")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="upper right")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)


def table(modes: dict[str, Any]) -> list[str]:
    """Markdown rows: mode, false cut-offs, by pause length, p50 / p95 delay."""
    rows = ["| mode | false cut-offs | by pause length (s) | first token p50 / p95 | unanswered |",
            "|---|---|---|---|---|"]
    for mode, s in modes.items():
        eot = s.get("eot") if isinstance(s, dict) else None
        if not eot or not eot["pauses"]:
            continue
        lengths = ", ".join(f"{k}: {c}/{n}" for k, (c, n) in eot["by_length"].items() if n)
        rows.append(f"| {mode} | {eot['false_cutoffs']} of {eot['pauses']} ({eot['false_cutoff_rate']:.0%}) "
                    f"| {lengths} | {_ms(eot['delay_median_s'])} / {_ms(eot['delay_p95_s'])} "
                    f"| {eot['unanswered']} |")
    return rows


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", type=Path, help="bench-turns.json files (one panel each)")
    parser.add_argument("--titles", help="panel titles separated by \";\" (default: the folder names)")
    parser.add_argument("--out", type=Path, default=Path("docs/eot-curve.png"))
    args = parser.parse_args()
    titles = args.titles.split(";") if args.titles else [p.parent.name for p in args.reports]
    loaded = [(t, json.loads(p.read_text(encoding="utf-8"))["summary"]) for t, p in
              zip(titles, args.reports, strict=True)]
    for title, modes in loaded:
        print(f"\n{title}")
        print("\n".join(table(modes)))
    draw(loaded, args.out)
    print(f"\nwritten: {args.out}")


if __name__ == "__main__":
    main()
