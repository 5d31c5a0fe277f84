"""The answer engine with recall: lines announced before the answer, facts and the shape
on the wire, against our test server over real sockets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.answer.engine import AnswerEngine, AnswerTarget
from app.core.clock import SessionClock
from app.core.config import Settings
from app.core.events import AnswerDoneEvent, EventBus, FinalEvent, RecallEvent, RequestEvent, SpeculateEvent
from app.llm.client import LlmClient
from app.prompt.builder import PromptBuilder
from devtools.fake_server import FakeServer, Profile
from tests.conftest import EventRecorder as Recorder
from tests.patience import NEVER_S

RESUME = """# Priya Raman
Backend engineer.

## Experience
- Replaced nightly batch jobs with a Kafka event pipeline
- Mentored four junior engineers
"""


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(Profile(ttft=0.02, tokens_per_s=400, answer_tokens=90), api_key="sk-test") as s:
        yield s


def _engine(server: FakeServer, *, compact: bool) -> tuple[AnswerEngine, Recorder, EventBus]:
    bus, rec = EventBus(), Recorder()
    bus.subscribe(rec)
    url = server.start()
    prompt = PromptBuilder(None, RESUME, None, compact=compact)
    engine = AnswerEngine(Settings(), bus, SessionClock(), lambda language: prompt,
                          lambda: LlmClient(url, "sk-test", "gpt-4o-mini"),
                          target=AnswerTarget("gpt-4o-mini", "t"))
    bus.subscribe(engine.on_event)
    engine.start()
    assert engine.warmed.wait(NEVER_S)
    return engine, rec, bus


def test_the_lines_come_before_the_answer_and_a_small_model_gets_them_as_facts(server: FakeServer) -> None:
    engine, rec, bus = _engine(server, compact=True)
    try:
        bus.emit(SpeculateEvent(t=0.0, turn=1, text="what did you use kafka", reason="silence"))
        bus.emit(FinalEvent(t=0.1, turn=1, text="what did you use kafka for", audio_end=0.1))
        rec.wait(lambda r: bool(r.of(AnswerDoneEvent)))
        recalls = rec.of(RecallEvent)
        assert [(e.turn, e.guessed) for e in recalls] == [(1, True)]  # the final said the same
        assert "Kafka event pipeline" in recalls[0].lines[0].text
        first_request = rec.of(RequestEvent)[0]
        assert recalls[0].t <= first_request.t
        body = server.chat_requests()[-1].body
        assert body["messages"][-1]["content"].startswith(
            "Facts:\n- Replaced nightly batch jobs with a Kafka event pipeline\n\nQuestion: ")
        assert body["repeat_penalty"] > 1.1 and body["logit_bias"]["7"] == -100
        assert body["max_tokens"] <= 96
        done = rec.of(AnswerDoneEvent)[0]
        assert len(done.text.split()) == 50  # the shape's word cap, not the server's 90 tokens
        assert server.wait_for(lambda s: not s.chat_requests()[-1].finished)  # closed early
    finally:
        engine.stop()


def test_a_capable_model_gets_the_plain_question_and_no_shape(server: FakeServer) -> None:
    engine, rec, bus = _engine(server, compact=False)
    try:
        bus.emit(FinalEvent(t=0.1, turn=1, text="have you mentored anyone", audio_end=0.1))
        rec.wait(lambda r: bool(r.of(AnswerDoneEvent)))
        assert "Mentored four junior engineers" in rec.of(RecallEvent)[0].lines[0].text
        body = server.chat_requests()[-1].body
        assert body["messages"][-1]["content"] == "have you mentored anyone"
        assert "logit_bias" not in body and "repeat_penalty" not in body
        assert len(rec.of(AnswerDoneEvent)[0].text.split()) == 90
    finally:
        engine.stop()
