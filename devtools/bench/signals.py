"""``bench signals``: each end-of-turn signal's CPU per call, and how well it tells a
finished question from the same question cut mid-way (ROC AUC over the corpus).

Per clip, each signal scores a *complete* and a *cut* version of the question:

- words model: the manifest ``text`` vs the words before the clip's first internal
  pause, else the first 55 % of its words (at least 2, never all; characters for
  Chinese).  The pause cut is the one that matters most, because a pause is where the
  endpointer asks "is it over?" and the words said so far often look finished there
  (``dev-traps`` is made of such cuts).  The text has no timings, so the pause is placed
  at the punctuation mark nearest its share of the speech time (the corpora's pauses
  all follow a comma or a full stop);
- Smart Turn: the audio from the speech start to ``speech_end_s`` + 0.2 s of the
  trailing silence vs the audio up to the first pause's start + 0.2 s (of the pause), else
  up to 55 % of the speech + 0.2 s of what follows, which is speech: the clip then ends
  mid-word, as a question cut off does (Smart Turn reads at most the last 8 s).  0.2 s is
  ``app.turns.sound.TAIL_S``, where the listener has it read a pause.

CPU is ``time.thread_time()`` around each call;
the words model is loaded with one thread here, as with two the calling thread's CPU is
only about half of the call's.  All complete versions are scored first, then all cut
ones, so consecutive calls share no words (a cold call: in the product consecutive
partials share their beginning and cost less).  Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from app.audio.frames import SAMPLE_RATE
from app.core.config import Settings, TurnConfig
from app.core.text import segments
from app.observing.percentile import median, p95
from app.turns.signals import TurnSignals
from app.turns.sound import TAIL_S
from devtools.bench.corpus import Clip, error_unit, load_corpus, read_audio

CUT_SHARE = 0.55
SOUND_THRESHOLD = 0.5
T = TypeVar("T")


def auc(complete: Sequence[float], cut: Sequence[float]) -> float | None:
    """P(a complete version scores above a cut one), ties half (Mann–Whitney U / n·m)."""
    if not complete or not cut:
        return None
    ranked = sorted([(v, 1) for v in complete] + [(v, 0) for v in cut])
    rank_sum, i = 0.0, 0
    while i < len(ranked):  # average ranks (1-based) over each run of ties
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        rank_sum += sum(flag for _, flag in ranked[i:j]) * (i + 1 + j) / 2
        i = j
    n, m = len(complete), len(cut)
    return (rank_sum - n * (n + 1) / 2) / (n * m)


def _speech_share(clip: Clip) -> float | None:
    """Share of the speaking time (pauses excluded) before the first pause, or None."""
    if not clip.pauses:
        return None
    spoken = clip.speech_end_s - clip.speech_start_s - sum(length for _, length in clip.pauses)
    return (clip.pauses[0][0] - clip.speech_start_s) / spoken if spoken > 0 else None


def cut_text(clip: Clip) -> str:
    """The question cut mid-way: before its first pause, else its first 55 % (see above)."""
    units = segments(clip.text)  # words, and each CJK character on its own
    n = len(units)
    if n < 3:
        return units[0].strip() if units else ""
    share = _speech_share(clip)
    if share is None:
        k = math.floor(CUT_SHARE * n + 0.5)
    else:
        ends = [len("".join(units[:i])) / len(clip.text) for i in range(n + 1)]
        stops = [i for i in range(1, n) if not units[i - 1][-1].isalnum()] or list(range(1, n))
        k = min(stops, key=lambda i: abs(ends[i] - share))
    k = min(max(k, 2), n - 1)
    return "".join(units[:k]).strip()


def cut_end_s(clip: Clip) -> float:
    """Where the cut audio ends, seconds from the clip's start."""
    if clip.pauses:
        start, length = clip.pauses[0]
        return start + min(TAIL_S, length)
    return clip.speech_start_s + CUT_SHARE * (clip.speech_end_s - clip.speech_start_s) + TAIL_S


def _timed(fn: Callable[[T], float], warm_up: T, inputs: Sequence[T]) -> tuple[list[float], list[float]]:
    fn(warm_up)  # not counted (and not an input: the words model caches its results)
    scores, cpu_ms = [], []
    for item in inputs:
        t0 = time.thread_time()
        scores.append(fn(item))
        cpu_ms.append((time.thread_time() - t0) * 1000)
    return scores, cpu_ms


def _summary(scores: list[float], cpu_ms: list[float], n: int, threshold: float) -> dict[str, object]:
    complete, cut = scores[:n], scores[n:]
    return {"calls": len(cpu_ms), "cpu_ms_median": median(cpu_ms), "cpu_ms_p95": p95(cpu_ms),
            "auc": auc(complete, cut), "threshold": threshold,
            "above_complete": sum(v > threshold for v in complete) / n,
            "above_cut": sum(v > threshold for v in cut) / n,
            "complete": complete, "cut": cut}


def run(settings: Settings, args: argparse.Namespace) -> dict[str, object]:
    clips = load_corpus(args.corpus, args.limit)
    if not clips:
        raise SystemExit(f"{args.corpus}: no clips")
    language = settings.asr.language.split("-")[0]
    if language == "auto":
        language = "zh" if error_unit([c.text for c in clips]) == "cer" else "en"
    cfg = TurnConfig(smart_turn=True, smart_turn_weight=1.0, words_languages=[language])
    signals = TurnSignals.load(cfg, language, threads=1)
    print(signals.status)
    n = len(clips)
    cuts = [cut_text(c) for c in clips]
    result: dict[str, object] = {"corpus": str(args.corpus), "language": language, "clips": n,
                                 "status": signals.status}
    table: dict[str, dict[str, object]] = {}
    if signals.words is not None:
        scored = _timed(signals.words.log_p_end, "so tell me", [c.text for c in clips] + cuts)
        table["words"] = _summary(*scored, n, cfg.words_complete_logp)
    if signals.sound is not None:
        audio = [read_audio(c.path) for c in clips]
        whole = [a[int(c.speech_start_s * SAMPLE_RATE):int((c.speech_end_s + TAIL_S) * SAMPLE_RATE)]
                 for a, c in zip(audio, clips, strict=True)]
        part = [a[int(c.speech_start_s * SAMPLE_RATE):int(cut_end_s(c) * SAMPLE_RATE)]
                for a, c in zip(audio, clips, strict=True)]
        silence = np.zeros(SAMPLE_RATE, dtype=np.int16)
        table["sound"] = _summary(*_timed(signals.sound.p_end, silence, whole + part), n, SOUND_THRESHOLD)
    result["signals"] = table
    result["pairs"] = [{"file": c.path.name, "text": c.text, "cut_text": t,
                        "cut_end_s": round(cut_end_s(c), 3)} for c, t in zip(clips, cuts, strict=True)]
    _print(table)
    path = Path(args.out) / "bench-signals.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"wrote {path}")
    return result


def _print(table: dict[str, dict[str, object]]) -> None:
    names = {"words": "words (SmolLM2-135M)", "sound": "sound (Smart Turn v3.2)"}
    print(f"{'signal':<24} {'calls':>5} {'CPU ms med':>10} {'p95':>6} {'AUC':>5}  "
          "above threshold: complete / cut")
    for key, row in table.items():
        a = row["auc"]
        print(f"{names[key]:<24} {row['calls']:>5} {_num(row['cpu_ms_median']):>10} "
              f"{_num(row['cpu_ms_p95']):>6} {'-' if a is None else f'{a:.2f}':>5}  "
              f"> {row['threshold']:g}: {_pct(row['above_complete'])} / {_pct(row['above_cut'])}")


def _num(value: object) -> str:
    return f"{value:.0f}" if isinstance(value, float | int) else "-"


def _pct(value: object) -> str:
    return f"{value:.0%}" if isinstance(value, float) else "-"
