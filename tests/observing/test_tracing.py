"""Per-turn traces from the event stream: structure, GenAI attributes, privacy, real engine."""

from __future__ import annotations

import io
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.answer.engine import AnswerEngine, AnswerTarget
from app.core.clock import SessionClock
from app.core.config import Settings
from app.core.events import (
    AnswerDoneEvent,
    EndpointEvent,
    Event,
    EventBus,
    FinalEvent,
    FirstTokenEvent,
    PaintedEvent,
    PartialEvent,
    RequestEvent,
    SpeculateEvent,
    SpeculationEvent,
    TokenEvent,
    Usage,
    VadEvent,
)
from app.llm.client import LlmClient
from app.observing.tracing import Traced, TracingUnavailable, TurnTracer, format_waterfall, maybe_tracer
from app.prompt.builder import PromptBuilder
from devtools.fake_server import FakeServer, Profile

QUESTION = "What is the difference between a process and a thread?"
SECRET_ANSWER = "A process owns memory; threads share it."
ORIGIN = 1_700_000_000_000_000_000


def turn_events(turn: int = 1, t0: float = 0.0) -> list[Event]:
    """One turn as the pipeline and engine emit it: a cancelled guess, then a hit."""
    return [
        VadEvent(t=t0 + 0.30, speech=True),
        PartialEvent(t=t0 + 0.90, turn=turn, text="What is the", stable="What", audio_end=t0 + 0.85),
        SpeculateEvent(t=t0 + 1.50, turn=turn, text="What is the difference", reason="silence"),
        RequestEvent(t=t0 + 1.51, turn=turn, request=10 * turn + 1, kind="speculative",
                     text="What is the difference"),
        VadEvent(t=t0 + 1.60, speech=True),  # speech resumed: not a new onset
        SpeculationEvent(t=t0 + 2.40, turn=turn, request=10 * turn + 1, outcome="cancelled", similarity=0.0),
        SpeculateEvent(t=t0 + 2.40, turn=turn, text=QUESTION, reason="question"),
        RequestEvent(t=t0 + 2.41, turn=turn, request=10 * turn + 2, kind="speculative", text=QUESTION),
        VadEvent(t=t0 + 2.45, speech=False),
        FirstTokenEvent(t=t0 + 2.71, turn=turn, request=10 * turn + 2, ttft=0.30, connect=None),
        EndpointEvent(t=t0 + 2.75, turn=turn, reason="question", silence=0.40),
        FinalEvent(t=t0 + 2.80, turn=turn, text=QUESTION, audio_end=t0 + 2.35, reused=True),
        SpeculationEvent(t=t0 + 2.80, turn=turn, request=10 * turn + 2, outcome="hit", similarity=1.0),
        TokenEvent(t=t0 + 2.80, turn=turn, request=turn, text="A process"),
        PaintedEvent(t=t0 + 2.812, turn=turn, request=turn, latency=0.012),
        TokenEvent(t=t0 + 2.90, turn=turn, request=turn, text=" owns memory; threads share it."),
        AnswerDoneEvent(t=t0 + 3.50, turn=turn, request=10 * turn + 2, text=SECRET_ANSWER,
                        usage=Usage(prompt_tokens=1200, completion_tokens=9, cached_tokens=1024),
                        cost=0.0002),
    ]


def make_tracer(**kwargs: object) -> tuple[TurnTracer, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    about = Traced(model="gpt-4o-mini", base_url="https://relay.example.com/v1")
    tracer = TurnTracer(exporter, about=about, epoch_origin_ns=ORIGIN, **kwargs)  # type: ignore[arg-type]
    return tracer, exporter


def by_name(spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        out.setdefault(span.name, []).append(span)
    return out


def parent_name(span: ReadableSpan, spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> str | None:
    if span.parent is None:
        return None
    return next(s.name for s in spans if s.context is not None and s.context.span_id == span.parent.span_id)


def ms(span: ReadableSpan) -> tuple[float, float]:
    assert span.start_time is not None and span.end_time is not None
    return (span.start_time - ORIGIN) / 1e6, (span.end_time - ORIGIN) / 1e6


def test_one_trace_per_turn_with_the_whole_waterfall() -> None:
    tracer, exporter = make_tracer()
    for event in turn_events(1) + turn_events(2, t0=10.0):
        tracer(event)
    spans = exporter.get_finished_spans()
    assert len({s.context.trace_id for s in spans if s.context}) == 2
    names = by_name([s for s in spans if s.context and s.context.trace_id == spans[-1].context.trace_id])
    assert set(names) >= {"turn 2", "speech", "endpoint wait", "asr final", "speculation (cancelled)",
                          "speculation (hit)", "chat gpt-4o-mini", "waiting for first token",
                          "first token shown", "painted", "answer stream"}
    turn1 = [s for s in spans if s.context and s.context.trace_id == spans[0].context.trace_id]
    names = by_name(turn1)
    root = names["turn 1"][0]
    assert root.parent is None
    assert ms(root) == pytest.approx((300.0, 3500.0), abs=0.01)
    assert ms(names["speech"][0]) == pytest.approx((300.0, 2350.0), abs=0.01)  # endpoint.t − silence
    assert ms(names["endpoint wait"][0]) == pytest.approx((2350.0, 2750.0), abs=0.01)
    assert ms(names["asr final"][0]) == pytest.approx((2750.0, 2800.0), abs=0.01)
    assert ms(names["painted"][0]) == pytest.approx((2800.0, 2812.0), abs=0.01)
    for name in ("speech", "endpoint wait", "asr final", "speculation (hit)", "first token shown",
                 "painted", "answer stream"):
        assert parent_name(names[name][0], turn1) == "turn 1"
    chats = names["chat gpt-4o-mini"]
    assert {parent_name(c, turn1) for c in chats} == {"speculation (hit)", "speculation (cancelled)"}
    answer = next(c for c in chats if parent_name(c, turn1) == "speculation (hit)")
    assert ms(answer) == pytest.approx((2410.0, 3500.0), abs=0.01)
    # held: received at 2.71, shown at 2.80 when the final confirmed the guess
    assert ms(names["first token shown"][0]) == pytest.approx((2710.0, 2800.0), abs=0.01)
    assert root.attributes is not None
    assert root.attributes["copilot.response_latency_s"] == pytest.approx(0.45)
    assert tracer.traces_built == 2


def test_genai_attributes_and_no_text_by_default() -> None:
    tracer, exporter = make_tracer()
    for event in turn_events():
        tracer(event)
    spans = exporter.get_finished_spans()
    chats = by_name(spans)["chat gpt-4o-mini"]
    answer = next(c for c in chats if c.attributes and "gen_ai.usage.input_tokens" in c.attributes)
    attrs = answer.attributes
    assert attrs is not None
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "gpt-4o-mini"
    assert attrs["gen_ai.usage.input_tokens"] == 1200
    assert attrs["gen_ai.usage.output_tokens"] == 9
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 1024
    assert attrs["gen_ai.response.time_to_first_chunk"] == pytest.approx(0.30)
    assert attrs["copilot.connection.reused"] is True
    assert attrs["server.address"] == "relay.example.com" and attrs["server.port"] == 443
    assert answer.kind.name == "CLIENT"
    assert [e.name for e in answer.events] == ["request sent", "first token"]
    discarded = next(c for c in chats if c is not answer)
    assert discarded.attributes is not None and discarded.attributes["copilot.discarded"] is True
    dump = repr([(s.name, dict(s.attributes or {}), [e.attributes for e in s.events]) for s in spans])
    for private in (QUESTION, SECRET_ANSWER, "What is the difference", "A process"):
        assert private not in dump


def test_text_only_when_opted_in() -> None:
    tracer, exporter = make_tracer(include_text=True)
    for event in turn_events():
        tracer(event)
    spans = by_name(exporter.get_finished_spans())
    assert spans["turn 1"][0].attributes["copilot.question"] == QUESTION  # type: ignore[index]
    assert spans["asr final"][0].attributes["copilot.transcript"] == QUESTION  # type: ignore[index]
    outputs = [c.attributes.get("gen_ai.output.messages") for c in spans["chat gpt-4o-mini"]]  # type: ignore[union-attr]
    assert any(o and SECRET_ANSWER in str(o) for o in outputs)


def test_connect_and_request_timing_phases() -> None:
    """A new connection shows as a connect span; RequestTiming fields are used when present."""
    tracer, exporter = make_tracer()
    for event in turn_events():
        if isinstance(event, FirstTokenEvent):
            event = FirstTokenEvent(t=event.t, turn=event.turn, request=event.request, ttft=0.30,
                                    connect=0.12)
        tracer(event)
    spans = exporter.get_finished_spans()
    names = by_name(spans)
    connect = names["connect"][0]
    assert ms(connect) == pytest.approx((2410.0, 2530.0), abs=0.01)
    assert parent_name(connect, spans) == "chat gpt-4o-mini"
    assert ms(names["waiting for first token"][0]) == pytest.approx((2530.0, 2710.0), abs=0.01)


def test_unanswered_turns_are_flushed_and_capped() -> None:
    tracer, exporter = make_tracer()
    for event in turn_events()[:12]:  # up to the final: no answer yet
        tracer(event)
    assert exporter.get_finished_spans() == ()
    tracer.flush()
    root = by_name(exporter.get_finished_spans())["turn 1"][0]
    assert root.attributes is not None and root.attributes["copilot.answered"] is False


def test_console_exporter_prints_a_waterfall() -> None:
    out = io.StringIO()
    tracer = TurnTracer("console", stream=out, about=Traced(model="gpt-4o-mini"), epoch_origin_ns=ORIGIN)
    for event in turn_events():
        tracer(event)
    tracer.shutdown()
    text = out.getvalue()
    assert "── turn 1" in text
    lines = {line.split()[0]: line for line in text.splitlines()[1:]}
    assert "endpoint" in lines and "400.0 ms" in lines["endpoint"]
    assert "response=450ms" in text
    assert QUESTION not in text
    assert format_waterfall([]) == ""


def test_missing_opentelemetry_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.startswith("opentelemetry")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(TracingUnavailable, match=r"pip install"):
        TurnTracer("console")
    assert maybe_tracer(None) is None and maybe_tracer("off") is None


def test_real_engine_turns_against_the_fake_server() -> None:
    """The engine's own events (speculation hit, then a plain final) trace correctly."""
    settings = Settings()
    bus = EventBus()
    clock = SessionClock()
    clock.start()
    exporter = InMemorySpanExporter()
    done = threading.Event()
    with FakeServer(Profile(ttft=0.03, tokens_per_s=400, answer_tokens=8), api_key="k") as server:
        tracer = TurnTracer(exporter, clock=clock, about=Traced("gpt-4o-mini", server.base_url))
        bus.subscribe(tracer)
        bus.subscribe(lambda e: done.set() if isinstance(e, AnswerDoneEvent) and e.turn == 2 else None)
        prompt = PromptBuilder(None, None, None)
        engine = AnswerEngine(settings, bus, clock, lambda language: prompt,
                              lambda: LlmClient(server.base_url, "k", "gpt-4o-mini"),
                              target=AnswerTarget("gpt-4o-mini", "s1"))
        bus.subscribe(engine.on_event)
        engine.start()
        try:
            bus.emit(VadEvent(t=clock.now(), speech=True))
            bus.emit(SpeculateEvent(t=clock.now(), turn=1, text=QUESTION, reason="question"))
            time.sleep(0.1)
            bus.emit(EndpointEvent(t=clock.now(), turn=1, reason="question", silence=0.4))
            bus.emit(FinalEvent(t=clock.now(), turn=1, text=QUESTION, audio_end=clock.now()))
            time.sleep(0.1)
            bus.emit(VadEvent(t=clock.now(), speech=True))
            bus.emit(EndpointEvent(t=clock.now(), turn=2, reason="silence", silence=0.8))
            bus.emit(FinalEvent(t=clock.now(), turn=2, text="And why?", audio_end=clock.now()))
            assert done.wait(30)  # ends only a wrong run (no second answer), not a slow one
        finally:
            engine.stop()
    assert tracer.traces_built == 2
    spans = exporter.get_finished_spans()
    roots = [s for s in spans if s.parent is None]
    assert sorted(s.name for s in roots) == ["turn 1", "turn 2"]
    names = by_name(spans)
    assert len(names["speculation (hit)"]) == 1
    chats = names["chat gpt-4o-mini"]
    assert len(chats) == 2
    assert all(c.attributes and c.attributes["server.address"] == "127.0.0.1" for c in chats)
    # Session time → epoch: spans sit in wall-clock time of this run.
    assert all(abs((s.start_time or 0) / 1e9 - time.time()) < 60 for s in spans)


@pytest.mark.parametrize(("flags", "says"), [
    (["--trace", "otlp"], "leaves this machine"),
    (["--trace", "console"], "would leave this machine"),
    ([], "does nothing without --trace"),
])
def test_trace_text_says_once_where_the_text_goes(tmp_path: Path, flags: list[str], says: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Said before anything runs (here a run that stops at once: no audio)."""
    from app.frontends.cli import main

    config = tmp_path / "settings.toml"
    config.write_text('[audio]\nsource = "file"\n', encoding="utf-8")
    assert main(["--config", str(config), "listen", "--headless", *flags, "--trace-text"]) == 2
    err = capsys.readouterr().err
    assert err.count("--trace-text") == 1 and says in err, err
