"""The turn timeline: one reduction of events that the window, tracer, export and bench share."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from app.core.events import (
    AnswerDoneEvent,
    CutEvent,
    EndpointEvent,
    Event,
    FinalEvent,
    FirstTokenEvent,
    PaintedEvent,
    PartialEvent,
    RequestEvent,
    RestoredEvent,
    RetractedEvent,
    SpeculateEvent,
    SpeculationEvent,
    TokenEvent,
    TurnStatsEvent,
    Usage,
    VadEvent,
)
from app.observing.percentile import median, p95, percentile
from app.observing.session_files import exchanges
from app.observing.timeline import Timeline
from devtools.bench.corpus import Clip
from devtools.bench.turns import score

Q1 = "How do you test a streaming parser"


def continued_question() -> list[Event]:
    """Turn 1 is answered at a pause, taken back when the interviewer goes on, answered
    again for the whole question; the tag that follows restores nothing.  Turn 2's answer
    is cut by a regeneration."""
    return [
        VadEvent(t=0.5, speech=True),
        PartialEvent(t=1.0, turn=1, text="How do you", stable="How", audio_end=0.9),
        VadEvent(t=1.6, speech=False),
        SpeculateEvent(t=1.8, turn=1, text="How do you test", reason="silence"),
        RequestEvent(t=1.81, turn=1, request=1, kind="speculative", text="How do you test"),
        EndpointEvent(t=2.0, turn=1, reason="silence", silence=0.4),
        FinalEvent(t=2.05, turn=1, text="How do you test", audio_end=1.6),
        SpeculationEvent(t=2.06, turn=1, request=1, outcome="hit", similarity=1.0),
        FirstTokenEvent(t=2.2, turn=1, request=1, ttft=0.39),
        TokenEvent(t=2.21, turn=1, request=1, text="With "),
        PaintedEvent(t=2.23, turn=1, request=1, latency=0.02),
        TokenEvent(t=2.3, turn=1, request=1, text="fixtures."),
        VadEvent(t=2.6, speech=True),
        RetractedEvent(t=2.7, turn=1, request=1, reason="continued"),
        VadEvent(t=3.5, speech=False),
        EndpointEvent(t=3.9, turn=1, reason="question", silence=0.4),
        FinalEvent(t=3.95, turn=1, text=Q1, audio_end=3.5),
        RequestEvent(t=3.96, turn=1, request=2, kind="final", text=Q1),
        FirstTokenEvent(t=4.3, turn=1, request=2, ttft=0.34),
        TokenEvent(t=4.31, turn=1, request=2, text="Feed it chunks."),
        AnswerDoneEvent(t=4.6, turn=1, request=2, text="Feed it chunks.",
                        usage=Usage(prompt_tokens=900, completion_tokens=4), cost=0.001),
        TurnStatsEvent(t=4.61, turn=1, requests=2, speculative_requests=1, hits=1, misses=0,
                       prompt_tokens=1800, completion_tokens=9, wasted_prompt_tokens=900,
                       wasted_completion_tokens=5, cost=0.002, wasted_cost=0.001),
        VadEvent(t=6.0, speech=True),
        VadEvent(t=7.0, speech=False),
        EndpointEvent(t=7.5, turn=2, reason="silence", silence=0.5),
        FinalEvent(t=7.6, turn=2, text="Why Rust", audio_end=7.0),
        RequestEvent(t=7.61, turn=2, request=3, kind="final", text="Why Rust"),
        FirstTokenEvent(t=7.9, turn=2, request=3, ttft=0.29),
        TokenEvent(t=7.91, turn=2, request=3, text="Safety"),
        RequestEvent(t=8.0, turn=2, request=4, kind="regenerate", text="Why Rust"),
        CutEvent(t=8.0, turn=2, request=3),
        TokenEvent(t=8.3, turn=2, request=4, text="Speed"),
    ]


def test_stages_of_a_turn_that_went_on_after_a_pause() -> None:
    timeline = Timeline.of(continued_question())
    one = timeline.stages(1)[0]
    assert one.speech_start == 0.5  # the onset, bound to the turn's first words
    assert [e.t for e in one.endpoints] == [2.0, 3.9] and one.endpoint is one.endpoints[-1]
    assert one.speech_end == pytest.approx(3.5)  # the last endpoint's speech end
    assert one.final is not None and one.final.text == "How do you test"  # what was first answered
    assert [f.text for f in one.finals][-1] == Q1
    spec = one.requests[1]
    assert spec.speculate is not None and spec.speculate.reason == "silence"
    assert spec.verdict is not None and spec.verdict.outcome == "hit" and spec.shown == 2.21
    assert one.answer is one.requests[2] and one.requests[2].end == 4.6
    assert one.first_shown == 2.21 and one.painted is not None and one.painted.t == 2.23
    assert timeline.stages(2)[0].speech_start == 6.0
    assert timeline.outcomes["hit"] == 1 and len(timeline.requests) == 4


def test_which_answers_stand_retracted_restored_and_cut() -> None:
    events = continued_question()
    timeline = Timeline.of(events)
    shown = {a.request: a for a in timeline.answers()}
    assert shown[1].retracted == "continued" and shown[1].text == "With fixtures."
    assert not shown[2].regenerated  # the first answer was already taken back
    assert shown[3].cut and not shown[3].regenerated and shown[4].regenerated
    assert [a.request for a in timeline.left_on_screen()] == [2, 3, 4]

    timeline.feed(RestoredEvent(t=9.0, turn=1, request=1))
    standing = timeline.left_on_screen()
    assert [a.request for a in standing] == [2, 3, 4, 1]  # put back up last
    assert standing[-1].put_up == 9.0 and standing[-1].shown_at == 2.21

    asked = exchanges(events)
    assert [(e.turn, e.question, e.asked_at) for e in asked] == [(1, Q1, 3.9), (2, "Why Rust", 7.5)]
    assert [(a.request, a.retracted, a.cut, a.regenerated) for a in asked[1].answers] == [
        (3, None, True, False), (4, None, False, True)]


def test_milestones_and_totals_for_the_status_bar() -> None:
    timeline = Timeline.of(continued_question())
    first = timeline.turn(1)
    assert first is not None and first.origin == "silence"
    # counted from the first pause's silence (1.6): the speculative request left at +210
    assert first.describe() == ("Last turn 630 ms: endpoint +400 · request +210 spec. hit · "
                                "1st token +600 · shown +630")
    second = timeline.turn(2)  # timed by its first answer; the regeneration does not move it
    assert second is not None and second.response is not None and second.request_kind == "final"
    assert round(second.response * 1000) == 910 and second.outcome == "none"
    # turn 1 by its turn_stats (wasted work included); turn 2 never finished
    assert timeline.totals.prompt_tokens == 1800 and timeline.totals.wasted_cost == pytest.approx(0.001)


def test_a_final_after_the_first_token_fills_in_its_milestone() -> None:
    timeline = Timeline.of([
        VadEvent(t=1.0, speech=False),
        EndpointEvent(t=1.5, turn=1, reason="silence", silence=0.5),
        RequestEvent(t=1.5, turn=1, request=1, kind="final", text="q"),
        TokenEvent(t=1.9, turn=1, request=1, text="A"),
    ])
    assert timeline.last is not None and timeline.last.final is None
    assert timeline.feed(FinalEvent(t=2.0, turn=1, text="q", audio_end=1.0))
    assert timeline.last.final == pytest.approx(1.0)


def test_tracer_sized_timeline_forgets_the_oldest_turns() -> None:
    timeline = Timeline(keep_turns=2)
    for turn in (1, 2, 3):
        timeline.feed(PartialEvent(t=float(turn), turn=turn, text="x", stable="", audio_end=0.0))
    assert [s.number for s in timeline.stages()] == [2, 3]
    assert timeline.forget(3) is not None and timeline.forget(3) is None


def test_bench_scores_the_answer_left_on_screen() -> None:
    clip = Clip(Path("q.wav"), Q1, speech_end_s=3.5, pauses=((1.6, 1.0),))
    result = score(continued_question()[:21], clip, "ours")
    assert result.response_latency == pytest.approx(4.31 - 3.5)
    assert result.final == Q1 and result.finals == 2 and result.turns == [1]
    assert result.answer == "Feed it chunks." and result.stale == 0
    assert result.withdrawn == 1 and result.withdraw_delays == [pytest.approx(0.1)]
    assert result.endpoint_wait == pytest.approx(2.0 - 3.5)  # the turn's first endpoint
    assert result.asr_final == pytest.approx(3.95 - 2.0)
    assert result.final_to_request == pytest.approx(0.01)
    assert result.request_to_first_token == pytest.approx(0.34)
    assert result.first_token_to_shown == pytest.approx(0.01)
    assert (result.requests, result.hits, result.misses) == (2, 1, 0)
    assert not result.cold  # its request found a warm connection
    opened = [dataclasses.replace(e, connect=0.23) if isinstance(e, FirstTokenEvent) and e.request == 2 else e
              for e in continued_question()[:21]]
    assert score(opened, clip, "ours").cold


def test_nearest_rank_percentiles() -> None:
    assert median([]) is None and p95([]) is None
    assert median([3.0, 1.0, 2.0, 10.0]) == 2.5
    assert p95([float(i) for i in range(1, 21)]) == 19.0  # 95 % of 20 samples are ≤ 19
    assert p95([float(i) for i in range(1, 13)]) == 12.0  # under 20 samples: the slowest
    assert percentile([5.0, 1.0], 0.0) == 1.0 and percentile([5.0, 1.0], 1.0) == 5.0
