"""A pytest plugin that marks the tests needing Linux-only services ``linux_services``.

The Windows and macOS CI jobs run ``pytest -p tests.platform_marks -m "not linux_services"``:
everything except what needs a service only tests/run.sh sets up on Debian/Ubuntu —
espeak-ng speech (any module that imports :func:`tests.speech.synth` and friends, or the
``speech`` fixture), a private PulseAudio (``pulse``), nginx (the relay test), flite (the
held-out corpus).  The rule is by what a test uses, so a new test that synthesizes speech
is marked without anyone remembering to; a need it misses shows up as a loud failure on
the first Windows/macOS run, never as a silent skip.
"""

from __future__ import annotations

import pytest

MARK = "linux_services"
SPEECH_HELPERS = ("synth", "trimmed", "concat")
"""Names from tests.speech that run espeak-ng (directly or on a clip it made)."""
MODULES = {
    "tests.llm.test_relay": "nginx",
    "tests.devtools.test_bench_heldout": "flite and espeak-ng voices",
    "tests.audio.test_device": "PulseAudio and espeak-ng",
}
"""Modules whose every test needs a service, with what it is."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARK}: needs espeak-ng, PulseAudio, nginx or flite (set up by tests/run.sh on Linux)")


def needs_linux_services(item: pytest.Item) -> bool:
    module = getattr(item, "module", None)
    if module is None:
        return False
    if module.__name__ in MODULES or item.get_closest_marker("pulse") is not None:
        return True
    if "speech" in getattr(item, "fixturenames", ()):
        return True
    return any(getattr(module, name, None) is not None for name in SPEECH_HELPERS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if needs_linux_services(item):
            item.add_marker(MARK)
