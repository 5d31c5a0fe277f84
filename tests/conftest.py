"""Shared fixtures: the real Whisper model (loaded once) and synthesized speech."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app.asr.decoder import WhisperDecoder
from app.asr.model import load_model
from tests.speech import have_espeak


@pytest.fixture(scope="session")
def whisper_model() -> object:
    return load_model("bundled")


@pytest.fixture(scope="session")
def decoder(whisper_model: object) -> WhisperDecoder:
    return WhisperDecoder(whisper_model)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _need_espeak(request: pytest.FixtureRequest) -> None:
    if "speech" in request.fixturenames and not have_espeak():
        pytest.fail("espeak-ng is missing: the test script installs it (apt-get install espeak-ng)")


@pytest.fixture
def isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Config and data folders of a fresh user, so tests never touch the real ones."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("INTERVIEW_COPILOT_CONFIG_DIR", str(tmp_path / "config" / "interview-copilot"))
    yield tmp_path
