"""Pictures of the benchmark JSON: distributions per mode, and where each turn's time went.

A median in a table hides the shape that matters for a live conversation (one 2 s
outlier per interview is what the user remembers) and hides which stage a turn spent its
time in.  These plots are written next to the JSON so a README or a PR can show them.
matplotlib is imported lazily (it is an optional extra) and driven through its
object API with the Agg canvas: no pyplot global state, no GUI backend, safe to call
from a process that also runs Qt.

``python -m devtools.bench.plots bench-out/bench-turns.json`` plots one file.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

INSTALL_HINT = "plots need matplotlib: pip install 'interview-copilot[diagnostics]'"

MODE_COLORS = {"naive": "#c0504d", "user-fixes": "#e0a030", "product": "#2e7d4f",
               "seed": "#e0a030", "ours": "#2e7d4f"}  # the modes' names before 5 Dec
STAGE_COLORS = ("#8da0cb", "#66c2a5", "#fc8d62", "#e78ac3", "#a6d854", "#ffd92f")

SPEECH_LANE, ANSWER_LANE = -0.2, 0.2
"""Each turn is two lanes on one time axis: what the listener did (endpoint, final) above,
what the answer did (request → first token → shown) below.  A speculative request
leaves before the endpoint, so its span overlaps the listener's instead of following it."""


class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed; the message says how to fix it."""


def _figure(width: float, height: float) -> Figure:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PlotsUnavailable(INSTALL_HINT) from exc
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _ms(values: Sequence[float | None]) -> list[float]:
    return [v * 1000 for v in values if v is not None]


def _strip(ax: Axes, groups: Sequence[Sequence[float]], colors: Sequence[str]) -> None:
    """Box plot with every sample on top: with 6-50 turns per mode the points are the data."""
    positions = list(range(1, len(groups) + 1))
    nonempty = [(p, g) for p, g in zip(positions, groups, strict=True) if g]
    if nonempty:
        ax.boxplot([g for _, g in nonempty], positions=[p for p, _ in nonempty], widths=0.5,
                   showfliers=False, medianprops={"color": "black", "linewidth": 1.5})
    for pos, values, color in zip(positions, groups, colors, strict=True):
        n = len(values)
        jitter = [(i - (n - 1) / 2) * (0.3 / max(n, 1)) for i in range(n)]
        ax.scatter([pos + j for j in jitter], values, s=22, color=color, alpha=0.85, zorder=3,
                   edgecolors="white", linewidths=0.5)
        if values:
            med = statistics.median(values)
            ax.annotate(f"{med:.0f} ms", (pos + 0.3, med), fontsize=8, va="center")


def _turn_spans(turn: dict[str, Any]) -> list[tuple[str, float, float, float]]:
    """(label, lane, start, end) in ms after the end of speech, from the turn's recorded
    steps; spans before the end of speech (a question that went on) are cut at 0."""
    def at(value: float | None) -> float | None:
        return None if value is None else value * 1000

    endpoint, final_after = at(turn.get("endpoint_wait")), at(turn.get("asr_final"))
    to_request, to_token = at(turn.get("final_to_request")), at(turn.get("request_to_first_token"))
    held = at(turn.get("first_token_to_shown"))
    if endpoint is None or final_after is None:
        latency = at(turn.get("response_latency"))
        return [] if latency is None else [("speech end → first token shown", ANSWER_LANE, 0.0, latency)]
    final = endpoint + final_after
    spans = [("speech end → endpoint", SPEECH_LANE, 0.0, endpoint),
             ("endpoint → final", SPEECH_LANE, endpoint, final)]
    if to_request is not None and to_token is not None:
        request = final + to_request
        if request > final:
            spans.append(("final → request sent", SPEECH_LANE, final, request))
        spans.append(("request → first token", ANSWER_LANE, request, request + to_token))
        if held is not None:
            spans.append(("first token → shown", ANSWER_LANE, request + to_token, request + to_token + held))
    return [(label, lane, max(0.0, start), end) for label, lane, start, end in spans if end > max(0.0, start)]


def plot_turns(json_path: str | Path) -> Path:
    """``bench turns`` JSON → PNG: response latency per mode, and a per-turn breakdown."""
    path = Path(json_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: dict[str, list[dict[str, Any]]] = data["turns"]
    modes = list(turns)
    rows = [(mode, t) for mode in modes for t in turns[mode]]
    fig = _figure(12, max(4.5, 0.32 * len(rows) + 1.5))
    left, right = fig.subplots(1, 2, width_ratios=(1, 1.6))

    groups = [_ms([t.get("response_latency") for t in turns[m]]) for m in modes]
    _strip(left, groups, [MODE_COLORS.get(m, "#4c72b0") for m in modes])
    ticks = [f"{m}\n(n={len(g)})" for m, g in zip(modes, groups, strict=True)]
    left.set_xticks(range(1, len(modes) + 1), ticks)
    left.set_ylabel("response latency: speech end → first token shown (ms)")
    left.set_ylim(bottom=0)
    left.grid(axis="y", alpha=0.3)
    left.set_title("Response latency per mode")

    labels_seen: dict[str, str] = {}
    y_labels: list[str] = []
    for y, (mode, turn) in enumerate(rows):
        for label, lane, start, end in _turn_spans(turn):
            color = labels_seen.setdefault(label, STAGE_COLORS[len(labels_seen) % len(STAGE_COLORS)])
            right.barh(y + lane, end - start, left=start, height=0.4, color=color, edgecolor="white",
                       linewidth=0.5)
        latency = turn.get("response_latency")
        if latency is not None:
            right.annotate(f"{latency * 1000:.0f}", (latency * 1000 + 10, y + ANSWER_LANE), fontsize=7,
                           va="center")
        y_labels.append(f"{mode} {Path(str(turn.get('clip', ''))).stem}")
    from matplotlib.patches import Patch

    right.legend(handles=[Patch(color=c, label=lbl) for lbl, c in labels_seen.items()], loc="lower right",
                 fontsize=8)
    right.set_yticks(range(len(rows)), y_labels, fontsize=7)
    right.invert_yaxis()
    right.set_xlabel("ms after the interviewer stopped speaking")
    right.grid(axis="x", alpha=0.3)
    right.set_title("Where each turn's time went")
    endpoint = data.get("endpoint", "")
    fig.suptitle(f"bench turns — {len(rows)} turns{f' against {endpoint}' if endpoint else ''}", fontsize=10)
    out = path.with_suffix(".png")
    fig.savefig(out)
    return out


def plot_asr(json_path: str | Path) -> Path:
    """``bench asr`` JSON → PNG: partial cadence, partial lag and final latency distributions."""
    path = Path(json_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    clips: list[dict[str, Any]] = data["clips"]
    summary: dict[str, Any] = data.get("summary", {})
    fig = _figure(13, 4.2)
    cadence_ax, lag_ax, final_ax = fig.subplots(1, 3)

    for ax, key, title, color in ((cadence_ax, "partial_gaps", "Partial cadence (time between partials)",
                                   "#4c72b0"),
                                  (lag_ax, "partial_lags", "Partial lag (shown − audio heard)", "#55a868")):
        values = _ms([v for c in clips for v in c.get(key, [])])
        if values:
            ax.hist(values, bins=min(30, max(5, len(values) // 3)), color=color, alpha=0.85)
            med = statistics.median(values)
            ax.axvline(med, color="black", linewidth=1)
            ax.annotate(f"median {med:.0f} ms", (med, ax.get_ylim()[1] * 0.92), fontsize=8,
                        xytext=(4, 0), textcoords="offset points")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("ms")
        ax.grid(alpha=0.3)

    finals = _ms([c.get("final_latency") for c in clips])
    _strip(final_ax, [finals], ["#c44e52"])
    final_ax.set_xticks([1], [f"{len(finals)} clips"])
    final_ax.set_ylabel("speech end → final transcript (ms)")
    final_ax.set_ylim(bottom=0)
    final_ax.grid(axis="y", alpha=0.3)
    final_ax.set_title("Final latency", fontsize=10)
    unit = "cer" if "cer_streaming" in summary else "wer"
    wer = summary.get(f"{unit}_streaming")
    fig.suptitle(f"bench asr — model {summary.get('model', '?')}, {len(clips)} clips"
                 + (f", streaming {unit.upper()} {wer:.1%}" if isinstance(wer, float) else ""), fontsize=10)
    out = path.with_suffix(".png")
    fig.savefig(out)
    return out


def plot_any(json_path: str | Path) -> Path:
    """Pick the plot from the JSON's shape (``turns`` or ``clips``)."""
    data = json.loads(Path(json_path).read_text(encoding="utf-8"))
    return plot_turns(json_path) if "turns" in data else plot_asr(json_path)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(plot_any(arg))
