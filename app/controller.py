"""What a front end (the Qt window, the headless CLI) may ask of a running copilot.

The front end never reaches into stages: it subscribes to ``bus`` for events and calls
these methods, which are safe to call from any thread and return at once.
"""

from __future__ import annotations

from typing import Protocol

from app.clock import SessionClock
from app.events import EventBus


class Controller(Protocol):
    bus: EventBus
    clock: SessionClock
    """Stamp events you emit (e.g. ``painted``) with ``clock.now()``."""

    def start(self) -> None:
        """Start listening (opens the audio source; starts the answer engine if needed)."""

    def stop(self) -> None:
        """Stop listening; answers in flight finish, nothing already produced is lost."""

    def shutdown(self) -> None:
        """Stop everything (audio, ASR, answer engine, local LLM server) before exit."""

    def answer_now(self) -> None:
        """Force the endpoint: treat what was heard so far as the whole question."""

    def cancel_answer(self) -> None:
        """Cancel the answer being streamed (and any speculation) for the current turn."""

    def regenerate(self) -> None:
        """Ask again for the last question, as a new answer block."""

    def set_low_latency(self, on: bool) -> None:
        """Speculation on/off; takes effect from the next speculation opportunity."""

    @property
    def low_latency(self) -> bool: ...

    @property
    def listening(self) -> bool: ...
