"""`interview-copilot doctor`, the README's first step in Troubleshooting, as a new user runs it:
a fresh install, no API key, no settings, so the checks run against the embedded server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.llm.endpoint import LOCAL_MODEL
from tests.frontends.test_cli_faults import env_for
from tests.llm.test_embedded_server import needs_llama


@pytest.mark.local_llm
@needs_llama
def test_doctor_passes_on_a_fresh_install_with_no_key(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "app", "doctor", "--json", "--skip", "audio,asr"],
                         env=env_for(tmp_path), capture_output=True, text=True, timeout=240)
    report = json.loads(run.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    failed = {name: c["detail"] for name, c in checks.items() if c["status"] == "fail"}
    assert run.returncode == 0 and report["ok"] and not failed, (failed, run.stderr[-2000:])
    assert checks["endpoint"]["status"] == "pass", checks["endpoint"]
    assert LOCAL_MODEL in checks["model"]["detail"]
    assert "Traceback" not in run.stderr
