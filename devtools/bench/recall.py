"""``bench recall``: how often the right résumé line comes first, on the bench corpus.

The corpus (``devtools/bench/know``) is a résumé, a job description and questions as live
captions write them, each with a piece of the line it should recall first, or null when
the documents do not answer it and nothing should be shown; a Chinese résumé checks the
character-bigram path.  Pure and instant: no model, no audio.

``heldout/`` is a second résumé and job description in another field (manufacturing)
with questions written after the recall constants were tuned on the first set and never
used to tune them: its figure is the out-of-sample one.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from app.core.config import Settings
from app.prompt.documents import load_job_description, load_resume
from app.prompt.recall import RecallIndex, first_hit_rate

KNOW = Path(__file__).resolve().parent / "know"
SETS = ("questions.json", "questions-zh.json", "heldout/questions.json")


def run(settings: Settings, args: argparse.Namespace) -> dict[str, dict[str, float | int]]:
    summary: dict[str, dict[str, float | int]] = {}
    for name in SETS:
        path = KNOW / name
        spec = json.loads(path.read_text(encoding="utf-8"))
        job = load_job_description(path.parent / spec["job"]) if spec["job"] else None
        built = time.perf_counter()
        index = RecallIndex(load_resume(path.parent / spec["resume"]), job)
        built = time.perf_counter() - built
        cases = [(q["q"], q["expect"]) for q in spec["questions"]][: args.limit]
        for question, expect in cases:
            lines = index.lines_for(question)
            first = lines[0].text if lines else "(nothing)"
            ok = not lines if expect is None else bool(lines) and expect in first
            print(f"{'ok  ' if ok else 'MISS'} {question[:60]!r} -> {first[:70]!r}")
        started = time.perf_counter()
        right, total = first_hit_rate(index, cases)
        per_question = (time.perf_counter() - started) / max(1, total)
        summary[name] = {"right_first": right, "questions": total, "lines": len(index),
                         "index_ms": round(built * 1000, 2), "per_question_ms": round(per_question * 1000, 3)}
        print(f"{name}: right line first (or rightly nothing) {right}/{total}\n")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench-recall.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return summary
