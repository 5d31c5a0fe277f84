"""A private, user-mode PulseAudio daemon for capture tests and the device-loss benchmark.

It runs in a folder of its own (``XDG_RUNTIME_DIR``), so it never touches a desktop's
sound server, and can be killed like a crash (``SIGKILL``: no goodbye to its clients).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path


class PulseDaemon:
    """A user-mode pulseaudio with a decoy sink (the default) and ``vsink``.

    The decoy is the default source, so hearing speech on ``vsink.monitor`` proves that
    PULSE_SOURCE reached the ALSA plugin rather than the default being used.
    """

    def __init__(self, runtime: Path) -> None:
        self.runtime = runtime
        client_conf = runtime / "client.conf"
        client_conf.write_text("autospawn = no\n")  # a killed daemon must stay dead
        self.env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "HOME": str(runtime),
                    "PULSE_CLIENTCONFIG": str(client_conf)}
        for key in ("PULSE_SERVER", "PULSE_SOURCE", "PULSE_SINK"):
            self.env.pop(key, None)

    @property
    def pid_file(self) -> Path:
        return self.runtime / "pulse" / "pid"

    def start(self) -> None:
        subprocess.run(
            ["pulseaudio", "-n", "--daemonize=yes", "--system=false", "--disallow-exit",
             "--exit-idle-time=-1", "--disable-shm=yes", "--log-target=stderr",
             "--load=module-native-protocol-unix", "--load=module-cli-protocol-unix",
             "--load=module-null-sink sink_name=decoy",
             "--load=module-null-sink sink_name=vsink"],
            env=self.env, check=True, timeout=15, capture_output=True,
        )
        self.pactl("set-default-sink", "decoy")
        self.pactl("set-default-source", "decoy.monitor")

    def pactl(self, *args: str) -> str:
        deadline = time.monotonic() + 5
        while True:
            proc = subprocess.run(["pactl", *args], env=self.env, capture_output=True,
                                  text=True, timeout=5)
            if proc.returncode == 0 or time.monotonic() > deadline:
                assert proc.returncode == 0, proc.stderr
                return proc.stdout
            time.sleep(0.1)

    def remove_sink(self, sink: str) -> None:
        """The null sink ``sink`` goes, and the streams recording its monitor with it, as
        when a headset disconnects.  PulseAudio itself would move those streams to the
        default source (not what they asked for: a loss nobody notices); PipeWire ends
        them.  Here they end: ``pacmd`` kills them (pactl cannot)."""
        streams = [line.split("\t")[0] for line in
                   self.pactl("list", "short", "source-outputs").splitlines()
                   if line.split("\t")[1:2] and self._source_name(line.split("\t")[1]) ==
                   f"{sink}.monitor"]
        for line in self.pactl("list", "short", "modules").splitlines():
            if "module-null-sink" in line and f"sink_name={sink}" in line:
                for stream in streams:
                    subprocess.run(["pacmd", "kill-source-output", stream], env=self.env,
                                   check=True, timeout=5, capture_output=True)
                self.pactl("unload-module", line.split("\t")[0])
                return
        raise LookupError(f"no null sink {sink}")

    def add_sink(self, sink: str) -> None:
        """A null sink named ``sink`` (back after :meth:`remove_sink`, or a new one)."""
        self.pactl("load-module", "module-null-sink", f"sink_name={sink}")

    def _source_name(self, index: str) -> str:
        for line in self.pactl("list", "short", "sources").splitlines():
            fields = line.split("\t")
            if fields[0] == index:
                return fields[1]
        return ""

    def kill(self) -> None:
        """SIGKILL, like a crash or an unplugged device: no goodbye to the clients."""
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            pid = int(self.pid_file.read_text().strip())
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid)
        # Stale files would make the next daemon think one is still running.
        for stale in (self.pid_file, self.runtime / "pulse" / "native"):
            stale.unlink(missing_ok=True)

    def play(self, clip: Path, sink: str = "vsink") -> None:
        subprocess.run(["paplay", f"--device={sink}", str(clip)], env=self.env, check=True,
                       timeout=30)


def _wait_gone(pid: int, timeout: float = 5.0) -> None:
    """Gone or a zombie (in containers nobody may reap the daemonized process)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.02)
