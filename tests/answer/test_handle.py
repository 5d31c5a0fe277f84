"""An answer's life, move by move: every allowed transition, every refused one, and what each says.

The table below is the contract of :mod:`app.answer.handle`: for each state (reached the
way the engine reaches it) and each thing that can happen, either the next state and the
events it emits, or a refusal that changes nothing.
"""

from __future__ import annotations

import ast
import inspect
import itertools
from pathlib import Path

import pytest

from app.answer import engine
from app.answer.accounting import Ledger
from app.answer.handle import (
    NEXT,
    AnswerHandle,
    AnswerState,
    Cancel,
    Complete,
    Continued,
    Cut,
    Fail,
    Hit,
    InvalidTransition,
    Miss,
    Received,
    Sent,
    Trigger,
    Withdraw,
)
from app.core.events import AnswerDoneEvent, FirstTokenEvent, RequestKind, RestoredEvent, TokenEvent

S = AnswerState
ONE_OF_EACH: list[Trigger] = [Sent(12), Received("b"), Hit(0.97), Miss(0.5), Cancel(), Cut(), Continued(),
                              Withdraw(), Complete(), Fail("the endpoint failed")]

# How the engine brings an answer to each state: (kind, what happened so far).
PATHS: dict[AnswerState, tuple[RequestKind, list[Trigger]]] = {
    S.HELD: ("speculative", [Sent(10)]),
    S.READY: ("speculative", [Sent(10), Received("a"), Complete()]),
    S.CONFIRMED: ("final", [Sent(10)]),
    S.SHOWN: ("final", [Sent(10), Received("a")]),
    S.WITHDRAWN: ("final", [Sent(10), Received("a"), Continued()]),
    S.WITHDRAWN_READY: ("final", [Sent(10), Received("a"), Continued(), Complete()]),
    S.WITHDRAWN_DONE: ("final", [Sent(10), Received("a"), Complete(), Continued()]),
    S.DONE: ("final", [Sent(10), Received("a"), Complete()]),
    S.CUT: ("final", [Sent(10), Received("a"), Cut()]),
    S.FAILED: ("final", [Sent(10), Received("a"), Fail("boom")]),
    S.WASTED: ("speculative", [Sent(10), Received("a"), Cancel()]),
    S.RETRACTED: ("final", [Sent(10), Received("a"), Withdraw()]),
}

ALLOWED: dict[tuple[AnswerState, type], tuple[AnswerState, list[str]]] = {
    (S.HELD, Sent): (S.HELD, ["request"]),
    (S.HELD, Received): (S.HELD, ["first_token"]),  # held: no token reaches the screen
    (S.HELD, Hit): (S.CONFIRMED, ["speculation"]),
    (S.HELD, Miss): (S.WASTED, ["speculation"]),
    (S.HELD, Cancel): (S.WASTED, ["speculation"]),
    (S.HELD, Complete): (S.READY, []),
    (S.HELD, Fail): (S.WASTED, []),  # a guess fails silently
    (S.READY, Hit): (S.DONE, ["speculation", "token", "answer_done", "turn_stats"]),
    (S.READY, Miss): (S.WASTED, ["speculation"]),
    (S.READY, Cancel): (S.WASTED, ["speculation"]),
    (S.CONFIRMED, Sent): (S.CONFIRMED, ["request"]),
    (S.CONFIRMED, Received): (S.SHOWN, ["first_token", "token"]),
    (S.CONFIRMED, Cancel): (S.CUT, ["answer_done", "turn_stats"]),
    (S.CONFIRMED, Continued): (S.HELD, []),  # nothing was shown: nothing to take back
    (S.CONFIRMED, Complete): (S.DONE, ["answer_done", "turn_stats"]),
    (S.CONFIRMED, Fail): (S.FAILED, ["error", "answer_done", "turn_stats"]),
    (S.SHOWN, Received): (S.SHOWN, ["token"]),
    (S.SHOWN, Cancel): (S.CUT, ["answer_done", "turn_stats"]),
    (S.SHOWN, Cut): (S.CUT, ["cut", "answer_done", "turn_stats"]),
    (S.SHOWN, Continued): (S.WITHDRAWN, ["retracted"]),
    (S.SHOWN, Withdraw): (S.RETRACTED, ["retracted", "answer_done", "turn_stats"]),
    (S.SHOWN, Complete): (S.DONE, ["answer_done", "turn_stats"]),
    (S.SHOWN, Fail): (S.FAILED, ["error", "answer_done", "turn_stats"]),
    (S.WITHDRAWN, Received): (S.WITHDRAWN, []),  # held again until the whole question decides
    (S.WITHDRAWN, Hit): (S.SHOWN, ["speculation", "restored"]),  # nothing new was held
    (S.WITHDRAWN, Miss): (S.WASTED, ["speculation"]),
    (S.WITHDRAWN, Cancel): (S.WASTED, ["speculation"]),
    (S.WITHDRAWN, Complete): (S.WITHDRAWN_READY, []),
    (S.WITHDRAWN, Fail): (S.WASTED, []),
    (S.WITHDRAWN_READY, Hit): (S.DONE, ["speculation", "restored", "answer_done", "turn_stats"]),
    (S.WITHDRAWN_READY, Miss): (S.WASTED, ["speculation"]),
    (S.WITHDRAWN_READY, Cancel): (S.WASTED, ["speculation"]),
    (S.WITHDRAWN_DONE, Hit): (S.DONE, ["speculation", "restored"]),  # accounted once, already
    (S.WITHDRAWN_DONE, Miss): (S.RETRACTED, ["speculation"]),
    (S.WITHDRAWN_DONE, Cancel): (S.RETRACTED, []),
    (S.DONE, Continued): (S.WITHDRAWN_DONE, ["retracted"]),
    (S.DONE, Withdraw): (S.RETRACTED, ["retracted"]),
    (S.CUT, Continued): (S.RETRACTED, ["retracted"]),
    (S.FAILED, Continued): (S.RETRACTED, ["retracted"]),
    (S.FAILED, Withdraw): (S.RETRACTED, ["retracted"]),
    (S.RETRACTED, Continued): (S.RETRACTED, []),  # already off the screen: said once
}


def reach(state: AnswerState, ledger: Ledger | None = None) -> AnswerHandle:
    kind, path = PATHS[state]
    handle = AnswerHandle.new(7, 3, kind, "Why this role?", ledger or Ledger(None))
    for t, trigger in enumerate(path):
        handle.transition(trigger, float(t))
    assert handle.state is state
    return handle


def test_every_state_is_reachable_and_the_table_is_the_modules() -> None:
    assert set(PATHS) == set(AnswerState)
    assert {(s, t): n for s, moves in NEXT.items() for t, n in moves.items()} == {
        key: value[0] for key, value in ALLOWED.items()}


@pytest.mark.parametrize(("state", "trigger"), [
    pytest.param(s, t, id=f"{s.value}-{type(t).__name__}")
    for s, t in itertools.product(AnswerState, ONE_OF_EACH)
])
def test_a_move_goes_where_the_table_says_or_is_refused(state: AnswerState, trigger: Trigger) -> None:
    ledger = Ledger(None)
    handle = reach(state, ledger)
    accounted = ledger.session.requests
    expected = ALLOWED.get((state, type(trigger)))
    if expected is None:
        with pytest.raises(InvalidTransition):
            handle.transition(trigger, 9.0)
        assert handle.state is state and ledger.session.requests == accounted  # nothing changed
        return
    events = handle.transition(trigger, 9.0)
    assert (handle.state, [e.name for e in events]) == expected
    assert all(e.t == 9.0 for e in events)
    assert all(getattr(e, "request", handle.id) == handle.id for e in events)
    # Accounted exactly once, when it settles, and never again.
    assert ledger.session.requests == (1 if handle.settled else 0)


def test_a_hit_on_a_guess_with_held_fragments_shows_them_at_once() -> None:
    handle = reach(S.HELD)
    for t, text in enumerate(["Because ", "I like it."]):
        assert [e.name for e in handle.transition(Received(text), t)] == (["first_token"] if t == 0 else [])
    events = handle.transition(Hit(1.0), 5.0)
    assert handle.state is S.SHOWN
    assert [(e.name, getattr(e, "text", None)) for e in events] == [("speculation", None),
                                                                    ("token", "Because I like it.")]
    assert [type(e) for e in handle.transition(Received(" Really."), 6.0)] == [TokenEvent]


def test_a_restored_answer_shows_what_came_while_it_was_withdrawn() -> None:
    handle = reach(S.WITHDRAWN)  # "a" was on screen
    handle.transition(Received("b"), 5.0)
    handle.transition(Received("c"), 5.1)
    events = handle.transition(Hit(1.0), 6.0)
    assert [type(e) for e in events][1:] == [RestoredEvent, TokenEvent]
    assert events[-1].text == "bc" and handle.on_screen == 3  # type: ignore[attr-defined]


def test_an_answer_that_showed_nothing_is_neither_retracted_nor_restored() -> None:
    handle = AnswerHandle.new(1, 1, "final", "Why?", Ledger(None))
    handle.transition(Sent(5), 0.0)
    assert [e.name for e in handle.transition(Complete(), 1.0)] == ["answer_done", "turn_stats"]  # empty
    assert handle.transition(Continued(), 2.0) == [] and handle.state is S.WITHDRAWN_DONE
    assert [e.name for e in handle.transition(Hit(1.0), 3.0)] == ["speculation"]


@pytest.mark.parametrize(("state", "trigger", "truncated", "error"), [
    (S.SHOWN, Complete(), False, None),
    (S.SHOWN, Cut(), True, None),
    (S.SHOWN, Cancel(), True, None),
    (S.SHOWN, Withdraw(), True, None),
    (S.SHOWN, Fail("cut off"), True, "cut off"),
    (S.CONFIRMED, Fail("no answer"), False, "no answer"),  # nothing arrived: missing, not truncated
    (S.READY, Hit(1.0), False, None),
])
def test_what_an_answer_says_when_it_ends(state: AnswerState, trigger: Trigger, truncated: bool,
                                          error: str | None) -> None:
    handle = reach(state)
    (done,) = [e for e in handle.transition(trigger, 9.0) if isinstance(e, AnswerDoneEvent)]
    assert (done.truncated, done.error, done.text) == (truncated, error, "".join(handle.received))
    assert done.usage.estimated and done.usage.prompt_tokens == 10  # the server sent no usage


def test_wasted_spend_is_what_a_guess_cost_and_a_hit_is_not_wasted() -> None:
    ledger = Ledger(None)
    missed = reach(S.READY, ledger)
    missed.transition(Miss(0.4), 5.0)
    hit = AnswerHandle.new(8, 3, "speculative", "Why?", ledger)
    moves: list[Trigger] = [Sent(20), Received("x"), Received("y"), Hit(1.0), Complete()]
    for t, trigger in enumerate(moves):
        hit.transition(trigger, float(t))
    totals = ledger.turn(3)
    assert (totals.requests, totals.hits, totals.misses) == (2, 1, 1)
    assert (totals.wasted_prompt_tokens, totals.wasted_completion_tokens) == (10, 1)


def test_first_token_measures_from_the_request_leaving() -> None:
    handle = AnswerHandle.new(1, 1, "final", "Why?", Ledger(None))
    handle.transition(Sent(5), 2.0)
    (first, _token) = handle.transition(Received("x"), 2.75)
    assert isinstance(first, FirstTokenEvent) and first.ttft == 0.75


def test_the_engine_builds_no_answer_event_itself() -> None:
    """Every event about an answer comes from a transition: the engine only applies them."""
    answer_events = {"RequestEvent", "FirstTokenEvent", "TokenEvent", "SpeculationEvent", "CutEvent",
                     "RetractedEvent", "RestoredEvent", "AnswerDoneEvent", "TurnStatsEvent", "ErrorEvent"}
    tree = ast.parse(Path(inspect.getfile(engine)).read_text(encoding="utf-8"))
    built = {node.func.id for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert not built & answer_events
