"""Token → paint latency of the real answer pane while another thread burns the CPU.

A feeder thread emits TokenEvents on the bus (stamped with the session clock) at a high
rate, as the answer engine does; a second thread runs numpy matmuls flat out, as ASR
decoding does.  The window reports one PaintedEvent per paint for the oldest token that
paint put on screen, so the figures below are the worst token of each paint.

    .venv/bin/python packaging/paint_latency.py               # offscreen platform
    .venv/bin/python packaging/paint_latency.py --xvfb        # a real X server (Xvfb)
    .venv/bin/python packaging/paint_latency.py --compare     # + per-token render cost

Prints median, p90, p99 and max in milliseconds.  Not a test: timings depend on the box.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ANSWER = (
    "**Short answer:** yes, I have led a migration like that.\n"
    "- **Context:** a monolith with 40 services' worth of code and one database.\n"
    "- **What I did:** carved out the billing domain first, behind a `BillingClient`.\n"
    "- **Result:** deploys went from weekly to daily, incidents dropped by half.\n"
    "\n"
)


def tokens(count: int) -> list[str]:
    words: list[str] = []
    for line in ANSWER.splitlines(keepends=True):
        parts = line.split(" ")
        for i, part in enumerate(parts):
            words.append(part if i == 0 else " " + part)
    out: list[str] = []
    while len(out) < count:
        out.extend(words)
    return out[:count]


def burn(stop: threading.Event, size: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    out = np.empty_like(a)
    while not stop.is_set():
        np.matmul(a, b, out=out)


def run(args: argparse.Namespace) -> int:
    from PySide6.QtCore import QTimer

    from app.core.config import Settings
    from app.core.events import Event, PaintedEvent, TokenEvent
    from app.ui.app import ensure_app
    from app.ui.hotkeys import NullBackend
    from app.ui.window import MainWindow
    from devtools.scripted import ScriptedController

    app = ensure_app()
    controller = ScriptedController()
    controller.clock.start()
    window = MainWindow(controller, Settings(), hotkey_backend=NullBackend("benchmark"),
                        state_file=Path(tempfile.mkdtemp()) / "window.ini")
    window.resize(560, 680)
    window.show()
    latencies: list[float] = []

    def on_event(event: Event) -> None:
        if isinstance(event, PaintedEvent):
            latencies.append(event.latency)

    controller.bus.subscribe(on_event)
    stop = threading.Event()
    burners = [threading.Thread(target=burn, args=(stop, args.matrix), daemon=True)
               for _ in range(args.burners)]
    stream = tokens(args.tokens)
    gap = 1.0 / args.rate

    def feed() -> None:
        time.sleep(0.5)  # let the window settle and the burners ramp up
        turn = 1
        next_at = time.perf_counter()
        for i, text in enumerate(stream):
            if i and i % 400 == 0:
                turn += 1  # a new answer block every 400 tokens, as turns do
            controller.bus.emit(TokenEvent(t=controller.clock.now(), turn=turn, request=turn, text=text))
            next_at += gap
            delay = next_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        time.sleep(0.3)
        stop.set()

    for b in burners:
        b.start()
    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    poll = QTimer()  # created on the GUI thread: a timer needs the loop of its own thread
    poll.timeout.connect(lambda: None if feeder.is_alive() else app.quit())
    poll.start(50)
    started = time.perf_counter()
    app.exec()
    elapsed = time.perf_counter() - started
    window.close_resources()
    ms = [x * 1000 for x in latencies]
    platform = app.platformName()
    print(f"platform={platform} tokens={len(stream)} rate={args.rate}/s "
          f"burner_threads={args.burners} matrix={args.matrix} run={elapsed:.1f}s")
    if not ms:
        print("no paints recorded (is the window visible?)")
        return 1
    print(f"paints={len(ms)}  token->paint latency (oldest token per paint):")
    from app.observing.percentile import median, percentile

    print(f"  median {median(ms) or 0:.2f} ms   p90 {percentile(ms, 0.90) or 0:.2f} ms   "
          f"p99 {percentile(ms, 0.99) or 0:.2f} ms   max {max(ms):.2f} ms")
    if args.compare:
        compare_render_cost(len(stream))
    return 0


def compare_render_cost(count: int) -> None:
    """Per-token cost of the incremental renderer vs re-rendering the whole Markdown."""
    from PySide6.QtWidgets import QTextEdit

    from app.ui.answer_view import AnswerView

    stream = tokens(count)
    view = AnswerView()
    t0 = time.perf_counter()
    for text in stream:
        view.append_token(1, 1, text)
    incremental = (time.perf_counter() - t0) / len(stream) * 1e6
    full = QTextEdit()
    raw = ""
    sample = stream[: min(len(stream), 600)]
    t0 = time.perf_counter()
    for text in sample:
        raw += text
        full.setMarkdown(raw)
    rerender = (time.perf_counter() - t0) / len(sample) * 1e6
    print(f"render cost per token: incremental {incremental:.0f} µs over {len(stream)} tokens; "
          f"setMarkdown(whole answer) {rerender:.0f} µs averaged over the first {len(sample)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=200.0, help="tokens per second")
    parser.add_argument("--burners", type=int, default=1, help="CPU-burning threads")
    parser.add_argument("--matrix", type=int, default=384, help="matmul size of the burner")
    parser.add_argument("--xvfb", action="store_true", help="run under a private Xvfb (xcb)")
    parser.add_argument("--compare", action="store_true", help="also time render strategies")
    args = parser.parse_args(argv)
    os.environ.setdefault("INTERVIEW_COPILOT_CONFIG_DIR", tempfile.mkdtemp(prefix="pl-cfg-"))
    return run(args)  # --xvfb is handled before Qt is imported, in __main__


if __name__ == "__main__":
    if "--xvfb" in sys.argv:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from screenshot import start_xvfb

        proc, display = start_xvfb(1024, 900)
        os.environ["DISPLAY"] = display
        os.environ["QT_QPA_PLATFORM"] = "xcb"
        try:
            raise SystemExit(main([a for a in sys.argv[1:] if a != "--xvfb"]))
        finally:
            proc.terminate()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    raise SystemExit(main())
