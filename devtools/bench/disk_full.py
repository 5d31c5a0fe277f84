"""How a headless run takes a full disk, on a machine kept busy.

One run: a small tmpfs mounted as the app's data folder with one page (4 KiB) left, the
app replaying four questions headless; the session log fills the disk within its first
lines.  The product's promise: the warning naming the session log and the cause within 5 s
of the file filling the space left (its size polled every 10 ms), exit 1 with "is incomplete", every
whole line written before the fault readable, no traceback.  Mounting needs root.

    sudo python -m devtools.bench.disk_full --runs 20 --busy 4
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.observing.percentile import median, p95
from devtools.bench.synth import speak, write_wav
from devtools.load import busy_processes

PROMISE_S = 5.0
FREE = 4096
QUESTIONS = ("Tell me about a project you are proud of. What was the hardest part of it? "
             "How did you know it had worked? What would you do differently today?")
WARNING = "cannot write the session log any more (No space left on device)"


class CannotMount(RuntimeError):
    """No tmpfs could be mounted here (not root, or no mount namespace)."""


@contextlib.contextmanager
def small_disk(folder: Path, free: int) -> Iterator[Path]:
    """A 1 MiB tmpfs at ``folder`` with ``free`` bytes left (a filler file takes the rest)."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(folder)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        raise CannotMount(mounted.stderr.strip() or f"mount exited {mounted.returncode}")
    try:
        stats = os.statvfs(folder)
        (folder / "filler").write_bytes(bytes(stats.f_bavail * stats.f_frsize - free))
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@dataclass(frozen=True)
class Fill:
    warned_after_s: float | None
    """From the session file filling the space left (polled every 10 ms) to the warning."""
    code: int
    stderr: str
    kept_lines: int
    """Whole lines in the session file, each valid JSON."""

    def missing(self) -> list[str]:
        checks = {"exit 1": self.code == 1, "the warning": WARNING in self.stderr,
                  "is incomplete": "is incomplete" in self.stderr,
                  "no traceback": "Traceback" not in self.stderr, "lines kept": self.kept_lines > 0}
        return [what for what, ok in checks.items() if not ok]


def fill_disk(home: Path, clip: Path) -> Fill:
    with small_disk(home / "data", FREE):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "INTERVIEW_COPILOT_"))}
        env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"),
                   PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
        app = subprocess.Popen([sys.executable, "-m", "app", "listen", "--headless", "--audio", str(clip),
                                "--base-url", "http://127.0.0.1:9/v1", "--api-key", "x"],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        warned: list[float] = []
        lines: list[str] = []

        def read() -> None:
            assert app.stderr is not None
            for line in app.stderr:
                if WARNING in line and not warned:
                    warned.append(time.time())
                lines.append(line)

        full: list[float] = []

        def watch() -> None:
            """The fault: the session file reaching the space left (tmpfs hands out whole
            pages, so the disk says it is full from the file's first byte)."""
            while app.poll() is None and not full:
                saved = next((home / "data").rglob("session-*.jsonl"), None)
                with contextlib.suppress(OSError):
                    if saved is not None and saved.stat().st_size >= FREE:
                        full.append(time.time())
                time.sleep(0.01)

        reader = threading.Thread(target=read, daemon=True)
        watcher = threading.Thread(target=watch, daemon=True)
        reader.start()
        watcher.start()
        code = app.wait(timeout=300)
        reader.join(10)
        watcher.join(10)
        saved = next((home / "data").rglob("session-*.jsonl"), None)
        kept = 0
        if saved is not None:
            *whole, _torn = saved.read_text(encoding="utf-8", errors="replace").split("\n")
            kept = sum(1 for line in whole if json.loads(line))
    after = warned[0] - full[0] if warned and full else None
    return Fill(after, code, "".join(lines), kept)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.bench.disk_full", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--busy", type=int, default=4, help="busy processes on the cores meanwhile")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="disk-full-clip-") as clips:
        clip = Path(clips) / "questions.wav"
        write_wav(clip, speak(QUESTIONS, "espeak:en-us"))
        times: list[float] = []
        kept = 0
        with busy_processes(args.busy):
            for run in range(args.runs):
                with tempfile.TemporaryDirectory(prefix="disk-full-") as tmp:
                    fill = fill_disk(Path(tmp), clip)
                missing = fill.missing()
                after = fill.warned_after_s
                on_time = after is not None and after <= PROMISE_S
                kept += not missing and on_time
                if after is not None:
                    times.append(after)
                warned = "never" if after is None else f"{after:.2f} s after the fault"
                print(f"run {run + 1:>2}: exit {fill.code}, warned {warned}, {fill.kept_lines} line(s) kept"
                      f"{'' if not missing else '  (' + ', '.join(missing) + ')'}", flush=True)
    print(f"\n{kept} of {args.runs} runs warned within {PROMISE_S:g} s, exited 1 and kept the lines before "
          f"the fault ({args.busy} busy processes on {os.cpu_count()} cores); "
          f"warning after median {median(times) or 0:.2f} s, p95 {p95(times) or 0:.2f} s, "
          f"max {max(times, default=0):.2f} s")
    return 0 if kept == args.runs else 1


if __name__ == "__main__":
    raise SystemExit(main())
