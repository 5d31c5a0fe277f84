"""Check: which inputs PortAudio can open."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from app.frontends.checks import CheckResult
from app.frontends.doctor.check import LocalCheck

NAME = "audio devices"


def check_audio_devices(lister: Callable[[], Sequence[Any]] | None = None) -> CheckResult:
    """Which inputs PortAudio can open: none at all is a setup problem, not a bug."""
    try:
        if lister is None:
            from app.audio import list_devices

            lister = list_devices
        devices = list(lister())
    except Exception as exc:  # PortAudio missing or broken: one sentence for the user
        return CheckResult(NAME, "warn", f"cannot list audio devices: {exc}",
                           "install PortAudio (Debian: apt install libportaudio2; macOS: it ships with the "
                           "app) or replay a recording with --audio FILE.wav")
    names = [getattr(d, "name", str(d)) for d in devices]
    data = {"devices": names, "default": next((getattr(d, "name", None) for d in devices
                                                if getattr(d, "is_default", False)), None),
            "loopback_candidates": [getattr(d, "name", "") for d in devices
                                    if getattr(d, "is_loopback_candidate", False)]}
    if not devices:
        return CheckResult(NAME, "warn", "no audio input devices found",
                           "connect a microphone or set up a loopback device (BlackHole on macOS, the "
                           "sink monitor on Linux), list them with --list-devices and pick one with "
                           "--device NAME; or replay a recording with --audio FILE.wav", data)
    detail = f"{len(devices)} input(s); default: {data['default'] or 'none'}"
    if data["loopback_candidates"]:
        detail += f"; loopback: {', '.join(data['loopback_candidates'][:3])}"
    return CheckResult(NAME, "pass", detail, data=data)


CHECK = LocalCheck(NAME, "audio", lambda run: check_audio_devices())
