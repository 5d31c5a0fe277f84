"""Both sides of the call: the interviewer asks, the candidate's words are context.

Two files replayed on one session clock through real VAD, real Whisper and the answer
engine against the test server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from app.asr.decoder import WhisperDecoder
from app.core.config import Settings
from app.core.events import (
    EndpointEvent,
    Event,
    FinalEvent,
    PartialEvent,
    RequestEvent,
    ResumedEvent,
    SpeculateEvent,
)
from app.llm.endpoint import LlmEndpoint
from app.session.session import Session, Sources
from devtools.fake_server import FakeServer, Profile
from tests.speech import read_wav, synth, trimmed, write_wav

Q1 = "Have you ever worked with Kafka?"
Q2 = "What is your biggest weakness?"
SAID = "Yes, at a bank."


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(Profile(ttft=0.05, tokens_per_s=400, answer_tokens=10), api_key="k") as s:
        yield s


def _tracks(tmp: Path, gap_s: float = 0.4) -> tuple[Path, Path, float]:
    """(interviewer track, candidate track, seconds from Q1's end to Q2's start).

    The interviewer asks Q1; the candidate answers ``gap_s`` after it ends; the interviewer
    asks Q2 ``gap_s`` after the candidate stops — with 0.4 s, within 2 s of Q1's end, so
    only the candidate's turn keeps Q2 from continuing Q1."""
    q1, q2 = read_wav(trimmed(synth(Q1))), read_wav(trimmed(synth(Q2)))
    said = read_wav(trimmed(synth(SAID, voice="en-us+f3", rate=190)))
    rate = 16_000
    lead, gap_before, gap_after = int(0.5 * rate), int(gap_s * rate), int(gap_s * rate)
    q1_end = lead + len(q1)
    said_end = q1_end + gap_before + len(said)
    total = said_end + gap_after + len(q2) + int(1.5 * rate)
    interviewer = np.zeros(total, dtype=np.int16)
    candidate = np.zeros(total, dtype=np.int16)
    interviewer[lead:q1_end] = q1
    candidate[q1_end + gap_before:said_end] = said
    interviewer[said_end + gap_after:said_end + gap_after + len(q2)] = q2
    write_wav(tmp / "interviewer.wav", interviewer)
    write_wav(tmp / "candidate.wav", candidate)
    return tmp / "interviewer.wav", tmp / "candidate.wav", (said_end + gap_after - q1_end) / rate


def _replay(session: Session) -> list[Event]:
    """Every event of a whole replay (emitted from several threads)."""
    events: list[Event] = []
    lock = threading.Lock()

    def record(event: Event) -> None:
        with lock:
            events.append(event)

    session.bus.subscribe(record)
    try:
        session.run_file()
    finally:
        session.shutdown()
    return events


def test_only_the_interviewer_is_answered_and_the_candidate_is_context(
        decoder: WhisperDecoder, server: FakeServer, tmp_path: Path) -> None:
    interviewer, candidate, q1_to_q2 = _tracks(tmp_path)
    assert q1_to_q2 < Settings().turns.continuation_window_ms / 1000  # the premise
    events = _replay(Session(Settings(), sources=Sources(interviewer, candidate_file=candidate),
                             decoder=decoder,
                             llm=LlmEndpoint(server.start(), "k", "gpt-4o-mini", local=False)))
    finals = [e for e in events if isinstance(e, FinalEvent)]
    theirs = [f for f in finals if f.speaker == "interviewer"]
    mine = [f for f in finals if f.speaker == "candidate"]
    assert [("kafka" in f.text.lower(), "weakness" in f.text.lower()) for f in theirs] == \
        [(True, False), (False, True)], [f.text for f in finals]
    assert len(mine) == 1 and "bank" in mine[0].text.lower()
    # the candidate's line is judged for echo as a whole: it appears with its final
    assert not [p for p in events if isinstance(p, PartialEvent) and p.speaker == "candidate"]
    # no guess, endpoint or request is about the candidate's words
    asked = [e.text.lower() for e in events if isinstance(e, RequestEvent | SpeculateEvent)]
    assert asked and not any("bank" in text for text in asked)
    assert mine[0].turn not in {e.turn for e in events if isinstance(e, EndpointEvent | RequestEvent)}
    # Q2 came within the continuation window of Q1, but after the candidate spoke: a new turn
    assert not [e for e in events if isinstance(e, ResumedEvent)]
    assert theirs[1].turn != theirs[0].turn
    # the candidate's words are in the history of the request for Q2
    q2_request = next(r for r in server.chat_requests() if "weakness" in str(r.body["messages"][-1]).lower())
    history = " ".join(str(m["content"]) for m in q2_request.body["messages"][:-1])
    assert "bank" in history.lower() and "kafka" in history.lower()


def test_the_interviewer_heard_through_speakers_is_not_you(
        decoder: WhisperDecoder, server: FakeServer, tmp_path: Path) -> None:
    """A two-channel call recording whose microphone channel holds the interviewer again,
    10 dB quieter and 40 ms late (laptop speakers), plus the candidate's own answer: no
    "You" line repeats the question, the answer is still the candidate's.

    The answer starts 1 s after the question: the gate judges half-second windows, so the
    first ~0.5 s after an echo still holds the echo's contour (a known limit)."""
    interviewer, candidate, _ = _tracks(tmp_path, gap_s=1.0)
    theirs, mine = read_wav(interviewer).astype(np.float64), read_wav(candidate).astype(np.float64)
    delay = int(0.040 * 16_000)
    echo = np.zeros_like(theirs)
    echo[delay:] = theirs[:-delay] * 10 ** (-10 / 20)
    call = np.stack([theirs, np.clip(mine + echo, -32768, 32767)], axis=1).astype(np.int16)
    write_wav(tmp_path / "call.wav", call)
    events = _replay(Session(Settings(), sources=Sources(tmp_path / "call.wav", channels=(0, 1)),
                             decoder=decoder,
                             llm=LlmEndpoint(server.start(), "k", "gpt-4o-mini", local=False)))
    finals = [e for e in events if isinstance(e, FinalEvent)]
    mine_said = [f.text.lower() for f in finals if f.speaker == "candidate"]
    theirs_said = [f.text.lower() for f in finals if f.speaker == "interviewer"]
    assert any("kafka" in t for t in theirs_said) and any("weakness" in t for t in theirs_said)
    assert not any("kafka" in t or "weakness" in t for t in mine_said), mine_said
    assert any("bank" in t for t in mine_said), mine_said
