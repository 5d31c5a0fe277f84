"""``bench screen``: reading the screen on this machine, and asking what was read.

On pages rendered here (:mod:`devtools.screen_pages`: problems, editors, chat; English and
Mandarin; 1x and 2x; light and dark; and whole 1920x1080 screens):

- character error rate of the text as read against the text drawn (reading order included);
- "again" → text shown: the window's hide delay (where the window is over the region), the
  grab's conversion to pixels (a real QImage of the page) and the read, per page;
- let go → text shown, for a region dragged over a frozen screen (each page placed on a
  whole screen beside other text): the screen is read from the freeze on, nearest the press
  first (:mod:`app.screen.ahead`; the press halfway through), so this is swept over how
  long the drag took (0 s: let go at once), against the region read alone;
- text confirmed → first answer token, a written question against a spoken one through
  the same engine and test server (relay profile), interleaved.

``--against REV`` (a commit, or a folder holding another checkout) reads every page with
that tree's ``app/screen/ocr.py`` too (loaded beside ours in this process, on this tree's
picture and layout modules), page by page in ABBA order, and reports hotkey → text and
the error rate of both with the ratio: a change to the reader is measured in one sitting.

The baseline, in the same sitting: RapidOCR as it comes (its own wheel's PP-OCRv6 small
models, its default sizes, no scaling or ink, raw line order).  Medians, p95s and
ours/baseline ratios; the machine is shared, so the figures carry the load average they
ran under.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from app.core.config import Settings
from app.platform.packages import package_folders
from app.screen.ocr import Reader
from devtools.screen_pages import Page, corpus, full_screen


def cer(read: str, expected: str) -> float:
    return Levenshtein.distance(read, expected) / max(1, len(expected))


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


RAPIDOCR_MODELS = ("PP-OCRv6_det_small.onnx", "PP-OCRv6_rec_small.onnx")
"""The detector and recogniser RapidOCR's own wheel carries: the baseline's."""


def _baseline_engine(threads: int) -> Any:
    from rapidocr import RapidOCR

    folder = package_folders("rapidocr")[0] / "models"
    return RapidOCR(params={"Global.use_cls": False, "Global.log_level": "error",
                            "Det.model_path": str(folder / RAPIDOCR_MODELS[0]),
                            "Rec.model_path": str(folder / RAPIDOCR_MODELS[1]),
                            "EngineConfig.onnxruntime.intra_op_num_threads": threads})


def _baseline_read(engine: Any, page: Page) -> tuple[str, float]:
    started = time.perf_counter()
    result = engine(page.image)
    seconds = time.perf_counter() - started
    return "\n".join(result.txts or ()), seconds


def _grab_seconds(page: Page) -> float:
    """The grab's share: a QImage of the screen converted to the pixels the reader takes."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication, QImage

    from app.ui.capture import to_array

    _ = QGuiApplication.instance() or QGuiApplication([])
    h, w = page.image.shape[:2]
    image = QImage(page.image.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()
    started = time.perf_counter()
    to_array(image)
    return time.perf_counter() - started


def read_pages(pages: list[Page], repeats: int, threads: int) -> list[dict[str, Any]]:
    from app.ui.capture import HIDE_MS

    reader = Reader(threads=threads)
    baseline = _baseline_engine(threads)
    warm = pages[0]
    reader.read(warm.image, warm.language)  # the first capture loads the models: timed apart
    _baseline_read(baseline, warm)
    rows = []
    for page in pages:
        ours, theirs, grabs = [], [], []
        text = raw = ""
        for _ in range(repeats):  # interleaved: ours, then the baseline, each repeat
            grabs.append(_grab_seconds(page))
            reading = reader.read(page.image, page.language)
            ours.append(reading.seconds)
            text = reading.text
            raw, seconds = _baseline_read(baseline, page)
            theirs.append(seconds)
        h, w = page.image.shape[:2]
        shown = [HIDE_MS / 1000 + g + o for g, o in zip(grabs, ours, strict=True)]
        rows.append({"page": page.name, "size": f"{w}x{h}", "cer": cer(text, page.expected),
                     "baseline_cer": cer(raw, page.expected), "read_median_s": statistics.median(ours),
                     "read_p95_s": _p95(ours), "baseline_median_s": statistics.median(theirs),
                     "hotkey_to_text_median_s": statistics.median(shown),
                     "hotkey_to_text_p95_s": _p95(shown)})
        row = rows[-1]
        print(f"{page.name:28} {w}x{h:<5} cer {row['cer']:.3f} (raw {row['baseline_cer']:.3f})  "
              f"read {row['read_median_s']:.2f} s (raw {row['baseline_median_s']:.2f} s)", flush=True)
    return rows


DRAGS_S = (0.0, 0.5, 1.0, 1.5)
"""How long the candidate takes from the freeze to letting the region go: 0 (the worst
case), and half a second to a second and a half, what pointing at one corner of a problem
and dragging to the other takes (two aimed movements of ~0.5-0.8 s each, Fitts' law)."""


def on_a_screen(page: Page) -> tuple[Any, tuple[int, int, int, int]]:
    """``page`` on a whole screen of its scale, with other text beside it (a chat, or an
    editor beside a chat), and the region a candidate drags around it (8 px loose)."""
    from devtools.screen_pages import COLOURS, render

    scale = page.scale
    other = render("editor" if page.kind == "chat" else "chat", language=page.language, scale=scale,
                   theme=page.theme, text_px=14)
    screen = np.empty((1080 * scale, 1920 * scale, 3), np.uint8)
    screen[:] = COLOURS[page.theme]["bg"]
    h, w = page.image.shape[:2]
    x, y = 60 * scale, 40 * scale
    screen[y:y + h, x:x + w] = page.image
    oh, ow = other.image.shape[:2]
    screen[-oh - 40 * scale:-40 * scale, -ow - 60 * scale:-60 * scale] = other.image
    margin = 8 * scale
    return screen, (x - margin, y - margin, x + w + margin, y + h + margin)


def read_ahead(pages: list[Page], threads: int, drags: tuple[float, ...] = DRAGS_S) -> list[dict[str, Any]]:
    """Let go → text for each page dragged over a whole screen, per drag time, against the
    region read alone (interleaved: alone, then each drag)."""
    from app.screen.ahead import ReadAhead, Region

    reader = Reader(threads=threads)
    reader.read(pages[0].image, pages[0].language)  # the models' load is timed apart
    rows = []
    for page in pages:
        screen, (x0, y0, x1, y1) = on_a_screen(page)
        crop = np.ascontiguousarray(screen[y0:y1, x0:x1])
        grab = _grab_seconds(page)  # the region's pixels out of the frozen grab, at let go
        started = time.perf_counter()
        alone = reader.read(crop, page.language)
        row: dict[str, Any] = {"page": page.name, "alone_s": grab + time.perf_counter() - started,
                               "alone_cer": cer(alone.text, page.expected)}
        for drag in drags:
            ahead = ReadAhead(reader, partial(np.asarray, screen), page.language)
            time.sleep(drag / 2)  # pointing at the first corner
            ahead.toward(x0, y0)  # the press: then the drag to the other corner
            time.sleep(drag / 2)
            let_go = time.perf_counter()
            reading = ahead.region(Region(x0, y0, x1, y1)) or reader.read(crop, page.language)
            row[f"drag_{drag}_s"] = grab + time.perf_counter() - let_go
            row[f"drag_{drag}_cer"] = cer(reading.text, page.expected)
            row[f"drag_{drag}_whole_s"] = ahead.seconds
        rows.append(row)
        print(f"{page.name:28} alone {row['alone_s']:.2f} s  " + "  ".join(
            f"drag {d:.1f} s → {row[f'drag_{d}_s']:.2f} s" for d in drags), flush=True)
    return rows


def _read_ahead_summary(rows: list[dict[str, Any]], drags: tuple[float, ...] = DRAGS_S) -> dict[str, Any]:
    out: dict[str, Any] = {"alone": {"median_s": statistics.median(r["alone_s"] for r in rows),
                                     "p95_s": _p95([r["alone_s"] for r in rows]),
                                     "mean_cer": statistics.mean(r["alone_cer"] for r in rows)}}
    for drag in drags:
        times = [r[f"drag_{drag}_s"] for r in rows]
        out[f"drag_{drag}"] = {"median_s": statistics.median(times), "p95_s": _p95(times),
                               "mean_cer": statistics.mean(r[f"drag_{drag}_cer"] for r in rows),
                               "ratio_to_alone": statistics.median(times) / out["alone"]["median_s"]}
    out["whole_screen_read_median_s"] = statistics.median(
        r[f"drag_{drags[-1]}_whole_s"] for r in rows if r[f"drag_{drags[-1]}_whole_s"] is not None)
    return out


def first_tokens(repeats: int) -> dict[str, Any]:
    """Text confirmed → first token: written vs spoken questions, one engine, interleaved."""
    from app.answer.engine import AnswerEngine, AnswerTarget
    from app.core.clock import SessionClock
    from app.core.events import EventBus, FinalEvent, TokenEvent
    from app.llm.client import LlmClient
    from app.prompt.builder import PromptBuilder
    from devtools.fake_server import PROFILES, FakeServer

    bus, clock = EventBus(), SessionClock()
    firsts: dict[int, float] = {}
    def first(event: object) -> None:
        if isinstance(event, TokenEvent):
            firsts.setdefault(event.turn, time.perf_counter())

    bus.subscribe(first)
    out: dict[str, list[float]] = {"written": [], "spoken": []}
    with FakeServer(PROFILES["relay"], api_key="sk-bench") as server:
        base = server.start()
        prompt = PromptBuilder(None, None, None)
        engine = AnswerEngine(Settings(), bus, clock, lambda _language: prompt,
                              lambda: LlmClient(base, "sk-bench", "gpt-4o-mini"),
                              target=AnswerTarget("gpt-4o-mini", "bench"))
        bus.subscribe(engine.on_event)
        engine.start()
        engine.warmed.wait(30)
        turn = 0
        for _ in range(repeats):
            for kind in ("written", "spoken"):
                turn += 1
                asked = time.perf_counter()
                if kind == "written":
                    engine.ask_written(turn, "1. Two Sum\nGiven an array nums, return two indices.")
                else:
                    bus.emit(FinalEvent(t=clock.now(), turn=turn, text="How would you find two numbers "
                                        "that add up to a target?", audio_end=clock.now()))
                deadline = time.monotonic() + 30
                while turn not in firsts and time.monotonic() < deadline:
                    time.sleep(0.002)
                out[kind].append(firsts.get(turn, float("nan")) - asked)
                engine.wait_idle(30)
        engine.stop()
    summary: dict[str, Any] = {k: {"median_s": statistics.median(v), "p95_s": _p95(v)}
                               for k, v in out.items()}
    summary["ratio_written_to_spoken"] = summary["written"]["median_s"] / summary["spoken"]["median_s"]
    return summary


def reader_of(tree: Path) -> Any:
    """``tree``'s :class:`Reader` class, its module loaded beside ours."""
    path = tree / "app" / "screen" / "ocr.py"
    spec = importlib.util.spec_from_file_location("against_ocr", path)
    if not path.is_file() or spec is None or spec.loader is None:
        raise SystemExit(f"--against: no app/screen/ocr.py in {tree}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.Reader


def against(pages: list[Page], repeats: int, threads: int | None, rev: str) -> list[dict[str, Any]]:
    """Hotkey → text and error rate, this tree's reader and ``rev``'s, ABBA page by page."""
    from app.ui.capture import HIDE_MS
    from devtools.bench.against import tree_of

    with tree_of(rev) as tree:
        readers = {"here": Reader(threads=threads), rev: reader_of(tree)()}
        for reader in readers.values():
            reader.read(pages[0].image, pages[0].language)  # the models' load is timed apart
        rows = []
        for page in pages:
            shown: dict[str, list[float]] = {name: [] for name in readers}
            errors: dict[str, float] = {}
            for rep in range(repeats):
                order = ["here", rev, rev, "here"] if rep % 2 == 0 else [rev, "here", "here", rev]
                for name in order:
                    grab = _grab_seconds(page)
                    reading = readers[name].read(page.image, page.language)
                    shown[name].append(HIDE_MS / 1000 + grab + reading.seconds)
                    errors[name] = cer(reading.text, page.expected)
            h, w = page.image.shape[:2]
            row: dict[str, Any] = {"page": page.name, "size": f"{w}x{h}"}
            for name in readers:
                row[name] = {"median_s": statistics.median(shown[name]), "p95_s": _p95(shown[name]),
                             "cer": errors[name]}
            row["ratio"] = row["here"]["median_s"] / row[rev]["median_s"]
            rows.append(row)
            here = row["here"]
            print(f"{page.name:28} {w}x{h:<5} here {here['median_s']:.2f}/{here['p95_s']:.2f} s "
                  f"cer {errors['here']:.3f}  {rev} {row[rev]['median_s']:.2f}/{row[rev]['p95_s']:.2f} s "
                  f"cer {errors[rev]:.3f}  ratio {row['ratio']:.2f}", flush=True)
    return rows


def _against_summary(rows: list[dict[str, Any]], rev: str) -> dict[str, Any]:
    groups = {"1920x1080": [r for r in rows if r["size"] == "1920x1080"],
              "crops": [r for r in rows if r["size"] != "1920x1080"]}
    out: dict[str, Any] = {}
    for group, members in groups.items():
        if members:
            out[group] = {f"{name}_{key}": statistics.median(r[name][key] for r in members)
                          for name in ("here", rev) for key in ("median_s", "p95_s", "cer")}
            out[group]["ratio"] = statistics.median(r["ratio"] for r in members)
    out["mean_cer"] = {name: statistics.mean(r[name]["cer"] for r in rows) for name in ("here", rev)}
    return out


def run(settings: Settings, args: argparse.Namespace) -> None:
    pages = [*corpus(), full_screen(), full_screen(theme="dark")]
    if args.limit:
        pages = pages[: args.limit]
    if getattr(args, "against", None):
        load_before = os.getloadavg()
        rows = against(pages, args.repeats, args.threads, args.against)
        report = {"pages": rows, "summary": _against_summary(rows, args.against),
                  "load_average_before_after": [load_before[0], os.getloadavg()[0]], "cores": os.cpu_count()}
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "screen-against.json").write_text(json.dumps(report, indent=2, ensure_ascii=False),
                                                 encoding="utf-8")
        print(json.dumps({k: v for k, v in report.items() if k != "pages"}, indent=2))
        return
    load_before = os.getloadavg()
    threads = args.threads or Reader().threads
    rows = read_pages(pages, args.repeats, threads)
    crops_only = [page for page in pages if page.image.shape[:2] != (1080, 1920)]
    ahead = _read_ahead_summary(read_ahead(crops_only, threads))
    tokens = first_tokens(max(3, args.repeats * 2))
    load_after = os.getloadavg()
    screens = [r for r in rows if r["size"] == "1920x1080"]
    crops = [r for r in rows if r["size"] != "1920x1080"] or rows
    summary = {
        "pages": rows,
        "first_token": tokens,
        "cer_median": statistics.median(r["cer"] for r in rows),
        "baseline_cer_median": statistics.median(r["baseline_cer"] for r in rows),
        "read_median_s": statistics.median(r["read_median_s"] for r in crops),
        "baseline_read_median_s": statistics.median(r["baseline_median_s"] for r in crops),
        "screen_1080p_hotkey_to_text_median_s":
            statistics.median(r["hotkey_to_text_median_s"] for r in screens) if screens else None,
        "crop_hotkey_to_text_median_s": statistics.median(r["hotkey_to_text_median_s"] for r in crops),
        "crop_let_go_to_text": ahead,
        "threads": threads,
        "cores": os.cpu_count(),
        "load_average_before_after": [load_before[0], load_after[0]],
    }
    summary["read_ratio_ours_to_baseline"] = summary["read_median_s"] / summary["baseline_read_median_s"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "screen.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    print(json.dumps({k: v for k, v in summary.items() if k != "pages"}, indent=2))
    print(f"cer: {np.round(summary['cer_median'], 4)} "
          f"(baseline {np.round(summary['baseline_cer_median'], 4)})"
          f"; written {tokens['written']['median_s'] * 1000:.0f} ms vs spoken "
          f"{tokens['spoken']['median_s'] * 1000:.0f} ms to the first token; in {out / 'screen.json'}")
