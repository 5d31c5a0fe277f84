"""``bench turns --against REV``: the same clips with another tree's code, interleaved ABBA.

An earlier behaviour of the product is measured at its commit, not kept alive as a
switch (decision 0037).  REV is a folder holding a checkout, or a commit, checked out
into a temporary git worktree.  Both trees replay each clip in a child process of
their own (``python -m app bench turns`` on a one-clip corpus, that tree's code on its
path), here then there on even clips and there then here on odd ones, so a machine
that slows down for a while favours neither (decision 0010).  Each mode is reported
twice, ``MODE`` and ``MODE^REV``, with the ratios of their medians and p95s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from app.observing.percentile import median, p95
from devtools.bench import eot
from devtools.bench.corpus import ms
from devtools.load import abba

ROOT = Path(__file__).resolve().parents[2]
HERE = "here"
Runner = Callable[[Path, Path], dict[str, list[dict[str, Any]]]]
"""Replays a corpus folder, writing under an output folder: the turns per mode."""
PASSED_ON = ("modes", "profile", "base_url", "api_key", "model", "load")
"""``bench turns`` options both trees get as given."""


@contextlib.contextmanager
def tree_of(rev: str, repo: Path = ROOT) -> Iterator[Path]:
    """A folder holding ``rev``'s code: ``rev`` itself when it is a checkout, else a git
    worktree of that commit in a temporary folder, removed afterwards."""
    given = Path(rev).expanduser()
    if (given / "app").is_dir():
        yield given.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="bench-against-") as scratch:
        tree = Path(scratch) / "tree"
        added = subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(tree), rev],
                               capture_output=True, text=True)
        if added.returncode != 0:
            raise SystemExit(f"--against: {rev!r} is neither a checkout nor a commit: {added.stderr.strip()}")
        try:
            yield tree
        finally:
            subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)],
                           capture_output=True)


def child_runner(tree: Path, args: argparse.Namespace) -> Runner:
    """``bench turns`` in a child process with ``tree``'s code (the same interpreter)."""
    options: list[str] = []
    for name in PASSED_ON:
        value = getattr(args, name, None)
        if value:
            options += [f"--{name.replace('_', '-')}", str(value)]
    if getattr(args, "local", False):
        options.append("--local")
    config = ["--config", str(args.config)] if getattr(args, "config", None) else []
    if getattr(args, "language", None):
        config += ["--language", str(args.language)]  # a global option: before the subcommand

    def run(corpus: Path, out: Path) -> dict[str, list[dict[str, Any]]]:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        subprocess.run([sys.executable, "-m", "app", *config, "bench", "turns", "--corpus", str(corpus),
                        "--out", str(out), *options], cwd=tree, env=env, check=True)
        turns: dict[str, list[dict[str, Any]]] = json.loads((out / "bench-turns.json").read_text())["turns"]
        return turns

    return run


def one_clip_corpora(corpus: Path, folder: Path, limit: int | None = None) -> list[Path]:
    """One corpus folder per clip of ``corpus`` (its manifest entry, the WAV linked)."""
    entries = json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))
    folders = []
    for i, entry in enumerate(entries[:limit] if limit else entries):
        one = folder / f"clip{i:03d}"
        one.mkdir(parents=True)
        wav = one / Path(entry["file"]).name
        wav.symlink_to((corpus / entry["file"]).resolve())
        (one / "manifest.json").write_text(json.dumps([{**entry, "file": wav.name}]), encoding="utf-8")
        folders.append(one)
    return folders


def interleave(corpora: list[Path], runners: dict[str, Runner], out: Path) -> dict[str, list[dict[str, Any]]]:
    """Every clip through every tree, in ABBA order from clip to clip: the turns per
    ``MODE`` (this tree) and ``MODE^SIDE`` (the others)."""
    results: dict[str, list[dict[str, Any]]] = {}
    for i, corpus in enumerate(corpora):
        for side in abba(i, list(runners)):
            assert side is not None
            turns = runners[side](corpus, out / f"{corpus.name}-{side}")
            for mode, rows in turns.items():
                results.setdefault(mode if side == HERE else f"{mode}^{side}", []).extend(rows)
    return results


def summarise(results: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per label: turns, answered, response latency median and p95, stale answers (and on a
    pause set, eot-bench's false cut-offs: :func:`devtools.bench.eot.summary`); and per
    mode, ``MODE^SIDE/MODE`` for the median and the p95 (above 1: the other tree is slower)."""
    summary: dict[str, Any] = {}
    for label, rows in results.items():
        latencies = [r["response_latency"] for r in rows if r.get("response_latency") is not None]
        summary[label] = {"turns": len(rows), "answered": len(latencies),
                          "response_latency_median_s": median(latencies),
                          "response_latency_p95_s": p95(latencies),
                          "stale_answers_left": sum(r.get("stale", 0) for r in rows)}
        if any(r.get("pauses") for r in rows):  # a pause set: eot-bench's false cut-offs too
            summary[label]["eot"] = eot.summary([r.get("pauses", []) for r in rows],
                                                [r.get("cut_offs", []) for r in rows],
                                                [r.get("response_latency") for r in rows])
    ratios: dict[str, float] = {}
    for label in (m for m in summary if "^" in m):
        mode = label.partition("^")[0]
        for stat in ("median", "p95"):
            key = f"response_latency_{stat}_s"
            theirs, ours = summary[label][key], summary.get(mode, {}).get(key)
            if theirs and ours:
                ratios[f"{label}/{mode} {stat}"] = round(theirs / ours, 2)
    summary["ratios"] = ratios
    return summary


def run(args: argparse.Namespace) -> dict[str, Any]:
    """``bench turns --against REV``: both trees on the corpus; the summary, also written."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tree_of(args.against) as there, tempfile.TemporaryDirectory(prefix="bench-clips-") as scratch:
        corpora = one_clip_corpora(Path(args.corpus), Path(scratch) / "clips", args.limit)
        side = there.name if there == Path(args.against).expanduser().resolve() else args.against
        runners = {HERE: child_runner(ROOT, args), side: child_runner(there, args)}
        results = interleave(corpora, runners, Path(scratch) / "out")
    summary = summarise(results)
    _print(summary)
    target = out / "bench-turns-against.json"
    target.write_text(json.dumps({"summary": summary, "against": args.against, "turns": results}, indent=1))
    print(f"\nwritten: {target}")
    return summary


def _print(summary: dict[str, Any]) -> None:
    labels = [m for m in summary if m != "ratios"]
    w = max(14, *(len(m) for m in labels)) if labels else 14
    print(f"\n{'mode':<{w}} {'turns':>6} {'answered':>8} {'resp med':>9} {'resp p95':>9} {'stale':>5}")
    for label in labels:
        s = summary[label]
        print(f"{label:<{w}} {s['turns']:>6} {s['answered']:>8} {ms(s['response_latency_median_s']):>9} "
              f"{ms(s['response_latency_p95_s']):>9} {s['stale_answers_left']:>5}")
    for name, ratio in summary["ratios"].items():
        print(f"response latency, {name}: {ratio}x")
    for label in (m for m in labels if "eot" in summary[m]):
        e = summary[label]["eot"]
        print(f"mid-turn pauses, {label}: {e['false_cutoffs']} of {e['pauses']} false cut-offs, "
              f"by length {e['by_length']}")
