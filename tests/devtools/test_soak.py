"""The soak's instruments: the process-tree sampler, the CPU attributed to stretches of a
run, and the long session built from a corpus (its questions where the plan says).

Nothing here times the machine: the sampler is checked against what the test itself
opened and started (threads, files, a child process), the arithmetic against samples
made up for it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from devtools.bench.sampler import Sample, TreeSampler, at, cpu_per_minute
from devtools.bench.soak import Plan, Question, Scored, build_session, summarise
from devtools.bench.synth import write_wav


def test_a_sample_counts_the_threads_files_and_children_it_is_shown(tmp_path: Path) -> None:
    sampler = TreeSampler()
    before = sampler.sample()
    release = threading.Event()
    workers = [threading.Thread(target=release.wait) for _ in range(3)]
    files = [open(tmp_path / f"f{i}", "w") for i in range(4)]  # noqa: SIM115 - held open on purpose
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        for worker in workers:
            worker.start()
        during = sampler.sample()
    finally:
        release.set()
        for worker in workers:
            worker.join()
        for f in files:
            f.close()
        child.kill()
        child.wait()
    assert during.processes == before.processes + 1
    assert during.threads >= before.threads + 3 + 1  # the child has a thread of its own
    assert during.fds >= before.fds + 4
    assert during.rss_mb > before.rss_mb  # a second interpreter's memory is in the sum
    assert during.cpu_s >= before.cpu_s


def test_the_thread_samples_until_stopped_and_ends_with_one_more() -> None:
    ticks = iter(range(1_000_000))
    sampler = TreeSampler(every_s=0.01, now=lambda: float(next(ticks))).start()
    deadline = time.monotonic() + 10
    while len(sampler.samples) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    taken = sampler.stop()
    assert len(taken) >= 4
    assert [s.t for s in taken] == sorted(s.t for s in taken)
    time.sleep(0.05)
    assert len(sampler.samples) == len(taken)  # nothing after stop
    assert not any(t.name == "bench-sampler" for t in threading.enumerate())


def _samples(points: list[tuple[float, float]]) -> list[Sample]:
    return [Sample(t, 100.0, 10, 10, cpu, 1) for t, cpu in points]


def test_cpu_is_counted_only_for_windows_wholly_inside_a_stretch() -> None:
    samples = _samples([(0, 0.0), (10, 1.0), (20, 1.5), (30, 1.6), (40, 4.0), (50, 8.0)])
    # 10..30 is silence: windows 10-20 and 20-30, 0.6 s in 20 s → 1.8 s a minute
    assert cpu_per_minute(samples, [(10, 30)]) == pytest.approx(0.6 / 20 * 60)
    # a window that straddles the stretch's end (30-40) is not counted
    assert cpu_per_minute(samples, [(10, 35)]) == pytest.approx(0.6 / 20 * 60)
    assert cpu_per_minute(samples, [(0, 10), (40, 50)]) == pytest.approx((1.0 + 4.0) / 20 * 60)
    assert cpu_per_minute(samples, [(12, 18)]) is None  # no whole window inside


def test_at_picks_the_first_sample_at_or_after() -> None:
    samples = _samples([(0, 0.0), (5, 0.0), (10, 0.0)])
    assert at(samples, 5) is samples[1]
    assert at(samples, 6) is samples[2]
    assert at(samples, 11) is None


def _corpus(folder: Path) -> Path:
    """Two questions in a 20 s session: tones stand in for the voice."""
    folder.mkdir()
    rate = 16000
    audio = np.zeros(20 * rate)
    entries = []
    for i, offset in enumerate((2.0, 11.0)):
        n = int(2.5 * rate)
        start = int(offset * rate)
        audio[start:start + n] = 8000 * np.sin(np.arange(n) * 2 * np.pi * 220 / rate)
        entries.append({"file": f"q{i}.wav", "text": f"Question {i}?", "speech_start_s": 0.5,
                        "speech_end_s": 3.0, "session_offset_s": offset - 0.5})
    write_wav(folder / "session.wav", audio)
    (folder / "manifest.json").write_text(json.dumps(entries))
    return folder


def test_the_long_session_repeats_the_corpus_around_the_room_tone_stretches(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus")
    plan = build_session(corpus, tmp_path / "soak.wav", minutes=2.0, silence_minutes=0.25, warmup_s=30)
    with wave.open(str(tmp_path / "soak.wav"), "rb") as w:
        assert w.getnframes() == 120 * 16000
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64)
    assert plan.silences == [(30.0, 45.0), (75.0, 90.0)]  # after the warm-up, and in the middle
    assert plan.speech == [(0.0, 30.0), (45.0, 75.0), (90.0, 120.0)]
    for start, end in plan.silences:
        tone = samples[int(start * 16000):int(end * 16000)]
        level = 20 * np.log10(np.sqrt(np.mean(tone**2)) / 32768)
        assert -45 < level < -39  # room tone at -42 dBFS, nobody speaking
    # every question lies wholly in a stretch of speech, and is where the plan says
    assert plan.questions and all(any(a <= q.start_s and q.end_s <= b for a, b in plan.speech)
                                  for q in plan.questions)
    for q in plan.questions:
        voiced = samples[int((q.start_s + 0.2) * 16000):int((q.end_s - 0.2) * 16000)]
        assert np.sqrt(np.mean(voiced**2)) > 4000
    assert [q.text for q in plan.questions[:3]] == ["Question 0?", "Question 1?", "Question 0?"]


def test_an_empty_room_is_room_tone_only(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus")
    plan = build_session(corpus, tmp_path / "room.wav", minutes=0.5, silence_only=True)
    assert plan.questions == [] and plan.speech == [] and plan.silences == [(0.0, 30.0)]


def test_the_summary_counts_from_the_warm_up_and_judges_each_goal() -> None:
    plan = Plan(600.0, 120.0, silences=[(120.0, 300.0)], speech=[(0.0, 120.0), (300.0, 600.0)],
                questions=[Question("Q?", 10.0 * i, 10.0 * i + 2) for i in range(30)])
    # memory grows in the warm-up (not counted), then by 12 MB; a thread and a file come and go
    samples = [Sample(float(t), 300.0 if t < 120 else 400.0 + 12 * (t - 120) / 480,
                      16 if 200 <= t < 300 else 15, 20, 0.3 * t if 120 <= t < 300 else 0.2 * t + 30, 2)
               for t in range(0, 601, 20)]
    latencies = [0.6] * 12 + [0.7] * 6 + [0.9] * 12
    scored = [Scored(i, "Q?", 0.0, latency, 1 if i == 20 else 0, "Q?") for i, latency in enumerate(latencies)]
    s = summarise(plan, samples, scored)
    assert s["rss_baseline_mb"] == 400.0 and s["rss_growth_mb"] == pytest.approx(12.0)
    assert (s["threads_baseline"], s["threads_end"], s["threads_max"]) == (15, 15, 16)
    assert s["cpu_s_per_min_silence"] == pytest.approx(0.3 * 60)  # from 20 s into the silence
    assert s["latency_ratio_last_first"] == pytest.approx(1.5) and s["stale"] == 1
    assert s["goals"] == {"rss_growth<=40MB": True, "threads_back": True, "fds_back": True,
                          "latency_ratio<=1.15": False, "stale==0": False, "silence<=3%core": False}
