"""Check: listen to the chosen input for a moment — a silent loopback is the #1 "it does nothing"."""

from __future__ import annotations

import math
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.frontends.checks import CheckResult
from app.frontends.doctor import audio_devices
from app.frontends.doctor.check import LocalCheck, Run

NAME = "input level"
SILENT_DBFS = -60.0
"""Loudest frame below this over the whole listening window: nothing useful is coming in."""


def level_stats(peaks_dbfs: Sequence[float], zero_frames: int) -> dict[str, Any]:
    frames = len(peaks_dbfs)
    return {
        "frames": frames,
        "peak_dbfs": round(max(peaks_dbfs), 1) if frames else None,
        "median_dbfs": round(statistics.median(peaks_dbfs), 1) if frames else None,
        "digital_silence_share": round(zero_frames / frames, 3) if frames else None,
    }


def _silent_microphone_fix(*, exact_zeros: bool, platform: str = sys.platform) -> str:
    """A microphone of exact zeros on macOS is a permission the app lacks, not a mute."""
    if exact_zeros and platform == "darwin":
        from app.audio.permission import PRIVACY_PATH

        return (f"macOS has not given this app permission to use the microphone: allow Interview "
                f"Copilot (or the terminal you started it from) in {PRIVACY_PATH}, then quit and "
                f"reopen it")
    return ("unmute the microphone, raise its input gain, or pick another input with --device "
            "(see --list-devices)")


def check_input_level(device: str | None, seconds: float = 2.0, *, loopback: bool = False) -> CheckResult:
    """Listen to the chosen input for a moment: a silent loopback is the #1 "it does nothing"."""
    from app.audio import AudioError, AudioFrame, open_source
    from app.core.clock import SessionClock

    name = NAME
    clock = SessionClock()
    spec: str | None = "loopback" if loopback and device is None else device
    peaks: list[float] = []
    zero = 0
    errors: list[str] = []
    lock = threading.Lock()

    def on_frame(frame: AudioFrame) -> None:
        nonlocal zero
        samples = frame.samples.astype(np.float32)
        peak = float(np.max(np.abs(samples))) / 32768.0 if len(samples) else 0.0
        with lock:
            peaks.append(20 * math.log10(peak) if peak > 0 else -120.0)
            zero += peak == 0.0

    try:
        source = open_source(spec, clock)
    except AudioError as exc:
        return CheckResult(name, "fail", str(exc), "list inputs with --list-devices and pick one with "
                           "--device NAME or INDEX")
    clock.start()
    try:
        source.start(on_frame, errors.append)
        time.sleep(seconds)
    finally:
        stopper = threading.Thread(target=source.stop, daemon=True)
        stopper.start()
        stopper.join(3.0)
    with lock:
        stats = level_stats(peaks, zero)
    stats["device"] = source.name
    if not peaks:
        why = errors[0] if errors else "no audio arrived"
        return CheckResult(name, "fail", f"{source.name}: {why} in {seconds:g} s", "check the device is not "
                           "used exclusively by another app, then pick another with --device", stats)
    peak = stats["peak_dbfs"]
    is_loopback = loopback or any(h in source.name.lower() for h in ("monitor", "loopback", "blackhole"))
    if stats["digital_silence_share"] == 1.0 or peak < SILENT_DBFS:
        what = "digital silence (all samples zero)" if stats["digital_silence_share"] == 1.0 else \
            f"silent (loudest {peak:.0f} dBFS)"
        fix = ("play something with speech (a video) while doctor listens; make sure the call app "
               "plays to the output whose monitor/loopback you capture") if is_loopback else \
            _silent_microphone_fix(exact_zeros=stats["digital_silence_share"] == 1.0)
        return CheckResult(name, "warn", f"{source.name}: {what} over {seconds:g} s", fix, stats)
    return CheckResult(name, "pass", f"{source.name}: loudest {peak:.0f} dBFS, median "
                       f"{stats['median_dbfs']:.0f} dBFS over {seconds:g} s", data=stats)


def _from_run(run: Run) -> CheckResult:
    """Listen only when there is something to listen to: an input was listed, or one named."""
    devices = run.result(audio_devices.NAME)
    if not (run.opts.device or (devices is not None and devices.status == "pass")):
        return CheckResult(NAME, "skip", "skipped: no input device to listen to")
    return check_input_level(run.opts.device or run.settings.audio.device, run.opts.listen_s,
                             loopback=run.settings.audio.source == "loopback")


CHECK = LocalCheck(NAME, "audio", _from_run)
