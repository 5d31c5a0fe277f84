"""Benchmarks: speed is measured here, reported as ratios against baselines of the same run."""

from __future__ import annotations

import argparse

from app.core.config import Settings


def run_bench(settings: Settings, args: argparse.Namespace) -> int:
    if args.bench == "asr":
        from devtools.bench import asr

        asr.run(settings, args.corpus, args.out, args.limit)
        return 0
    if args.bench == "glossary":
        from devtools.bench import glossary

        glossary.run(settings, args)
        return 0
    if args.bench == "recall":
        from devtools.bench import recall

        recall.run(settings, args)
        return 0
    if args.bench == "answers":
        from devtools.bench import answers

        answers.run(settings, args)
        return 0
    if args.bench == "soak":
        from devtools.bench import soak

        soak.run(settings, args)
        return 0
    if args.bench == "paint":
        from devtools.bench import paint

        paint.run(args)
        return 0
    if args.bench == "screen":
        from devtools.bench import screen

        screen.run(settings, args)
        return 0
    if args.bench == "signals":
        from devtools.bench import signals

        signals.run(settings, args)
        return 0
    from devtools.bench import turns

    turns.run(settings, args)
    return 0
