"""The ``speech`` fixture: without espeak-ng a test that synthesizes speech fails on Linux
CI, naming the package to install, and skips only off CI or off Linux.  Each case runs a
real test that asks for the fixture in a child pytest whose PATH has no espeak-ng."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NEEDS_SPEECH = "tests/audio/test_file_source.py::test_speech_at_16khz_is_replayed_sample_exact"
"""A test that asks for the fixture (``usefixtures("speech")``)."""


def run_without_espeak(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(PATH=str(tmp_path), QT_QPA_PLATFORM="offscreen")  # nothing on PATH: no espeak-ng
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", NEEDS_SPEECH, "-rs", "-p", "no:cacheprovider"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)


@pytest.mark.parametrize("ci", ["true", None])
def test_a_missing_speech_synthesiser_fails_on_linux_ci_and_skips_elsewhere(tmp_path: Path,
                                                                          ci: str | None) -> None:
    out = run_without_espeak(tmp_path, ci)
    loud = ci == "true" and sys.platform.startswith("linux")
    assert out.returncode == (1 if loud else 0), out.stdout + out.stderr
    assert ("1 error" if loud else "1 skipped") in out.stdout, out.stdout  # error: in its set-up
    assert "apt-get install espeak-ng" in out.stdout  # the failure, or the skip's reason
