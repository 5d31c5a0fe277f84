"""The macOS preflight, with a fake Quartz: no capture is tried without the permission."""

from __future__ import annotations

import plistlib
from pathlib import Path

from app.screen.macos import screen_recording_problem

ROOT = Path(__file__).resolve().parents[2]


class FakeQuartz:
    def __init__(self, allowed: bool) -> None:
        self.allowed = allowed
        self.requests = 0

    def CGPreflightScreenCaptureAccess(self) -> bool:
        return self.allowed

    def CGRequestScreenCaptureAccess(self) -> bool:
        self.requests += 1
        return False


def test_allowed_is_no_problem_and_asks_nothing() -> None:
    quartz = FakeQuartz(allowed=True)
    assert screen_recording_problem(quartz) is None and quartz.requests == 0


def test_missing_permission_asks_the_system_prompt_and_names_the_setting() -> None:
    quartz = FakeQuartz(allowed=False)
    problem = screen_recording_problem(quartz)
    assert quartz.requests == 1
    assert problem and "System Settings → Privacy & Security → Screen & System Audio Recording" in problem


def test_the_bundle_declares_why_it_records_the_screen() -> None:
    plist = plistlib.loads((ROOT / "packaging" / "macos" / "Info.plist").read_bytes())
    assert "screen" in plist["NSScreenCaptureUsageDescription"].lower()
