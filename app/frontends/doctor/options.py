"""What one ``doctor`` run is asked: where to listen, how long to wait, what to leave out."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DoctorOptions:
    base_url: str | None = None
    api_key: str | None = None
    model: str | None = None
    device: str | None = None
    listen_s: float = 2.0
    connect_timeout_s: float = 3.0
    timeout_s: float = 10.0
    check_deadline_s: float = 45.0
    skip: frozenset[str] = frozenset()
    """Groups to leave out: ``audio``, ``asr``, ``llm``."""
    local: bool = True
    """With no endpoint configured, start the embedded local LLM to check against."""
