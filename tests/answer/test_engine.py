"""The answer engine against our OpenAI-compatible test server, over real sockets.

Speculation hit and miss, held tokens, cancellation the server can see, connection reuse
and the failure rules, driven by the same events the pipeline emits.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.answer.engine import AnswerEngine, AnswerTarget, Strategy
from app.core.clock import SessionClock
from app.core.config import Settings
from app.core.events import (
    AnswerDoneEvent,
    CutEvent,
    ErrorEvent,
    EventBus,
    FinalEvent,
    FirstTokenEvent,
    RequestEvent,
    RestoredEvent,
    ResumedEvent,
    RetractedEvent,
    SpeculateEvent,
    SpeculationEvent,
    StatusEvent,
    TokenEvent,
    TurnStatsEvent,
)
from app.core.low_latency import LowLatency
from app.llm.client import SPARE_CONNECTIONS, LlmClient
from app.prompt.builder import PromptBuilder
from devtools.bench.baselines import FuzzyReuse, fresh_client_per_request
from devtools.fake_server import FakeServer, Fault, Profile
from tests.conftest import EventRecorder as Recorder
from tests.patience import NEVER_S

KEY = "sk-test-secret-123456"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(Profile(ttft=0.05, tokens_per_s=200, answer_tokens=12), api_key=KEY) as s:
        yield s


def make_engine(server: FakeServer, *, strategy: Strategy = Strategy(), settings: Settings | None = None,
                key: str = KEY, one_at_a_time: bool = False,
                low_latency: LowLatency | None = None) -> tuple[AnswerEngine, Recorder, EventBus]:
    settings = settings or Settings()
    bus = EventBus()
    rec = Recorder()
    bus.subscribe(rec)
    base_url = server.start()
    prompt = PromptBuilder(None, None, None)
    engine = AnswerEngine(settings, bus, SessionClock(), lambda language: prompt,
                          lambda: LlmClient(base_url, key, "gpt-4o-mini"),
                          target=AnswerTarget("gpt-4o-mini", "test", one_at_a_time=one_at_a_time),
                          strategy=strategy, low_latency=low_latency)
    bus.subscribe(engine.on_event)
    engine.start()
    assert engine.warmed.wait(NEVER_S)
    return engine, rec, bus


def speculate(bus: EventBus, text: str, turn: int = 1) -> None:
    bus.emit(SpeculateEvent(t=0.0, turn=turn, text=text, reason="question"))


def final(bus: EventBus, text: str, turn: int = 1) -> None:
    bus.emit(FinalEvent(t=0.0, turn=turn, text=text, audio_end=0.0, reused=True))


def test_a_hit_flushes_held_tokens_and_keeps_streaming(server: FakeServer) -> None:
    engine, rec, bus = make_engine(server)
    try:
        speculate(bus, "Why are you interested in this role?")
        rec.wait(lambda r: bool(r.of(FirstTokenEvent)))
        assert rec.of(TokenEvent) == []  # held until the turn is confirmed
        final(bus, "Um, why are you interested in this role?")
        rec.wait(lambda r: bool(r.of(AnswerDoneEvent)))
        assert [e.outcome for e in rec.of(SpeculationEvent)] == ["hit"]
        assert len(server.chat_requests()) == 1
        assert "interested" in rec.shown(1).lower()
        assert rec.of(AnswerDoneEvent)[0].text == rec.shown(1)
    finally:
        engine.stop()


def test_a_negation_is_a_miss_and_the_guess_never_shows(server: FakeServer) -> None:
    server.set_profile(tokens_per_s=20, answer_tokens=40)  # the guess is still streaming
    engine, rec, bus = make_engine(server)
    try:
        speculate(bus, "Should I take the job offer from them?")
        rec.wait(lambda r: bool(r.of(FirstTokenEvent)))
        final(bus, "Should I not take the job offer from them?")
        rec.wait(lambda r: bool(r.of(AnswerDoneEvent)))
        assert [e.outcome for e in rec.of(SpeculationEvent)] == ["miss"]
        assert server.wait_for(lambda s: s.chat_requests()[0].cancelled)
        shown = rec.shown(1).lower()
        assert "not" in shown and shown == rec.of(AnswerDoneEvent)[0].text.lower()
        kinds = [e.kind for e in rec.of(RequestEvent)]
        assert kinds == ["speculative", "final"]
        stats = rec.of(TurnStatsEvent)[-1]
        assert stats.misses == 1 and stats.wasted_prompt_tokens > 0
    finally:
        engine.stop()


def test_the_users_092_rule_alone_would_show_the_wrong_answer(server: FakeServer) -> None:
    engine, rec, bus = make_engine(server, strategy=Strategy(reuse=FuzzyReuse(0.92)))
    try:
        speculate(bus, "Should I take the job offer from them?")
        final(bus, "Should I not take the job offer from them?")
        rec.wait(lambda r: bool(r.of(AnswerDoneEvent)))
        assert [e.outcome for e in rec.of(SpeculationEvent)] == ["hit"]  # what we must not do by default
    finally:
        engine.stop()


@pytest.mark.parametrize("changed", [
    "How would you handle six million requests a day?",
    "How would you handle five million requests a day, and why?",
])
def test_numbers_and_added_clauses_reissue(server: FakeServer, changed: str) -> None:
    engine, rec, bus = make_engine(server)
    try:
        speculate(bus, "How would you handle five million requests a day?")
        final(bus, changed)
        rec.wait(lambda r: bool(r.of(AnswerDoneEvent)))
        assert rec.of(SpeculationEvent)[0].outcome == "miss"
        assert rec.of(RequestEvent)[-1].text == changed
    finally:
        engine.stop()


def test_a_finished_guess_for_another_question_is_never_painted(server: FakeServer) -> None:
    engine, rec, bus = make_engine(server)
    try:
        speculate(bus, "Tell me about your manager.")
        assert server.wait_for(lambda s: len(s.chat_requests()) == 1 and s.chat_requests()[0].finished,
                               timeout=30)
        final(bus, "Tell me about your biggest failure.")
        rec.wait(lambda r: bool(r.of(AnswerDoneEvent)))
        shown = rec.shown(1).lower()
        assert "failure" in shown and "manager" not in shown
    finally:
        engine.stop()


def test_a_newer_guess_cancels_the_older_stream(server: FakeServer) -> None:
    server.set_profile(tokens_per_s=10, answer_tokens=50)
    engine, rec, bus = make_engine(server)
    try:
        speculate(bus, "Tell me about a time you disagreed")
        rec.wait(lambda r: bool(r.of(FirstTokenEvent)))
        speculate(bus, "Tell me about a time you disagreed with your manager?")
        assert server.wait_for(lambda s: s.chat_requests()[0].cancelled)
        assert [e.outcome for e in rec.of(SpeculationEvent)] == ["cancelled"]
    finally:
        engine.stop()


def test_at_most_three_guesses_per_turn(server: FakeServer) -> None:
    engine, rec, bus = make_engine(server)
    try:
        for text in ("one?", "one two?", "one two three?", "one two three four?", "five?"):
            speculate(bus, text)
        assert engine.wait_idle(30)  # every guess handled, every request it sent ended
        asked = [e.text for e in rec.of(RequestEvent)]
        assert asked and set(asked) <= {"one?", "one two?", "one two three?"}
        assert asked[-1] == "one two three?"  # the newest allowed guess is the one kept
    finally:
        engine.stop()


def test_low_latency_off_asks_only_at_the_final(server: FakeServer) -> None:
    """The engine observes the session's mode: turned off, no guess is asked, and it says so."""
    mode = LowLatency(True)
    engine, rec, bus = make_engine(server, low_latency=mode)
    try:
        mode.set(False)
        assert not engine.low_latency
        assert "low-latency mode off" in [e.message for e in rec.of(StatusEvent)]
        speculate(bus, "Why are you interested in this role?")
        assert engine.wait_idle(30)  # the guess was handled: a request it sent would have ended
        assert rec.of(RequestEvent) == []
        final(bus, "Why are you interested in this role?")
        rec.wait(lambda r: bool(r.of(AnswerDoneEvent)))
        assert [e.kind for e in rec.of(RequestEvent)] == ["final"]
    finally:
        engine.stop()


def test_one_warm_connection_serves_the_whole_session(server: FakeServer) -> None:
    engine, rec, bus = make_engine(server)
    try:
        for turn in range(1, 6):
            speculate(bus, f"Question number {turn} about your work?", turn=turn)
            final(bus, f"Question number {turn} about your work?", turn=turn)
            rec.wait(AnswerDoneEvent, count=turn)
        assert all(e.connect is None for e in rec.of(FirstTokenEvent))  # pre-warmed, then reused
        chat_connections = {r.connection_id for r in server.chat_requests()}
        assert len(chat_connections) == 1
        assert server.connections_accepted <= 1 + SPARE_CONNECTIONS  # the warm one and its spares
    finally:
        engine.stop()


def test_a_stream_cut_after_the_first_token_keeps_what_arrived(server: FakeServer) -> None:
    server.faults.append(Fault("reset_after", after_tokens=3))
    engine, rec, bus = make_engine(server)
    try:
        final(bus, "What is your biggest weakness?")
        rec.wait(lambda r: bool(r.of(AnswerDoneEvent)))
        done = rec.of(AnswerDoneEvent)[0]
        assert done.truncated and done.text and rec.shown(1) == done.text
        assert rec.of(ErrorEvent)
        assert len(server.chat_requests()) == 1  # never re-sent after a token was shown
    finally:
        engine.stop()


def test_a_wrong_key_is_reported_without_the_key(server: FakeServer) -> None:
    engine, rec, bus = make_engine(server, key="sk-wrong-key-999999")
    try:
        final(bus, "What is your biggest weakness?")
        rec.wait(lambda r: len(r.of(ErrorEvent)) >= 1)
        for error in rec.of(ErrorEvent):
            assert "sk-wrong-key-999999" not in error.message
        assert any("key" in e.message.lower() for e in rec.of(ErrorEvent))
    finally:
        engine.stop()


def test_regenerate_is_a_new_request_of_the_same_turn_and_the_next_question_is_its_own(
        server: FakeServer) -> None:
    engine, rec, bus = make_engine(server)
    try:
        final(bus, "What is your biggest weakness?", turn=1)
        rec.wait(lambda r: len(r.of(AnswerDoneEvent)) == 1)
        engine.regenerate()
        rec.wait(lambda r: len(r.of(AnswerDoneEvent)) == 2)
        regenerated = rec.of(RequestEvent)[-1]
        assert regenerated.kind == "regenerate" and regenerated.turn == 1
        speculate(bus, "Why should we hire you?", turn=2)
        final(bus, "Why should we hire you?", turn=2)
        rec.wait(lambda r: len(r.of(AnswerDoneEvent)) == 3)
        assert [e.outcome for e in rec.of(SpeculationEvent)] == ["hit"]  # speculated as usual
        done = rec.of(AnswerDoneEvent)
        assert [d.turn for d in done] == [1, 1, 2] and len({d.request for d in done}) == 3
        by_request = {d.request: d.text for d in done}
        for token in rec.of(TokenEvent):  # two separate whole answers, never mixed
            assert token.text in by_request[token.request]
        assert "hire" in by_request[done[2].request].lower()
    finally:
        engine.stop()


def test_a_new_answer_cuts_the_one_still_streaming(server: FakeServer) -> None:
    engine, rec, bus = make_engine(server)
    try:
        server.set_profile(tokens_per_s=8, answer_tokens=60)  # the first answer is slow
        final(bus, "Tell me about yourself.", turn=1)
        rec.wait(lambda r: len(r.of(TokenEvent)) >= 2)
        server.set_profile(tokens_per_s=400, answer_tokens=12)
        final(bus, "What is your biggest weakness?", turn=2)
        rec.wait(lambda r: len([d for d in r.of(AnswerDoneEvent) if d.turn == 2]) == 1)
        cut = rec.of(CutEvent)
        assert [(c.turn, c.request) for c in cut] == [(1, rec.of(RequestEvent)[0].request)]
        first, second = rec.of(AnswerDoneEvent)
        assert first.turn == 1 and first.truncated and first.text == rec.shown(1)
        assert second.turn == 2 and not second.truncated
        order = [e.request for e in rec.of(TokenEvent)]
        assert order == sorted(order)  # one answer in front: no token of the first after the second
        assert server.wait_for(lambda s: s.chat_requests()[0].cancelled)
    finally:
        engine.stop()


def test_a_one_at_a_time_server_gets_the_new_question_at_once(server: FakeServer) -> None:
    """The embedded server answers one request at a time: the answer on screen is cut when
    the next question's request leaves, not when its first token arrives (which would
    wait for the old answer to finish on that server)."""
    engine, rec, bus = make_engine(server, one_at_a_time=True)
    try:
        server.set_profile(tokens_per_s=8, answer_tokens=60)
        final(bus, "Tell me about yourself.", turn=1)
        rec.wait(lambda r: len(r.of(TokenEvent)) >= 2)
        server.set_profile(tokens_per_s=400, answer_tokens=12)
        final(bus, "What is your biggest weakness?", turn=2)
        rec.wait(lambda r: len([d for d in r.of(AnswerDoneEvent) if d.turn == 2]) == 1)
        (cut,) = rec.of(CutEvent)
        second = next(e for e in rec.of(RequestEvent) if e.turn == 2)
        assert cut.turn == 1 and rec.events.index(cut) < rec.events.index(second)
        first, done = rec.of(AnswerDoneEvent)
        assert first.turn == 1 and first.truncated and first.text == rec.shown(1)
        assert done.turn == 2 and not done.truncated
        assert server.wait_for(lambda s: s.chat_requests()[0].cancelled)
    finally:
        engine.stop()


def test_a_continued_question_withdraws_the_answer_and_asks_the_whole_question(server: FakeServer) -> None:
    engine, rec, bus = make_engine(server)
    try:
        final(bus, "Have you ever led a team?")
        rec.wait(lambda r: len(r.of(AnswerDoneEvent)) == 1)
        first = rec.of(AnswerDoneEvent)[0]
        bus.emit(ResumedEvent(t=1.0, turn=1, pause=0.45))
        rec.wait(lambda r: bool(r.of(RetractedEvent)))
        assert rec.of(RetractedEvent) == [RetractedEvent(t=rec.of(RetractedEvent)[0].t, turn=1,
                                                         request=first.request, reason="continued")]
        whole = "Have you ever led a team? I mean a team of more than ten people."
        final(bus, whole)
        rec.wait(lambda r: len(r.of(AnswerDoneEvent)) == 2)
        second = rec.of(AnswerDoneEvent)[1]
        assert second.turn == 1 and second.request != first.request
        last_user = server.chat_requests()[-1].body["messages"][-1]
        assert last_user["role"] == "user" and last_user["content"] == whole
        assert rec.of(RestoredEvent) == []
    finally:
        engine.stop()


def test_a_tag_continuation_keeps_the_answer(server: FakeServer) -> None:
    engine, rec, bus = make_engine(server)
    try:
        final(bus, "You have worked with Kubernetes")
        rec.wait(lambda r: len(r.of(AnswerDoneEvent)) == 1)
        request = rec.of(AnswerDoneEvent)[0].request
        bus.emit(ResumedEvent(t=1.0, turn=1, pause=0.4))
        speculate(bus, "You have worked with Kubernetes, right?")
        final(bus, "You have worked with Kubernetes, right?")
        rec.wait(lambda r: bool(r.of(RestoredEvent)))
        assert [(e.turn, e.request) for e in rec.of(RestoredEvent)] == [(1, request)]
        assert len(server.chat_requests()) == 1  # nothing asked again
    finally:
        engine.stop()


def test_the_user_can_withdraw_an_answer(server: FakeServer) -> None:
    server.set_profile(tokens_per_s=10, answer_tokens=50)
    engine, rec, bus = make_engine(server)
    try:
        final(bus, "What is your biggest weakness?")
        rec.wait(lambda r: bool(r.of(TokenEvent)))
        engine.retract_answer()
        rec.wait(lambda r: bool(r.of(RetractedEvent)))
        assert rec.of(RetractedEvent)[0].reason == "user"
        assert server.wait_for(lambda s: s.chat_requests()[0].cancelled)
    finally:
        engine.stop()


def test_cancel_answer_stops_the_stream(server: FakeServer) -> None:
    server.set_profile(tokens_per_s=10, answer_tokens=50)
    engine, rec, bus = make_engine(server)
    try:
        final(bus, "What is your biggest weakness?")
        rec.wait(lambda r: bool(r.of(TokenEvent)))
        engine.cancel_answer()
        assert server.wait_for(lambda s: s.chat_requests()[0].cancelled)
        rec.wait(lambda r: bool(r.of(AnswerDoneEvent)))
        done = rec.of(AnswerDoneEvent)[0]
        assert done.truncated and done.text == rec.shown(1)  # what was shown stays, the block ends
        assert rec.of(SpeculationEvent) == []  # an answer is not a speculation
    finally:
        engine.stop()


def test_a_finished_guess_that_is_superseded_counts_as_wasted(server: FakeServer) -> None:
    engine, rec, bus = make_engine(server)
    try:
        speculate(bus, "Tell me about a time you disagreed with your manager.")
        assert server.wait_for(lambda s: bool(s.chat_requests()) and s.chat_requests()[0].finished,
                               timeout=30)
        speculate(bus, "Tell me about a time you disagreed with your manager. How did you handle it?")
        final(bus, "Tell me about a time you disagreed with your manager. How did you handle it?")
        rec.wait(lambda r: bool(r.of(TurnStatsEvent)))
        assert [e.outcome for e in rec.of(SpeculationEvent)] == ["cancelled", "hit"]
        stats = rec.of(TurnStatsEvent)[-1]
        assert stats.requests == 2 and stats.wasted_prompt_tokens > 0 and stats.wasted_completion_tokens > 0
        shown_request = rec.of(AnswerDoneEvent)[0].request
        assert next(e.text for e in rec.of(RequestEvent) if e.request == shown_request).endswith("handle it?")
    finally:
        engine.stop()


def test_the_naive_baseline_is_a_client_factory_the_engine_is_given(server: FakeServer) -> None:
    """``bench turns``' naive mode goes through the product's seam: no client is built or
    warmed before a question, and each question builds, uses and closes its own."""
    built: list[LlmClient] = []
    base_url = server.start()

    def factory() -> LlmClient:
        built.append(LlmClient(base_url, KEY, "gpt-4o-mini"))
        return built[-1]

    bus, rec = EventBus(), Recorder()
    bus.subscribe(rec)
    prompt = PromptBuilder(None, None, None)
    engine = AnswerEngine(Settings(), bus, SessionClock(), lambda language: prompt, factory,
                          target=AnswerTarget("gpt-4o-mini", "test"),
                          strategy=Strategy(clients=fresh_client_per_request))
    bus.subscribe(engine.on_event)
    engine.start()
    try:
        assert engine.warmed.wait(5)
        assert built == [] and server.requests() == []  # nothing warmed
        for turn in (1, 2):
            final(bus, f"Why are you interested in role {turn}?", turn=turn)
            rec.wait(lambda r, n=turn: len(r.of(AnswerDoneEvent)) == n)  # type: ignore[misc]
        assert len(built) == 2 and len(server.chat_requests()) == 2
        assert server.connections_accepted >= 2  # a cold connection each
    finally:
        engine.stop()
