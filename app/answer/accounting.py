"""What speculation costs: requests, tokens used and wasted, money, per turn and session.

Speculation trades tokens for latency; the user should see the price.  A cancelled or
missed request counts as wasted: its prompt was paid for and every completion token the
server sent before the cancel too (servers bill what they generated; we count what we
received, a lower bound).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass

from app.core.config import Price
from app.core.events import RequestKind, TurnStatsEvent, Usage


@dataclass(frozen=True, slots=True)
class RequestCost:
    turn: int
    kind: RequestKind
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    wasted: bool

    @staticmethod
    def of(turn: int, kind: RequestKind, estimated_prompt: int, received: int, usage: Usage | None,
           *, wasted: bool) -> RequestCost:
        """From the server's usage when it sent one, else from local counts."""
        if usage is not None and (usage.prompt_tokens or usage.completion_tokens):
            return RequestCost(turn, kind, usage.prompt_tokens, usage.cached_tokens,
                               max(usage.completion_tokens, received), wasted)
        return RequestCost(turn, kind, estimated_prompt, 0, received, wasted)

    def price(self, price: Price | None) -> float:
        if price is None:
            return 0.0
        fresh = self.prompt_tokens - self.cached_tokens
        return (fresh * price.input_per_mtok + self.cached_tokens * price.cached_input_per_mtok
                + self.completion_tokens * price.output_per_mtok) / 1_000_000


@dataclass(slots=True)
class Totals:
    requests: int = 0
    speculative_requests: int = 0
    hits: int = 0
    misses: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wasted_prompt_tokens: int = 0
    wasted_completion_tokens: int = 0
    cost: float = 0.0
    wasted_cost: float = 0.0

    def add(self, item: RequestCost, cost: float) -> None:
        self.requests += 1
        self.speculative_requests += item.kind == "speculative"
        if item.kind == "speculative":
            self.hits += not item.wasted
            self.misses += item.wasted
        self.prompt_tokens += item.prompt_tokens
        self.completion_tokens += item.completion_tokens
        self.cost += cost
        if item.wasted:
            self.wasted_prompt_tokens += item.prompt_tokens
            self.wasted_completion_tokens += item.completion_tokens
            self.wasted_cost += cost


class Ledger:
    """Thread-safe running totals; the UI and the benchmark read ``session``."""

    def __init__(self, price: Price | None) -> None:
        self._price = price
        self._lock = threading.Lock()
        self._turns: dict[int, Totals] = defaultdict(Totals)
        self.session = Totals()

    def add(self, item: RequestCost) -> float:
        cost = item.price(self._price)
        with self._lock:
            self._turns[item.turn].add(item, cost)
            self.session.add(item, cost)
        return cost

    def turn(self, number: int) -> Totals:
        with self._lock:
            return self._turns[number]

    def turn_stats(self, number: int, t: float) -> TurnStatsEvent:
        x = self.turn(number)
        return TurnStatsEvent(
            t=t, turn=number, requests=x.requests, speculative_requests=x.speculative_requests,
            hits=x.hits, misses=x.misses, prompt_tokens=x.prompt_tokens,
            completion_tokens=x.completion_tokens, wasted_prompt_tokens=x.wasted_prompt_tokens,
            wasted_completion_tokens=x.wasted_completion_tokens, cost=round(x.cost, 8),
            wasted_cost=round(x.wasted_cost, 8))
