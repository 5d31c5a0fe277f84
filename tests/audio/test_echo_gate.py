"""The echo gate on real (espeak-ng) speech: the interviewer heard through speakers is echo;
the candidate's own voice, alone or over a faint echo, is not."""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt
import pytest

from app.audio.echo import EchoGate
from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE, AudioFrame
from tests.speech import read_wav, synth

Signal = npt.NDArray[np.float64]

QUESTION = "What is the difference between a process and a thread, and when would you use each?"
ANSWER = "I would use a thread when the work shares memory, and a process for isolation."
OTHER_QUESTION = "Tell me about a time you disagreed with your manager."


def _speech(text: str, voice: str, lead_s: float) -> Signal:
    return read_wav(synth(text, voice, lead_s=lead_s, tail_s=1.0)).astype(np.float64)


def _fit(x: Signal, n: int) -> Signal:
    return np.concatenate([x, np.zeros(max(0, n - len(x)))])[:n]


def _delayed(x: Signal, ms: float, gain_db: float) -> Signal:
    d = int(SAMPLE_RATE * ms / 1000)
    return np.concatenate([np.zeros(d), x])[: len(x)] * 10 ** (gain_db / 20)


def _reflections(x: Signal) -> Signal:
    """A small room as three discrete reflections after the direct sound."""
    return x + _delayed(x, 30, -6) + _delayed(x, 70, -12) + _delayed(x, 120, -18)


def _reverb_tail(x: Signal, rt60: float = 0.4) -> Signal:
    """A diffuse tail: exponentially decaying noise reaching -60 dB after ``rt60``."""
    rng = np.random.default_rng(7)
    t = np.arange(int(SAMPLE_RATE * rt60)) / SAMPLE_RATE
    ir = rng.standard_normal(len(t)) * 10 ** (-3 * t / rt60)
    ir *= 0.5 / np.sqrt(np.sum(ir**2))
    ir[0] = 1.0
    return np.convolve(x, ir)[: len(x)]


def _mic_noise(n: int) -> Signal:
    return np.random.default_rng(3).standard_normal(n) * 32768 * 10 ** (-65 / 20)


def _frames(x: Signal) -> list[AudioFrame]:
    clipped = np.clip(np.round(x), -32768, 32767).astype(np.int16)
    return [AudioFrame(k * FRAME_SAMPLES / SAMPLE_RATE,
                       clipped[k * FRAME_SAMPLES:(k + 1) * FRAME_SAMPLES])
            for k in range(len(x) // FRAME_SAMPLES)]


def _voiced(frame: AudioFrame, dbfs: float = -50.0) -> bool:
    rms = float(np.sqrt(np.mean(frame.samples.astype(np.float64) ** 2))) / 32768
    return rms > 10 ** (dbfs / 20)


def _run(interviewer: Signal, candidate: Signal, gate: EchoGate) -> list[tuple[AudioFrame, bool]]:
    """Both streams fed frame by frame as two audio threads would, interviewer first."""
    out = []
    for ref, cand in zip(_frames(interviewer), _frames(candidate), strict=True):
        gate.feed_reference(ref)
        out.append((cand, gate.is_echo(cand)))
    return out


def _echo_share_after(verdicts: list[tuple[AudioFrame, bool]], settle_s: float) -> float:
    voiced = [(f, e) for f, e in verdicts if _voiced(f)]
    onset = voiced[0][0].t
    later = [e for f, e in voiced if f.t >= onset + settle_s]
    return sum(later) / len(later)


@pytest.fixture(scope="module")
def question() -> Signal:
    return _speech(QUESTION, "en-us", lead_s=0.5)


def test_interviewer_heard_through_speakers_is_echo(question: Signal) -> None:
    runs: list[int] = []
    gate = EchoGate(on_run=runs.append)
    mic = _delayed(question, 40, -10)
    share = _echo_share_after(_run(question, mic, gate), settle_s=0.3)
    assert share >= 0.95, share
    assert gate.echo_runs >= 1 and runs == list(range(1, gate.echo_runs + 1))


@pytest.mark.parametrize("room", [_reflections, _reverb_tail], ids=["reflections", "tail"])
def test_echo_through_a_room_is_still_echo(question: Signal, room: object) -> None:
    mic = room(_delayed(question, 40, -10)) + _mic_noise(len(question))  # type: ignore[operator]
    share = _echo_share_after(_run(question, mic, EchoGate()), settle_s=0.3)
    assert share >= 0.9, share


def test_candidate_alone_is_never_echo() -> None:
    answer = _speech(ANSWER, "en-us+f3", lead_s=0.5)
    gate = EchoGate()
    verdicts = _run(np.zeros(len(answer)), answer + _mic_noise(len(answer)), gate)
    assert sum(_voiced(f) for f, _ in verdicts) > 50
    assert not any(e for _, e in verdicts)
    assert gate.echo_runs == 0


def test_candidate_over_a_faint_echo_is_mostly_not_echo(question: Signal) -> None:
    answer = _speech(ANSWER, "en-us+f3", lead_s=0.87)  # starts 0.37 s after the question
    n = max(len(question), len(answer))
    q, a = _fit(question, n), _fit(answer, n)
    mic = a + _reflections(_delayed(q, 40, -10)) + _mic_noise(n)
    verdicts = _run(q, mic, EchoGate())
    answer_frames = _frames(a)
    own = [e for (_, e), alone in zip(verdicts, answer_frames, strict=True) if _voiced(alone)]
    assert len(own) > 50
    assert sum(own) / len(own) <= 0.3, sum(own) / len(own)


def test_two_different_voices_at_once_are_not_echo() -> None:
    """Headphones, both talking: the candidate's words must stay."""
    other = _speech(OTHER_QUESTION, "en-gb", lead_s=1.3)
    answer = _speech(ANSWER, "en-us+f3", lead_s=0.5)
    n = max(len(other), len(answer))
    verdicts = _run(_fit(other, n), _fit(answer, n) + _mic_noise(n), EchoGate())
    voiced = [e for f, e in verdicts if _voiced(f)]
    assert sum(voiced) / len(voiced) <= 0.2


def test_a_late_interviewer_thread_still_finds_the_echo(question: Signal) -> None:
    """Devices deliver in blocks: the interviewer's frames may arrive 120 ms late."""
    gate = EchoGate()
    refs, mics = _frames(question), _frames(_delayed(question, 40, -10))
    verdicts = []
    for k, cand in enumerate(mics):
        if k % 4 == 3:
            for ref in refs[k - 3:k + 1]:
                gate.feed_reference(ref)
        verdicts.append((cand, gate.is_echo(cand)))
    assert _echo_share_after(verdicts, settle_s=0.45) >= 0.9


@pytest.mark.parametrize("offset_ms", [2.5, 12.0, 17.5])
def test_devices_on_offset_grids_still_line_up(question: Signal, offset_ms: float) -> None:
    """A second device is placed on the session clock where its first sample arrived, so
    its frames sit on a grid offset from the interviewer's by any fraction of a frame."""
    mic = _reflections(_delayed(question, 40, -10))
    gate = EchoGate()
    verdicts = []
    for ref, cand in zip(_frames(question), _frames(mic), strict=True):
        gate.feed_reference(ref)
        shifted = AudioFrame(cand.t + offset_ms / 1000, cand.samples)  # stamped later
        verdicts.append((shifted, gate.is_echo(shifted)))
    assert _echo_share_after(verdicts, settle_s=0.3) >= 0.9
    assert gate.path_lag_ms is not None and abs(gate.path_lag_ms - (40 + offset_ms)) <= 10


def test_a_gap_in_the_microphone_stream_is_not_bridged(question: Signal) -> None:
    """A reconnected device resumes later on the clock: no verdict across the gap, then
    the echo is found again."""
    mic = _delayed(question, 40, -10)
    gate = EchoGate()
    verdicts = []
    for k, (ref, cand) in enumerate(zip(_frames(question), _frames(mic), strict=True)):
        gate.feed_reference(ref)
        if 40 <= k < 50:  # 300 ms of microphone lost
            continue
        decision = gate.decide(cand)
        if k == 50:
            assert np.isnan(decision.correlation)  # the window would span the hole
        verdicts.append((cand, decision.echo))
    assert _echo_share_after([v for v in verdicts if v[0].t >= 2.0], settle_s=0.0) >= 0.9


def test_two_threads_feed_it_at_once(question: Signal) -> None:
    gate = EchoGate()
    refs, mics = _frames(question), _frames(_delayed(question, 40, -10))
    step = threading.Barrier(2)
    verdicts: list[tuple[AudioFrame, bool]] = []

    def interviewer() -> None:
        for ref in refs:
            step.wait()
            gate.feed_reference(ref)

    def candidate() -> None:
        for cand in mics:
            step.wait()
            verdicts.append((cand, gate.is_echo(cand)))

    threads = [threading.Thread(target=interviewer), threading.Thread(target=candidate)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert len(verdicts) == len(mics)
    assert _echo_share_after(verdicts, settle_s=0.3) >= 0.9


# --- per utterance, with the real VAD ----------------------------------------------------


def _utterance_shares(interviewer: Signal, candidate: Signal) -> list[float]:
    """The candidate track through webrtcvad (as its listener would), each utterance's
    echo share from the gate; an utterance ends after 0.6 s without voice."""
    from app.audio.echo import UTTERANCE_ECHO_SHARE
    from app.core.config import VadConfig
    from app.vad.detector import VoiceDetector

    assert UTTERANCE_ECHO_SHARE == 0.5
    gate, vad = EchoGate(), VoiceDetector(VadConfig())
    spans: list[tuple[float, float]] = []
    start: float | None = None
    for ref, cand in zip(_frames(interviewer), _frames(candidate), strict=True):
        gate.feed_reference(ref)
        gate.is_echo(cand)
        step = vad.process(cand)
        if step.onset:
            start = step.onset[0].t
        if start is not None and cand.t - vad.last_voiced_end > 0.6:
            spans.append((start, vad.last_voiced_end))
            vad.request_end()  # applied on the next frame, as in the listener
            start = None
    if start is not None:
        spans.append((start, vad.last_voiced_end))
    return [gate.echo_share(a, b) for a, b in spans]


@pytest.mark.parametrize("room", [None, _reflections, _reverb_tail],
                         ids=["direct", "reflections", "tail"])
def test_every_echo_utterance_is_dropped(question: Signal, room: object) -> None:
    mic = _delayed(question, 40, -10)
    if room is not None:
        mic = room(mic) + _mic_noise(len(mic))  # type: ignore[operator]
    shares = _utterance_shares(question, mic)
    assert shares and all(share >= 0.5 for share in shares), shares


def test_the_candidates_utterances_are_kept_even_over_an_echo(question: Signal) -> None:
    answer = _speech(ANSWER, "en-us+f3", lead_s=0.87)
    n = max(len(question), len(answer))
    q, a = _fit(question, n), _fit(answer, n)
    alone = _utterance_shares(np.zeros(n), a + _mic_noise(n))
    over_echo = _utterance_shares(q, a + _reflections(_delayed(q, 40, -10)) + _mic_noise(n))
    assert alone and all(share == 0 for share in alone), alone
    assert over_echo and all(share < 0.5 for share in over_echo), over_echo
