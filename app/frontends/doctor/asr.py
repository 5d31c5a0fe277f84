"""Check: the user's speech model loads and decodes the demo clip in time (the check self-test runs too)."""

from __future__ import annotations

from pathlib import Path

from app.frontends.checks import CheckResult
from app.frontends.checks import check_asr as _shared_asr_check
from app.frontends.doctor.check import LocalCheck, Run

NAME = "asr"


def check_asr(model_name: str = "bundled", language: str = "en", *, compute_type: str = "int8",
              cpu_threads: int | None = None, audio: Path | None = None) -> CheckResult:
    """Model load time and one decode of the demo clip, with the user's ASR settings: a slow
    CPU shows up here as captions that lag (the check self-test runs too, :mod:`app.frontends.checks`)."""
    return _shared_asr_check(model_name, language, compute_type=compute_type, cpu_threads=cpu_threads,
                             audio=audio, expect=None, announce=True)


def _from_run(run: Run) -> CheckResult:
    asr = run.settings.asr
    return check_asr(asr.model, asr.language, compute_type=asr.compute_type, cpu_threads=asr.cpu_threads)


CHECK = LocalCheck(NAME, "asr", _from_run)
