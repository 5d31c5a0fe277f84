"""The bundle ships a stand-in for PyAV (packaging/stubs/av), not its 100 MB: these tests run
the app's own command line with the real PyAV out of reach and the stand-in served instead,
as in the bundle, so they need no build.

They prove two things the stand-in relies on: recognition never decodes a file with PyAV
(audio reaches faster-whisper as arrays, WAV is read by the app itself), and a recording
only PyAV could read fails with one sentence that says what to do, not a traceback.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STUBS = REPO / "packaging" / "stubs"
SERVED = "served packaging/stubs/av"

# A meta-path finder ahead of every other: `import av` gets the stand-in, whatever is
# installed, so the real PyAV cannot be imported; then the app's command line runs.
RUN_WITH_STUB = f"""
import importlib.util, runpy, sys

stub = sys.argv.pop(1)

class ServeTheStub:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "av":
            return None
        print({SERVED!r}, file=sys.stderr, flush=True)
        return importlib.util.spec_from_file_location(
            "av", stub + "/av/__init__.py", submodule_search_locations=[stub + "/av"])

sys.meta_path.insert(0, ServeTheStub)
sys.argv[0] = "interview-copilot"
runpy.run_module("app", run_name="__main__", alter_sys=True)
"""


def run_app_with_stub(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", RUN_WITH_STUB, str(STUBS), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_transcription_never_touches_pyav() -> None:
    """faster-whisper imports `av` (so the stand-in is served), and every use of the
    stand-in raises: a transcript of the right words means nothing called PyAV."""
    clip = REPO / "tests" / "data" / "rate-limiter.wav"
    out = run_app_with_stub("transcribe", str(clip), "--speed", "4")
    assert out.returncode == 0, out.stderr[-3000:]
    assert SERVED in out.stderr, "faster-whisper no longer imports av: the stand-in may be unneeded"
    assert "PyAV is not shipped" not in out.stdout + out.stderr
    assert "rate limit" in out.stdout.lower(), out.stdout


def test_a_recording_only_pyav_could_read_fails_in_one_sentence(tmp_path: Path) -> None:
    """In the bundle, a replay of an mp3 says PyAV is not shipped and to convert to WAV:
    exit 2 (a problem to fix before starting), one line, no traceback."""
    mp3 = tmp_path / "call.mp3"
    mp3.write_bytes(b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(2048))
    out = run_app_with_stub("transcribe", str(mp3))
    assert out.returncode == 2, out.stdout + out.stderr[-3000:]
    errors = [line for line in out.stderr.splitlines() if line != SERVED]
    assert len(errors) == 1, out.stderr
    assert errors[0].startswith(f"error: {mp3}: not a WAV file") and "PyAV is not shipped" in errors[0]
    assert "convert others to WAV first" in errors[0]
