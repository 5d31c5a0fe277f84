"""``bench asr``: streaming transcription of a corpus at real time, against offline decoding.

Every clip is replayed through the same path as a microphone (FileSource → VAD →
streaming ASR → endpointer) at real-time speed, so cadence and latencies are what a
user would see.  The offline baselines decode each whole clip with faster-whisper's
own ``transcribe`` (30 s window) in the same run: with its default beam search, and
greedy like the streaming passes.

On a Chinese corpus the error rate is the character error rate (every CJK character a
word: ``cer_*`` keys), and the baselines get the same Simplified initial prompt and
OpenCC conversion as the streaming passes, so the comparison is of decoding alone.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from app.asr.decoder import AUTO, WhisperDecoder
from app.asr.model import load_model
from app.asr.script import ScriptConverter
from app.core.config import Settings
from app.core.events import Event, EventBus, FinalEvent, PartialEvent, VadEvent
from app.observing.percentile import median, p95
from app.session.session import Session, SessionOptions, Sources
from devtools.bench.corpus import Clip, error_unit, load_corpus, ms, wer


@dataclass
class ClipResult:
    file: str
    reference: str
    final: str
    offline: str
    final_latency: float | None
    offline_greedy: str = ""
    partial_gaps: list[float] = field(default_factory=list)
    partial_lags: list[float] = field(default_factory=list)
    decode_seconds: float = 0.0
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    dropped_frames: int = 0
    finals: int = 0
    passes: int = 0


def run(settings: Settings, corpus: str, out: str, limit: int | None = None) -> dict[str, object]:
    clips = load_corpus(corpus, limit)
    cfg = settings.asr
    model = load_model(cfg.model, language=cfg.language, compute_type=cfg.compute_type,
                       cpu_threads=cfg.cpu_threads)
    decoder = WhisperDecoder(model, cfg.language, script=cfg.chinese_script)
    results = [_replay(settings, decoder, clip) for clip in clips]
    language = None if cfg.language == AUTO else cfg.language
    script = ScriptConverter(cfg.chinese_script)
    for result, clip in zip(results, clips, strict=True):
        for beam, field_name in ((5, "offline"), (1, "offline_greedy")):
            segments, info = model.transcribe(
                str(clip.path), language=language, beam_size=beam,
                initial_prompt=script.initial_prompt if cfg.language in ("zh", AUTO) else None)
            text = " ".join(s.text.strip() for s in segments)
            setattr(result, field_name, script.convert(text) if info.language == "zh" else text)
    summary = _summarise(settings, results)
    _print(results, summary)
    Path(out).mkdir(parents=True, exist_ok=True)
    target = Path(out) / "bench-asr.json"
    target.write_text(json.dumps({"summary": summary, "clips": [asdict(r) for r in results]}, indent=1))
    print(f"\nwritten: {target}")
    return summary


def _replay(settings: Settings, decoder: WhisperDecoder, clip: Clip) -> ClipResult:
    events: list[Event] = []
    bus = EventBus()
    bus.subscribe(events.append)
    session = Session(settings, sources=Sources(clip.path), options=SessionOptions(answers=False), bus=bus,
                      decoder=decoder)
    wall, cpu = time.monotonic(), time.process_time()
    session.run_file()
    listener = session.listener
    decode = listener.decode_seconds if listener else 0.0
    passes = listener.passes if listener else 0
    dropped = listener.overflows if listener else 0
    session.shutdown()
    result = ClipResult(file=clip.path.name, reference=clip.text, final="", offline="", final_latency=None,
                        decode_seconds=decode, wall_seconds=time.monotonic() - wall,
                        cpu_seconds=time.process_time() - cpu, dropped_frames=dropped, passes=passes)
    finals = [e for e in events if isinstance(e, FinalEvent)]
    # a question that went on after a pause is one turn whose later final holds it all
    last_of_turn = {f.turn: f.text for f in finals}
    result.final = " ".join(last_of_turn.values())
    result.finals = len(last_of_turn)
    if finals:
        result.final_latency = finals[-1].t - clip.speech_end_s
    partials = [e for e in events if isinstance(e, PartialEvent)]
    speaking = [p for p in partials if p.t <= clip.speech_end_s]
    result.partial_gaps = [b.t - a.t for a, b in itertools.pairwise(speaking)]
    result.partial_lags = [p.t - p.audio_end for p in partials]
    starts = [e.t for e in events if isinstance(e, VadEvent) and e.speech]
    if starts:  # the first partial counts from speech onset, so a slow first pass shows
        first = next((p.t for p in speaking), None)
        if first is not None:
            result.partial_gaps.insert(0, first - starts[0])
    return result


def _summarise(settings: Settings, results: list[ClipResult]) -> dict[str, object]:
    gaps = [g for r in results for g in r.partial_gaps]
    lags = [g for r in results for g in r.partial_lags]
    latencies = [r.final_latency for r in results if r.final_latency is not None]
    references = [r.reference for r in results]
    wall = sum(r.wall_seconds for r in results)
    unit = error_unit(references)
    passes = sum(r.passes for r in results)
    return {
        "clips": len(results),
        "model": settings.asr.model,
        "language": settings.asr.language,
        f"{unit}_streaming": round(wer(references, [r.final for r in results]), 4),
        f"{unit}_offline": round(wer(references, [r.offline for r in results]), 4),
        f"{unit}_offline_greedy": round(wer(references, [r.offline_greedy for r in results]), 4),
        "pass_time_mean_s": round(sum(r.decode_seconds for r in results) / passes, 4) if passes else None,
        "partial_cadence_median_s": median(gaps),
        "partial_cadence_p95_s": p95(gaps),
        "partial_lag_median_s": median(lags),
        "partial_lag_p95_s": p95(lags),
        "final_latency_median_s": median(latencies),
        "final_latency_p95_s": p95(latencies),
        "endpoint_silence_ms": settings.turns.endpoint_silence_ms,
        "endpoint_question_silence_ms": settings.turns.endpoint_question_silence_ms,
        "asr_cpu_share": round(sum(r.decode_seconds for r in results) / wall, 4) if wall else None,
        "process_cpu_share_of_all_cores":
            round(sum(r.cpu_seconds for r in results) / wall / (os.cpu_count() or 1), 4) if wall else None,
        "frames_dropped": sum(r.dropped_frames for r in results),
        "clips_split": sum(r.finals > 1 for r in results),
        "clips_missing_final": sum(r.finals == 0 for r in results),
    }


def _print(results: list[ClipResult], summary: dict[str, object]) -> None:
    print(f"{'clip':<10} {'final lat':>9}  {'gaps med':>8}  transcript")
    for r in results:
        print(f"{r.file:<10} {ms(r.final_latency):>9}  {ms(median(r.partial_gaps)):>8}  {r.final}")
    print()
    for key, value in summary.items():
        print(f"{key:<34} {value}")
