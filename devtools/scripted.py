"""A scripted controller: drives the real window without audio, ASR or a server.

Used by the screenshot and paint-latency scripts and by the demo (``python -m
devtools.scripted``); its events come from a background thread like the real pipeline's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence

from app.core.clock import SessionClock
from app.core.events import (
    AnswerDoneEvent,
    EndpointEvent,
    Event,
    EventBus,
    FinalEvent,
    FirstTokenEvent,
    LevelEvent,
    PartialEvent,
    RequestEvent,
    SpeculateEvent,
    SpeculationEvent,
    TokenEvent,
    TurnStatsEvent,
    Usage,
    VadEvent,
)
from app.core.low_latency import LowLatency

Step = tuple[float, Callable[[float], Event]]
"""(seconds to wait before, factory taking the session time)."""


class ScriptedController:
    """Implements :class:`app.session.session.Controller`; ``start`` plays ``script`` on a thread."""

    def __init__(self, script: Iterable[Step] = (), *, speed: float = 1.0) -> None:
        self.bus = EventBus()
        self.clock = SessionClock()
        self.calls: list[str] = []
        self._script = list(script)
        self._speed = speed
        self.low_latency = LowLatency(True)
        self._active = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.done = threading.Event()

    @property
    def active(self) -> bool:
        return self._active

    def start(self) -> None:
        self.calls.append("start")
        self._active = True
        if not self.clock.started:
            self.clock.start()
        if self._thread is None and self._script:
            self._thread = threading.Thread(target=self._play, name="fake-pipeline", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self.calls.append("stop")
        self._active = False

    def shutdown(self) -> None:
        self.calls.append("shutdown")
        self._active = False
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def answer_now(self) -> None:
        self.calls.append("answer_now")

    def cancel_answer(self) -> None:
        self.calls.append("cancel_answer")

    def retract_answer(self) -> None:
        self.calls.append("retract_answer")

    def regenerate(self) -> None:
        self.calls.append("regenerate")

    def set_low_latency(self, on: bool) -> None:
        self.calls.append(f"set_low_latency:{on}")
        self.low_latency.set(on)

    def ask_written(self, text: str, images: Sequence[bytes] = (), *, captures: int = 1) -> None:
        self.calls.append(f"ask_written:{captures}:{text}")

    def _play(self) -> None:
        for delay, make in self._script:
            if self._stop.wait(delay / self._speed):
                return
            self.bus.emit(make(self.clock.now()))
        self.done.set()


def interview_script(turn: int = 1) -> list[Step]:
    """A realistic turn: speech with growing partials, a speculative request that hits,
    an endpoint, a bullet-point answer streamed token by token, the candidate's reply (a
    "You" line from their microphone), then the interviewer's follow-up still being spoken
    (a live partial with its unstable tail)."""
    question = "Can you tell me about a time you had to debug a production outage under pressure?"
    words = question.split()
    steps: list[Step] = [(0.05, lambda t: VadEvent(t=t, speech=True))]
    for i in range(3, len(words) + 1, 2):
        text = " ".join(words[:i])
        stable = " ".join(words[: max(0, i - 3)])
        steps.append((0.12, _partial(turn, text, stable)))
        steps.append((0.0, lambda t: LevelEvent(t=t, dbfs=-18.0)))
    steps += [
        (0.05, lambda t: PartialEvent(t=t, turn=turn, text=question,
                                      stable=question, audio_end=t)),
        (0.02, lambda t: VadEvent(t=t, speech=False)),
        (0.0, lambda t: LevelEvent(t=t, dbfs=-55.0)),
        (0.25, lambda t: SpeculateEvent(t=t, turn=turn, text=question,
                                        reason="question")),
        (0.005, lambda t: RequestEvent(t=t, turn=turn, request=1, kind="speculative",
                                       text=question)),
        (0.05, lambda t: EndpointEvent(t=t, turn=turn, reason="question",
                                       silence=0.30)),
        (0.01, lambda t: FinalEvent(t=t, turn=turn, text=question, audio_end=t,
                                    reused=True)),
        (0.01, lambda t: SpeculationEvent(t=t, turn=turn, request=1, outcome="hit",
                                          similarity=1.0)),
        (0.19, lambda t: FirstTokenEvent(t=t, turn=turn, request=1, ttft=0.24)),
    ]
    answer = (
        "**Situation:** our checkout API started timing out during a Black Friday sale.\n"
        "- **Triage first:** I paged the on-call DB engineer and rolled back the last deploy "
        "within 10 minutes.\n"
        "- **Find the cause:** traces showed a new query doing a full table scan on `orders`.\n"
        "- **Fix:** added the missing index, then reran the load test before re-deploying.\n"
        "- **Result:** error rate back under 0.1 %; I wrote the post-mortem and we added a "
        "query-plan check to CI.\n"
    )
    for token in _tokens(answer):
        steps.append((0.018, _token(turn, token)))
    steps += [
        (0.01, lambda t: AnswerDoneEvent(
            t=t, turn=turn, request=1, text=answer,
            usage=Usage(prompt_tokens=1260, completion_tokens=112, cached_tokens=1024),
            cost=0.000218)),
        (0.0, lambda t: TurnStatsEvent(
            t=t, turn=turn, requests=1, speculative_requests=1, hits=1, misses=0,
            prompt_tokens=1260, completion_tokens=112, wasted_prompt_tokens=0,
            wasted_completion_tokens=0, cost=0.000218, wasted_cost=0.0)),
    ]
    said = "Sure. Last year our checkout API went down during a Black Friday sale."
    steps += [  # the candidate answers (their microphone): a "You" line, never a question
        (0.3, lambda t: LevelEvent(t=t, dbfs=-20.0, speaker="candidate")),
        (0.9, lambda t: FinalEvent(t=t, turn=turn + 1, text=said, audio_end=t, speaker="candidate")),
        (0.0, lambda t: LevelEvent(t=t, dbfs=-60.0, speaker="candidate")),
    ]
    follow_up = "And how did you make sure it would not happen again"
    words = follow_up.split()
    steps.append((0.6, lambda t: VadEvent(t=t, speech=True)))
    for i in range(2, len(words) + 1, 2):
        steps.append((0.15, _partial(turn + 2, " ".join(words[:i]),
                                     " ".join(words[: max(0, i - 4)]))))
        steps.append((0.0, lambda t: LevelEvent(t=t, dbfs=-16.0)))
    return steps


def _partial(turn: int, text: str, stable: str) -> Callable[[float], Event]:
    return lambda t: PartialEvent(t=t, turn=turn, text=text, stable=stable, audio_end=t)


def _token(turn: int, text: str) -> Callable[[float], Event]:
    return lambda t: TokenEvent(t=t, turn=turn, request=1, text=text)


def _tokens(text: str) -> list[str]:
    """Split roughly like a BPE tokenizer: words with their leading space, newlines apart."""
    out: list[str] = []
    word = ""
    for ch in text:
        if ch == "\n" or (ch == " " and word.strip()):
            out.append(word)
            word = ch if ch == " " else ""
            if ch == "\n":
                out.append("\n")
            continue
        word += ch
    if word:
        out.append(word)
    return [t for t in out if t]


def main() -> int:
    from app.core.config import Settings
    from app.ui.app import run_window

    controller = ScriptedController(interview_script())
    return run_window(controller, Settings())


if __name__ == "__main__":
    raise SystemExit(main())
