"""``bench paint``: does the answer pane paint a token of answer 100 as soon as one of answer 1?

The pane is the real :class:`app.ui.answer_view.AnswerView`, shown offscreen at a window's
size, fed the scripted interview's answer (bullets, bold, code: :mod:`devtools.scripted`)
``--answers`` times, every token handed over with the session clock's time and the Qt
loop run until the paint that reports it (its ``PaintedEvent``: the latency the window
puts in the session log).  Each answer's tokens are timed apart, so the first answers and
the last ones compare inside one run.

Beside the tokens, each answer's end is timed (``answer_done``: where the paged pane folds
its oldest answer away) and so is taking the answer back and restoring it (a withdrawn
answer: the document is laid out again).

Two panes run interleaved, answer by answer, so a machine that slows down slows both:
``paged`` (the product: the live document keeps the newest answers only) and
``unbounded`` (every answer kept in the live document: what the paging saves).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core.clock import SessionClock
from app.core.events import Event, PaintedEvent, TokenEvent
from app.observing.percentile import median, p95
from devtools.scripted import interview_script

if TYPE_CHECKING:
    from app.ui.answer_view import AnswerView

VARIANTS = ("paged", "unbounded")
SAMPLED = 5
"""Answers at each end whose tokens are compared (the first five against the last five)."""


def answer_tokens() -> list[str]:
    """The scripted interview's answer, token by token."""
    events = [make(0.0) for _, make in interview_script()]
    return [e.text for e in events if isinstance(e, TokenEvent)]


def run(args: argparse.Namespace) -> dict[str, Any]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # a measurement, not a window to look at
    from PySide6.QtWidgets import QApplication

    from app.ui.answer_view import KEEP, AnswerView

    app = QApplication.instance() or QApplication([])
    tokens = answer_tokens()
    clock = SessionClock()
    clock.start()
    panes: dict[str, AnswerView] = {}
    painted: dict[str, list[PaintedEvent]] = {}
    for variant in VARIANTS:
        seen: list[PaintedEvent] = []
        painted[variant] = seen

        def post(event: Event, seen: list[PaintedEvent] = seen) -> None:
            if isinstance(event, PaintedEvent):
                seen.append(event)

        view = AnswerView(clock=clock, post=post, keep=None if variant == "unbounded" else args.keep or KEEP)
        view.resize(640, 420)
        view.show()
        panes[variant] = view
    app.processEvents()
    latencies: dict[str, dict[int, list[float]]] = {v: {} for v in VARIANTS}
    relayouts: dict[str, dict[int, list[float]]] = {v: {} for v in VARIANTS}
    for number in range(1, args.answers + 1):
        for variant, view in panes.items():
            latencies[variant][number] = _stream(app, view, painted[variant], clock, number, tokens)
            relayouts[variant][number] = _relayouts(app, view, number)
    summary = _summary(latencies, relayouts, args.answers, panes)
    _print(summary)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    target = Path(args.out) / "bench-paint.json"
    report = {"summary": summary, "latencies": latencies, "relayouts": relayouts}
    target.write_text(json.dumps(report, indent=1))
    print(f"\nwritten: {target}")
    for view in panes.values():
        view.close()
    return summary


def _stream(app: Any, view: AnswerView, seen: list[PaintedEvent], clock: SessionClock, number: int,
            tokens: list[str]) -> list[float]:
    """One answer, token by token, each painted before the next: its paint latencies."""
    out: list[float] = []
    for text in tokens:
        before = len(seen)
        view.append_token(number, number, text, clock.now())
        deadline = time.monotonic() + 2.0
        while len(seen) == before and time.monotonic() < deadline:
            app.processEvents()
        if len(seen) > before:
            out.append(seen[-1].latency)
    return out


def _relayouts(app: Any, view: AnswerView, number: int) -> list[float]:
    """Seconds (with the paint) for the answer's end, then for taking it back and restoring it."""
    out: list[float] = []
    steps: list[Callable[[], None]] = [lambda: view.mark_done(number, False),
                                       lambda: view.retract(number, "user"), lambda: view.restore(number)]
    for step in steps:
        began = time.perf_counter()
        step()
        view.repaint()
        app.processEvents()
        out.append(time.perf_counter() - began)
    return out


def _summary(latencies: dict[str, dict[int, list[float]]], relayouts: dict[str, dict[int, list[float]]],
             answers: int, panes: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    first = range(1, min(SAMPLED, answers) + 1)
    last = range(max(1, answers - SAMPLED + 1), answers + 1)
    for variant, per_answer in latencies.items():
        early = [x for n in first for x in per_answer[n]]
        late = [x for n in last for x in per_answer[n]]
        med_first, med_last = median(early), median(late)
        out[variant] = {
            "first_median_s": med_first, "first_p95_s": p95(early),
            "last_median_s": med_last, "last_p95_s": p95(late),
            "ratio_last_first": round(med_last / med_first, 2) if med_first and med_last else None,
            "done_first_median_s": median([relayouts[variant][n][0] for n in first]),
            "done_last_median_s": median([relayouts[variant][n][0] for n in last]),
            "withdraw_first_median_s": median([sum(relayouts[variant][n][1:]) for n in first]),
            "withdraw_last_median_s": median([sum(relayouts[variant][n][1:]) for n in last]),
            "document_blocks": panes[variant].document().blockCount(),
        }
    return out


def _print(summary: dict[str, Any]) -> None:
    print(f"token → paint, the first {SAMPLED} answers against the last {SAMPLED}")
    print(f"{'pane':<10} {'first med':>10} {'first p95':>10} {'last med':>10} {'last p95':>10} "
          f"{'last/first':>10} {'doc blocks':>10}")
    for variant, s in summary.items():
        print(f"{variant:<10} {_us(s['first_median_s']):>10} {_us(s['first_p95_s']):>10} "
              f"{_us(s['last_median_s']):>10} {_us(s['last_p95_s']):>10} "
              f"{s['ratio_last_first']!s:>10} {s['document_blocks']:>10}")
    print(f"\n{'pane':<10} {'done first':>11} {'done last':>11} {'withdraw 1st':>12} {'withdraw last':>13}")
    for variant, s in summary.items():
        print(f"{variant:<10} {_us(s['done_first_median_s']):>11} {_us(s['done_last_median_s']):>11} "
              f"{_us(s['withdraw_first_median_s']):>12} {_us(s['withdraw_last_median_s']):>13}")


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e6:.0f} µs"
