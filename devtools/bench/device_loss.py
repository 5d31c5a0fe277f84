"""How soon a headless run ends after its audio device dies, on a machine kept busy.

One run: a private PulseAudio daemon, ``busy`` processes spinning on the cores, the app
listening headless to the daemon's monitor while speech plays into it; once the session
log shows the voice was heard, the daemon is killed (like a crash or an unplugged
device) and the clock runs until the app has exited.  The product's promise: exit 1, the
message naming the device, the session saved, within 5 s, every time.

    python -m devtools.bench.device_loss --runs 20 --busy 4

The test suite runs the same :func:`lose_device` once under load (tests/session/test_session.py);
this counts the promise over many runs and reports the median and p95.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from app.observing.percentile import median, p95
from devtools.bench.synth import speak, write_wav
from devtools.load import busy_processes
from devtools.pulse import PulseDaemon

DEVICE = "pulse:vsink.monitor"
PROMISE_S = 5.0
"""The issue's bound: a run whose device died is over within 5 s."""
QUESTION = "Tell me about a time you disagreed with your manager, and what you did about it."


@dataclass(frozen=True)
class Loss:
    seconds: float
    """From the daemon's death to the app's exit."""
    code: int
    stderr: str
    session_log: str

    def missing(self) -> list[str]:
        """What the promise needs that this run lacked (empty: all of it)."""
        checks = {"exit 1": self.code == 1, "the device named": DEVICE in self.stderr,
                  "session saved": "session saved" in self.stderr,
                  "no traceback": "Traceback" not in self.stderr,
                  "failed in the session log": '"failed"' in self.session_log}
        return [what for what, ok in checks.items() if not ok]


def lose_device(folder: Path, *, give_up_s: float = 60.0) -> Loss:
    """One run in ``folder`` (the daemon's runtime and the app's home); see the module."""
    daemon = PulseDaemon(folder)
    daemon.start()
    try:
        speech = folder / "question.wav"
        write_wav(speech, speak(QUESTION, "espeak:en-us"))
        app = subprocess.Popen(
            [sys.executable, "-m", "app", "listen", "--headless", "--device", DEVICE,
             "--candidate-device", "off", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "x"],
            env=_app_env(folder, daemon), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _wait_for(folder / "data", '"listening"', give_up_s)
            player = subprocess.Popen(["paplay", "--device=vsink", str(speech)], env=daemon.env)
            log = _wait_for(folder / "data", '"vad"', give_up_s)
            daemon.kill()
            killed = time.monotonic()
            _, err = app.communicate(timeout=give_up_s)
            seconds = time.monotonic() - killed
            player.kill()
        finally:
            app.kill()
        return Loss(seconds, app.returncode, err, log.read_text(encoding="utf-8"))
    finally:
        daemon.kill()


def _app_env(home: Path, daemon: PulseDaemon) -> dict[str, str]:
    ours = ("OPENAI_", "COPILOT_", "INTERVIEW_COPILOT_", "PULSE_", "XDG_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    env.update({k: v for k, v in daemon.env.items() if k.startswith(("XDG_RUNTIME", "PULSE"))})
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"),
               PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    return env


def _wait_for(data: Path, text: str, give_up_s: float) -> Path:
    """The session log, once it holds ``text`` (the session listening, a voice heard)."""
    deadline = time.monotonic() + give_up_s
    while time.monotonic() < deadline:
        logs = list(data.rglob("session-*.jsonl"))
        if logs and text in logs[0].read_text(encoding="utf-8"):
            return logs[0]
        time.sleep(0.05)
    raise TimeoutError(f"the session log never showed {text} within {give_up_s:g} s")


def _tail(stderr: str, lines: int = 12) -> str:
    """The end of a run's stderr, indented: what a crash or a slow exit said last."""
    return "\n".join(f"        {line}" for line in stderr.strip().splitlines()[-lines:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.bench.device_loss", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--busy", type=int, default=4, help="busy processes on the cores meanwhile")
    args = parser.parse_args(argv)
    times: list[float] = []
    codes: dict[int, int] = {}
    kept = 0
    with busy_processes(args.busy):
        for run in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="device-loss-") as tmp:
                loss = lose_device(Path(tmp))
            missing = loss.missing()
            ok = not missing
            kept += ok and loss.seconds <= PROMISE_S
            times.append(loss.seconds)
            codes[loss.code] = codes.get(loss.code, 0) + 1
            print(f"run {run + 1:>2}: exit {loss.code} after {loss.seconds:.2f} s"
                  f"{'' if ok else '  (' + ', '.join(missing) + ')'}", flush=True)
            if not ok or loss.seconds > PROMISE_S:
                print(_tail(loss.stderr), flush=True)
    print(f"\n{kept} of {args.runs} runs ended within {PROMISE_S:g} s with exit 1, the message and "
          f"the session saved ({args.busy} busy processes on {os.cpu_count()} cores); "
          f"median {median(times) or 0:.2f} s, p95 {p95(times) or 0:.2f} s, max {max(times):.2f} s; "
          f"exit codes {dict(sorted(codes.items()))}")
    return 0 if kept == args.runs else 1


if __name__ == "__main__":
    raise SystemExit(main())
