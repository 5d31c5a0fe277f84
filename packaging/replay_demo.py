"""Replay assets/demo.wav headless through a built bundle with its embedded model; check the result.

    python packaging/replay_demo.py [--exe PATH] [--dist DIR] [--speed 2]

The self-test proves each part loads; this proves they work together as shipped: the
bundle's own executable listens to the demo interview (no API key, so answers come from
the embedded llama.cpp server), writes every event as JSON lines, and this script checks
that the interviewer's question was transcribed, that an answer streamed from the local
model, and that nothing failed.  It uses only the standard library, so CI runs it with
any Python beside the bundle.  The environment is stripped (no API keys, a fresh config
folder) so a developer's settings or key cannot make it pass.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "assets" / "demo.wav"
EXPECTED_WORDS = "interested in this role"
"""Words the demo's first question contains (app/frontends/selftest.py checks the same clip)."""


def bundle_executable(dist: Path, platform: str = sys.platform) -> Path:
    """The console executable of the bundle built into ``dist`` on ``platform``."""
    if platform == "darwin":
        return dist / "Interview Copilot.app" / "Contents" / "MacOS" / "interview-copilot"
    if platform == "win32":
        return dist / "interview-copilot" / "interview-copilot-cli.exe"
    return dist / "interview-copilot" / "interview-copilot"


def clean_env(config_dir: Path) -> dict[str, str]:
    """Only what a user's double-click would have: no keys, no endpoint, no Python paths."""
    keep = ("PATH", "SYSTEMROOT", "SystemRoot", "TEMP", "TMP", "TMPDIR", "HOME", "USERPROFILE",
            "LOCALAPPDATA", "APPDATA", "LANG", "LC_ALL")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(QT_QPA_PLATFORM="offscreen", INTERVIEW_COPILOT_CONFIG_DIR=str(config_dir),
               XDG_DATA_HOME=str(config_dir.parent / "data"),  # Linux: the session log stays in tmp
               PYTHONIOENCODING="utf-8")
    return env


def read_events(lines: Iterable[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines if line.strip()]


def _words(text: str) -> str:
    return " ".join("".join(c if c.isalnum() or c == "'" else " " for c in text.lower()).split())


def verdict(events: list[dict[str, Any]]) -> list[str]:
    """What went wrong in a replay's events ([] when the demo worked end to end)."""
    problems: list[str] = []
    finals = [e for e in events
              if e.get("event") == "final" and e.get("speaker", "interviewer") == "interviewer"]
    if not finals:
        problems.append("no final transcript of the interviewer")
    elif not any(_words(EXPECTED_WORDS) in _words(e.get("text", "")) for e in finals):
        said = " | ".join(e.get("text", "") for e in finals)
        problems.append(f"no final contains {EXPECTED_WORDS!r}: {said}")
    answers = [e for e in events if e.get("event") == "answer_done"]
    good = [e for e in answers if e.get("text", "").strip() and not e.get("error")]
    if not good:
        problems.append("no answer streamed from the embedded model" +
                        (f" (errors: {'; '.join(str(e.get('error')) for e in answers)})" if answers else ""))
    llm = [str(e.get("message", "")) for e in events
           if e.get("event") == "status" and e.get("stage") == "llm"]
    if not any("answers from" in m and "127.0.0.1" in m for m in llm):
        problems.append("the answers did not come from the embedded server on loopback: " + " | ".join(llm))
    problems += [f"error ({e.get('stage')}): {e.get('message')}" for e in events if e.get("event") == "error"]
    if not any(e.get("event") == "session" and e.get("state") == "idle" for e in events):
        problems.append("the session never returned to idle")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exe", type=Path, help="the bundle's console executable")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="where the bundle was built")
    parser.add_argument("--speed", default="2", help="replay speed (2: half the clip's length)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before giving up")
    args = parser.parse_args(argv)
    exe = args.exe or bundle_executable(args.dist)
    if not exe.is_file():
        print(f"error: no bundle executable at {exe}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="ic-replay-") as tmp:
        events_path = Path(tmp) / "events.jsonl"
        cmd = [str(exe), "listen", "--headless", "--audio", str(DEMO), "--speed", args.speed,
               "--events", str(events_path)]
        print("== " + " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, env=clean_env(Path(tmp) / "config"), cwd=tmp, timeout=args.timeout,
                              stdin=subprocess.DEVNULL, check=False)
        events = read_events(events_path.read_text(encoding="utf-8").splitlines()) \
            if events_path.is_file() else []
    problems = verdict(events)
    if proc.returncode != 0:
        problems.insert(0, f"exit code {proc.returncode}")
    counts = {name: sum(e.get("event") == name for e in events)
              for name in ("final", "request", "answer_done")}
    print(f"== {len(events)} events: {counts}")
    for problem in problems:
        print(f"FAIL {problem}", file=sys.stderr)
    if not problems:
        print("== the demo replayed through the bundle: question transcribed, answer streamed locally")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
