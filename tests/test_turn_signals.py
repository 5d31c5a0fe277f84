"""The end-of-turn signals with the real models: SmolLM2-135M through llama-cpp-python,
Smart Turn v3.2 through onnxruntime, and the worker that runs them off the audio thread."""

from __future__ import annotations

import importlib.util
import statistics
import sys
import threading
import time
from importlib import metadata

import numpy as np
import pytest

from app.config import TurnConfig
from app.turns.policy import Evidence, TextCues, decide
from app.turns.signals import SignalRequest, SignalResult, SignalWorker, TurnSignals
from app.turns.sound import find_model, last_window, log_mel
from app.turns.words import WordsScorer, prepare
from tests.speech import read_wav, synth

QUESTIONS = [
    "How do you handle disagreements with your team lead?",
    "What made you choose a career in software testing?",
    "Can you walk me through your approach to debugging a memory leak?",
    "Describe a project you are proud of.",
    "Which programming languages do you enjoy most and why?",
    "How would you design a rate limiter for a public API?",
    "Tell me about a time you missed a deadline.",
    "What do you expect from your next manager?",
]


def cut(question: str) -> str:
    """The same question stopped mid-sentence, after 55 % of its words."""
    words = question.split()
    return " ".join(words[: round(len(words) * 0.55)])


@pytest.fixture(scope="module")
def words() -> WordsScorer:
    return WordsScorer()


def test_prepare_drops_case_and_final_punctuation_only() -> None:
    assert prepare("  Why, Exactly?! ") == "why, exactly"
    assert prepare("你为什么想加入我们公司？") == "你为什么想加入我们公司"


def test_finished_questions_score_higher_than_the_same_questions_cut(words: WordsScorer) -> None:
    full = [words.log_p_end(q) for q in QUESTIONS]
    part = [words.log_p_end(cut(q)) for q in QUESTIONS]
    assert sum(f > p for f, p in zip(full, part, strict=True)) >= 6, (full, part)
    assert statistics.median(full) - statistics.median(part) >= 5.0, (full, part)
    cfg = TurnConfig()
    finished = [decide(cfg, TextCues(), Evidence(words_logp=v)).verdict for v in full]
    unfinished = [decide(cfg, TextCues(), Evidence(words_logp=v)).verdict for v in part]
    assert finished.count("complete") >= 5, finished
    assert unfinished.count("complete") <= 1, unfinished


def test_scores_are_cached_per_transcript_and_the_shared_prefix_changes_nothing(words: WordsScorer) -> None:
    text = "Tell me about the biggest risk you took at work"
    first = words.log_p_end(text)
    calls = words.calls
    assert words.log_p_end(text.upper() + ".") == first  # same words, another case and stop
    assert words.calls == calls
    fresh = WordsScorer()
    fresh.log_p_end("Tell me about the weather")  # a different history in the model's cache
    assert abs(fresh.log_p_end(text) - first) < 1e-3


def test_the_worker_scores_off_the_callers_thread_and_keeps_only_the_newest() -> None:
    results: list[SignalResult] = []
    threads: set[str] = set()
    done = threading.Event()

    def on_result(result: SignalResult) -> None:
        results.append(result)
        threads.add(threading.current_thread().name)
        if result.text == QUESTIONS[-1]:
            done.set()

    worker = SignalWorker(lambda: TurnSignals.load(TurnConfig(), "en"), on_result)
    worker.start()
    try:
        assert worker.ready.wait(60)
        assert worker.signals is not None and worker.signals.words is not None, worker.signals.status
        for i, q in enumerate(QUESTIONS):
            worker.submit(SignalRequest(1, q, float(i)))
        assert done.wait(30)
        deadline = time.monotonic() + 5
        while not worker.idle() and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        worker.stop()
    assert threads == {"turn-signals"}
    assert len(results) < len(QUESTIONS)  # requests that waited were replaced by newer ones
    assert results[-1].words_logp is not None


def _idle(worker: SignalWorker) -> None:
    deadline = time.monotonic() + 30
    while not worker.idle() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_warm_up_request_fills_the_cache_and_delivers_nothing() -> None:
    results: list[SignalResult] = []
    worker = SignalWorker(lambda: TurnSignals.load(TurnConfig(), "en"), results.append)
    worker.start()
    try:
        assert worker.ready.wait(60)
        assert worker.signals is not None and worker.signals.words is not None
        words = worker.signals.words
        worker.submit(SignalRequest(1, QUESTIONS[3], 1.0, warm_only=True))  # the pause began
        _idle(worker)
        assert results == []
        calls = words.calls
        worker.submit(SignalRequest(1, QUESTIONS[3], 1.2))  # the pass that heard it all: same words
        _idle(worker)
    finally:
        worker.stop()
    assert words.calls == calls  # scored from the cache
    assert [(r.text, r.audio_end) for r in results] == [(QUESTIONS[3], 1.2)]


def test_a_warm_up_request_never_replaces_one_waiting() -> None:
    results: list[SignalResult] = []
    loading = threading.Event()
    load = lambda: (loading.wait(60), TurnSignals.load(TurnConfig(), "en"))[1]  # noqa: E731
    worker = SignalWorker(load, results.append)
    worker.start()
    try:
        worker.submit(SignalRequest(1, QUESTIONS[0], 1.0))  # waits while the model loads
        worker.submit(SignalRequest(1, QUESTIONS[1], 1.1, warm_only=True))
        loading.set()
        assert worker.ready.wait(60)
        _idle(worker)
    finally:
        worker.stop()
    assert [r.text for r in results] == [QUESTIONS[0]]
    assert worker.signals is not None and worker.signals.words is not None
    assert worker.signals.words.calls == 1  # the warm-up was dropped, not scored


def test_a_missing_signal_leaves_the_rules_and_says_so() -> None:
    zh = TurnSignals.load(TurnConfig(), "zh")
    assert zh.words is None and "not used for 'zh'" in zh.status and "text rules decide" in zh.status
    off = TurnSignals.load(TurnConfig(words_model=False), "en")
    result = off.score(SignalRequest(1, "Why this job?", 1.0))
    assert (result.words_logp, result.sound_p) == (None, None)


def test_smart_turn_loads_from_the_wheel_without_importing_pipecat() -> None:
    path = find_model()
    assert path is not None and path.name == "smart-turn-v3.2-cpu.onnx"
    signals = TurnSignals.load(TurnConfig(smart_turn=True, words_model=False), "en")
    assert signals.sound is not None, signals.status
    assert "Smart Turn v3.2 (weight 0.5)" in signals.status
    audio = read_wav(synth("Tell me about your last project.", tail_s=0.3))
    result = signals.score(SignalRequest(1, "Tell me about your last project.", 2.0, audio))
    assert result.sound_p is not None and 0.0 <= result.sound_p <= 1.0
    assert not any(name == "pipecat" or name.startswith("pipecat.") for name in sys.modules)


def test_log_mel_matches_the_features_smart_turn_was_made_with() -> None:
    """pipecat's own (numpy) feature code, loaded from the wheel as a lone file."""
    reference_file = next(f for f in metadata.files("pipecat-ai") or []
                          if f.name == "_whisper_features.py" and "smart_turn" in str(f))
    spec = importlib.util.spec_from_file_location("smart_turn_features", reference_file.locate())
    assert spec is not None and spec.loader is not None
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    audio = last_window(read_wav(synth("Where do you see yourself in five years?")))
    ours = log_mel(audio)
    assert ours.shape == (80, 800) and ours.dtype == np.float32
    assert float(np.abs(ours - reference.compute_whisper_log_mel_features(audio)).max()) < 1e-4
