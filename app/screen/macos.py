"""macOS: the Screen & System Audio Recording permission, asked before the first capture.

Without it macOS hands an app a capture of the wallpaper (or black) and no error, which
users of other copilots report as "it reads nothing".  So the permission is checked first
(``CGPreflightScreenCaptureAccess``, Quartz through pyobjc, imported only here and only on
macOS); when missing, the system's own prompt is asked for once
(``CGRequestScreenCaptureAccess``) and the capture is not attempted: the message names the
setting.  The bundle declares ``NSScreenCaptureUsageDescription`` (packaging/macos/Info.plist).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

FIX = ("grant Screen Recording in System Settings → Privacy & Security → Screen & System Audio "
       "Recording, then quit and reopen Interview Copilot")


def screen_recording_problem(quartz: ModuleType | Any | None = None) -> str | None:
    """None when captures may be taken; else the sentence to show (the prompt is asked once)."""
    framework: Any = quartz
    if framework is None:
        try:
            import Quartz

            framework = Quartz
        except ImportError:
            return None  # an older pyobjc: the capture's one-colour check still names the fix
    if framework.CGPreflightScreenCaptureAccess():
        return None
    framework.CGRequestScreenCaptureAccess()
    return f"macOS has not allowed Interview Copilot to record the screen: {FIX}"
