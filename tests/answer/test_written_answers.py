"""A question read from the screen through the one answer engine, over real sockets:
its own prompt, images only when the setting is on, and the text alone from a model
that refuses images (the refusal named)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.answer.engine import AnswerEngine, AnswerTarget
from app.core.clock import SessionClock
from app.core.config import Settings
from app.core.events import AnswerDoneEvent, EventBus, StatusEvent, TokenEvent
from app.llm.client import LlmClient
from app.prompt.builder import PromptBuilder
from app.prompt.written import WRITTEN_SYSTEM_PROMPT
from devtools.fake_server import FakeServer, Profile, has_image
from tests.conftest import EventRecorder as Recorder
from tests.patience import NEVER_S

KEY = "sk-test-secret-123456"
PROBLEM = "1. Two Sum\nGiven an array of integers nums and an integer target, return the indices."


def engine_for(server: FakeServer, settings: Settings) -> tuple[AnswerEngine, Recorder]:
    bus, rec = EventBus(), Recorder()
    bus.subscribe(rec)
    base_url = server.start()
    prompt = PromptBuilder(None, None, None)
    engine = AnswerEngine(settings, bus, SessionClock(), lambda _language: prompt,
                          lambda: LlmClient(base_url, KEY, "gpt-4o-mini"),
                          target=AnswerTarget("gpt-4o-mini", "t"))
    bus.subscribe(engine.on_event)
    engine.start()
    assert engine.warmed.wait(NEVER_S)
    return engine, rec


@pytest.fixture
def refusing() -> Iterator[FakeServer]:
    with FakeServer(Profile(answer_tokens=8, refuse_images=True), api_key=KEY) as server:
        yield server


def chats(server: FakeServer) -> list[list[dict[str, object]]]:
    return [r.body["messages"] for r in server.requests("/v1/chat/completions")  # type: ignore[index]
            if isinstance(r.body, dict) and r.body.get("max_tokens", 0) > 1]


def test_a_written_question_has_its_own_prompt_and_streams_like_a_spoken_one(refusing: FakeServer) -> None:
    engine, rec = engine_for(refusing, Settings())
    try:
        engine.ask_written(1, PROBLEM, [b"\x89PNG not sent"])
        rec.wait(AnswerDoneEvent)
        done = rec.of(AnswerDoneEvent)[0]
        assert done.error is None and done.text and rec.of(TokenEvent)
        [messages] = chats(refusing)
        assert messages[0]["content"] == WRITTEN_SYSTEM_PROMPT
        assert not has_image(messages)  # the image setting is off by default: the text only
    finally:
        engine.stop()


def test_a_model_that_refuses_images_answers_from_the_text_and_names_why(refusing: FakeServer) -> None:
    settings = Settings()
    settings.screen.send_image = True
    engine, rec = engine_for(refusing, settings)
    try:
        engine.ask_written(1, PROBLEM, [b"\x89PNG capture"])
        rec.wait(AnswerDoneEvent)
        done = rec.of(AnswerDoneEvent)[0]
        assert done.error is None and done.text
        first, second = chats(refusing)
        assert has_image(first) and not has_image(second)
        said = [e.message for e in rec.of(StatusEvent) if "image" in e.message]
        assert said and "did not take the image" in said[0] and "image_url" in said[0]
        assert "text read on this machine" in said[0]
    finally:
        engine.stop()


def test_a_vision_model_gets_the_image_once() -> None:
    settings = Settings()
    settings.screen.send_image = True
    with FakeServer(Profile(answer_tokens=8), api_key=KEY) as vision:
        engine, rec = engine_for(vision, settings)
        try:
            engine.ask_written(1, PROBLEM, [b"\x89PNG capture"])
            rec.wait(AnswerDoneEvent)
            [messages] = chats(vision)
            assert has_image(messages)
            assert not [e for e in rec.of(StatusEvent) if "image" in e.message]
        finally:
            engine.stop()
