"""The end-of-turn signals with the real models: SmolLM2-135M through llama-cpp-python,
Smart Turn v3.2 through onnxruntime, and the worker that runs them off the audio thread."""

from __future__ import annotations

import importlib.util
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from importlib import metadata

import numpy as np
import pytest

from app.asr.decoder import WhisperDecoder
from app.audio import FileSource
from app.audio.frames import SAMPLE_RATE
from app.core.clock import SessionClock
from app.core.config import Settings, TurnConfig
from app.core.events import EventBus, VadEvent
from app.platform.bundled import find_bundled_model
from app.platform.cores import spare_words_threads
from app.session.listener import Listener
from app.turns.endpointer import Endpointer
from app.turns.policy import Evidence, TextCues, decide
from app.turns.signals import SignalRequest, SignalResult, SignalWorker, TurnSignals
from app.turns.sound import EXTRA, TAIL_S, WINDOW_S, find_model, last_window, log_mel
from app.turns.words import PROMPT, SpareCore, WordsScorer, prepare
from tests.hooks import StandaloneHooks
from tests.patience import NEVER_S
from tests.speech import read_wav, speech_bounds, synth

needs_smart_turn = pytest.mark.skipif(find_model() is None,
                                      reason=f"Smart Turn's model: the [{EXTRA}] extra is not installed")

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


def test_the_transcript_follows_what_the_models_own_chat_template_writes_before_it() -> None:
    """A conversation with no system message of its own gets the template's default one:
    that is what the model saw in training, and what it is asked about."""
    import jinja2
    from llama_cpp import Llama

    path = find_bundled_model()
    assert path is not None
    vocab = Llama(model_path=str(path), vocab_only=True, verbose=False)
    template = jinja2.Environment().from_string(vocab.metadata["tokenizer.chat_template"])
    rendered = template.render(messages=[{"role": "user", "content": "why"}], add_generation_prompt=False)
    assert rendered.startswith(PROMPT + "why<|im_end|>"), rendered


def test_finished_questions_score_higher_than_the_same_questions_cut(words: WordsScorer) -> None:
    full = [words.log_p_end(q) for q in QUESTIONS]
    part = [words.log_p_end(cut(q)) for q in QUESTIONS]
    assert sum(f > p for f, p in zip(full, part, strict=True)) >= 6, (full, part)
    cfg = TurnConfig()  # medians apart by more than the span the words' vote is drawn over
    span = cfg.words_complete_logp - cfg.words_incomplete_logp
    assert statistics.median(full) - statistics.median(part) >= span, (full, part)
    finished = [decide(cfg, TextCues(), Evidence(words_logp=v)).verdict for v in full]
    unfinished = [decide(cfg, TextCues(), Evidence(words_logp=v)).verdict for v in part]
    assert finished.count("complete") >= 5, finished
    # two of the cuts are whole questions as they stand: "How do you handle disagreements",
    # "Can you walk me through your approach"
    assert unfinished.count("complete") <= 2, unfinished


def test_scores_are_cached_per_transcript_and_the_shared_prefix_changes_nothing(words: WordsScorer) -> None:
    text = "Tell me about the biggest risk you took at work"
    first = words.log_p_end(text)
    calls = words.calls
    assert words.log_p_end(text.upper() + ".") == first  # same words, another case and stop
    assert words.calls == calls
    fresh = WordsScorer()
    fresh.log_p_end("Tell me about the weather")  # a different history in the model's cache
    assert abs(fresh.log_p_end(text) - first) < 1e-3


def test_the_spare_core_is_borrowed_only_while_it_is_faster() -> None:
    """Borrowed where it made a one-token verdict a quarter faster once loaded, and given back
    once two of the last three borrowed verdicts took longer than one thread would have."""
    assert not SpareCore(one_ms=18.0, spare_ms=15.0).borrowing  # within the spread: not worth it
    spare = SpareCore(one_ms=18.0, spare_ms=11.0)
    assert spare.borrowing
    spare.record(12.0, 1)
    spare.record(40.0, 3)  # three tokens: one thread would have taken longer
    spare.record(30.0, 1)  # lost: something else had the core
    assert spare.borrowing
    spare.record(11.0, 1)
    spare.record(25.0, 1)  # lost, and one more of the last three
    assert not spare.borrowing and spare.borrowed == 5


def test_the_spare_core_is_timed_one_verdict_a_call_once_the_model_has_loaded() -> None:
    """Loading times nothing (the scorer is ready at once, however busy the machine); each
    ``calibrate`` call times one verdict, so a request waits for one step at most."""
    scorer = WordsScorer(threads=1, spare_threads=2)
    assert scorer.spare is None
    steps = 1
    while scorer.calibrate():
        assert scorer.spare is None
        steps += 1
    assert steps == 12 and scorer.spare is not None  # a warm-up and five on each thread count
    assert not scorer.calibrate()
    assert not WordsScorer(threads=1, spare_threads=1).calibrate()  # no core to spare: nothing to time


def test_the_signal_worker_times_the_spare_core_while_no_request_waits() -> None:
    worker = SignalWorker(lambda: TurnSignals.load(TurnConfig(), "en"), lambda result: None)
    worker.start()
    try:
        assert worker.ready.wait(60)
        words = worker.signals.words if worker.signals else None
        assert words is not None
        if spare_words_threads() == 1:
            pytest.skip("one core: nothing to time")
        deadline = time.monotonic() + NEVER_S
        while words.spare is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert words.spare is not None
    finally:
        worker.stop()


def test_a_verdict_on_the_spare_core_scores_the_same_as_on_one_thread(words: WordsScorer) -> None:
    both = WordsScorer(threads=1, spare_threads=2)
    while both.calibrate():
        pass
    assert both.spare is not None
    # borrowing whatever this machine's load: a calibration, and a guard, that never say no
    both.spare = SpareCore(one_ms=float("inf"), spare_ms=0.0)
    for question in QUESTIONS[:4]:
        assert both.log_p_end(question, spare_core=True) == words.log_p_end(question)
    assert both.spare.borrowed == 4
    one = WordsScorer(threads=1, spare_threads=1)
    assert one.spare is None and one.log_p_end(QUESTIONS[4], spare_core=True) == words.log_p_end(QUESTIONS[4])


def test_a_scorer_whose_spare_core_cannot_be_timed_scores_on_one_thread(
        words: WordsScorer, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(self: WordsScorer) -> Iterator[None]:
        yield
        raise RuntimeError("no second thread here")

    monkeypatch.setattr(WordsScorer, "_time_spare", fail)
    scorer = WordsScorer(threads=1, spare_threads=2)
    assert scorer.calibrate() and not scorer.calibrate()
    assert scorer.spare is None
    assert scorer.log_p_end(QUESTIONS[0], spare_core=True) == words.log_p_end(QUESTIONS[0])


def test_the_verdict_the_guess_waits_for_may_borrow_the_recognisers_core(decoder: WhisperDecoder) -> None:
    """A partial whose pass heard all the voice so far (at the end of the question, and at
    each gap between words) is scored while the recogniser's next pass waits for its
    verdict: that request, and only such a one, may borrow its core."""
    requests: list[SignalRequest] = []

    class Recording(TurnSignals):
        def score(self, request: SignalRequest) -> SignalResult:
            requests.append(request)
            return super().score(request)

    loaded = TurnSignals.load(TurnConfig(), "en")  # ready before the first word, however busy the machine
    clip = synth("Why are you leaving your current job?", lead_s=1.0)
    _, voice_end = speech_bounds(clip)
    clock = SessionClock()
    # A quarter of real time: the rule is which requests may borrow, not whether this machine
    # keeps up (beside four busy processes, at real time the pause's pass merged into the
    # final's, and no partial heard the last words: the old code failed the same way).
    listener = Listener(FileSource(clip, clock, speed=0.25), decoder, Settings(), EventBus(), clock,
                        StandaloneHooks(lambda: Recording(loaded.words, loaded.sound, loaded.status)))
    listener.start()
    assert listener.finish(timeout=60)
    listener.stop()
    lent = [r.audio_end for r in requests if r.spare_core]
    assert any(r.audio_end >= voice_end - 0.1 for r in requests)
    # the pass that heard the last words (played slowly, every pass hears all so far)
    assert any(end >= voice_end - 0.1 for end in lent), (lent, voice_end)


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


def test_a_missing_signal_leaves_the_rules_and_says_so() -> None:
    zh = TurnSignals.load(TurnConfig(), "zh")
    assert zh.words is None and "not used for 'zh'" in zh.status and "text rules decide" in zh.status
    off = TurnSignals.load(TurnConfig(words_model=False), "en")
    result = off.score(SignalRequest(1, "Why this job?", 1.0))
    assert (result.words_logp, result.sound_p) == (None, None)


@needs_smart_turn
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


@needs_smart_turn
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


def test_without_the_wheel_smart_turn_says_which_extra_installs_it() -> None:
    signals = TurnSignals.load(TurnConfig(smart_turn=True, words_model=False), "en")
    if find_model() is None:
        assert signals.sound is None and f"[{EXTRA}]" in signals.status
    else:
        assert signals.sound is not None


@needs_smart_turn
def test_enabling_smart_turn_changes_a_verdict() -> None:
    """Words the model is unsure of, heard by Smart Turn as a finished turn after the pause
    it reads (the real ONNX): its vote tips the verdict to complete, and the turn ends
    after the short wait instead of the middle one."""
    cfg = TurnConfig(smart_turn=True)
    clip = synth("Tell me about your last project.", tail_s=1.0)
    _, voice_end = speech_bounds(clip)
    audio = read_wav(clip)[: round((voice_end + TAIL_S) * SAMPLE_RATE)]
    signals = TurnSignals.load(cfg.model_copy(update={"words_model": False}), "en")
    assert signals.sound is not None, signals.status
    text = "Tell me about your last project."
    sound_p = signals.score(SignalRequest(1, text, voice_end + TAIL_S, audio)).sound_p
    assert sound_p is not None and sound_p > 0.9  # this clip sounds finished to it
    # the words alone: unsure, just short of finished by less than the sound's vote (a
    # request: the words asking are half a vote already)
    vote = 0.5 - cfg.smart_turn_weight * (2 * sound_p - 1) / 2
    logp = cfg.words_incomplete_logp + (vote + 1) / 2 * (cfg.words_complete_logp - cfg.words_incomplete_logp)
    verdicts = []
    for enabled in (False, True):
        ep = Endpointer(cfg)
        ep.speech_started(1, 0.5)
        for frame in range(1, round((voice_end - 0.5) / 0.03) + 1):  # no pause inside it
            ep.voiced(min(voice_end, 0.5 + 0.03 * frame))
        ep.voiced(voice_end)
        ep.partial(1, text, "", voice_end, voice_end + 0.1)
        ep.end_of_turn_scores(1, text, voice_end, voice_end + 0.1, words_logp=logp)
        if enabled:
            ep.end_of_turn_scores(1, text, voice_end + TAIL_S, voice_end + TAIL_S, sound_p=sound_p)
        wait = ep.wait()
        assert wait is not None
        verdicts.append((wait.verdict, wait.endpoint_ms))
    assert verdicts == [("uncertain", cfg.endpoint_uncertain_ms), ("complete", cfg.endpoint_complete_ms)]


@needs_smart_turn
def test_the_listener_gives_smart_turn_the_utterance_up_to_the_pause(decoder: WhisperDecoder) -> None:
    """With Smart Turn on, the listener sends the last ``WINDOW_S`` of the utterance once
    the pause has lasted ``TAIL_S``, and the verdict comes back with a sound score."""
    requests: list[SignalRequest] = []
    results: list[SignalResult] = []

    class Recording(TurnSignals):
        def score(self, request: SignalRequest) -> SignalResult:
            requests.append(request)
            result = super().score(request)
            results.append(result)
            return result

    settings = Settings()
    settings.turns.smart_turn = True

    def load() -> TurnSignals:
        loaded = TurnSignals.load(settings.turns, "en")
        return Recording(loaded.words, loaded.sound, loaded.status)

    clip = synth("Tell me about a project you are proud of.", lead_s=2.0)  # the model loads meanwhile
    _, voice_end = speech_bounds(clip)
    bus = EventBus()
    events: list[object] = []
    bus.subscribe(events.append)
    clock = SessionClock()
    listener = Listener(FileSource(clip, clock, speed=1.0), decoder, settings, bus, clock,
                        StandaloneHooks(load))
    listener.start()
    assert listener.finish(timeout=60)
    listener.stop()
    paused = [e.t for e in events if isinstance(e, VadEvent) and not e.speech]
    heard = [r for r in requests if r.audio is not None]
    assert paused and heard, [r.text for r in requests]
    for request in heard:
        seconds = len(request.audio) / SAMPLE_RATE  # type: ignore[arg-type]
        assert 0 < seconds <= WINDOW_S
        assert request.audio_end >= voice_end - 0.1  # the end of the question, and its pause
    sounded = [r for r in results if r.sound_p is not None]
    assert sounded and all(0.0 <= r.sound_p <= 1.0 for r in sounded)  # type: ignore[operator]


def test_a_pause_keeps_its_audio_when_newer_words_replace_its_request() -> None:
    """A partial landing while the pause's sound request waits replaces its words, not
    its audio: the request scored carries both (the newest words, the pause's sound)."""
    scored: list[SignalRequest] = []
    loading = threading.Event()

    class Recording(TurnSignals):
        def score(self, request: SignalRequest) -> SignalResult:
            scored.append(request)
            return super().score(request)

    def load() -> TurnSignals:
        loading.wait(60)
        return Recording(None, None, "none")

    worker = SignalWorker(load, lambda result: None)
    worker.start()
    audio = np.zeros(SAMPLE_RATE, dtype=np.int16)
    try:
        worker.submit(SignalRequest(1, QUESTIONS[0], 2.2, audio))  # the pause, 0.2 s in
        worker.submit(SignalRequest(1, QUESTIONS[1], 2.09))  # the pass that heard it lands
        loading.set()
        assert worker.ready.wait(60)
        _idle(worker)
        worker.submit(SignalRequest(1, QUESTIONS[2], 3.2, audio))
        worker.submit(SignalRequest(2, QUESTIONS[3], 4.0))  # another turn's words: no sound
        _idle(worker)
    finally:
        worker.stop()
    assert [(r.turn, r.text, r.audio_end, r.audio is audio) for r in scored] == [
        (1, QUESTIONS[1], 2.2, True)] + [(2, QUESTIONS[3], 4.0, False)] * (len(scored) - 1)
    assert len(scored) == 2


def test_loading_the_words_model_mutes_only_its_own_thread() -> None:
    """llama-cpp-python's load-time prints are dropped, but a message another thread writes
    meanwhile (the command line's "session saved" after a lost device) reaches stderr."""
    import contextlib
    import io
    import sys
    import threading

    from app.turns.words import ThreadMuted

    real = io.StringIO()
    with contextlib.redirect_stderr(ThreadMuted(real)):
        print("llama: loading", file=sys.stderr)
        other = threading.Thread(target=lambda: print("session saved", file=sys.stderr))
        other.start()
        other.join()
    assert real.getvalue() == "session saved\n"
