"""macOS: the Screen & System Audio Recording permission, asked before the first capture.

Without it macOS hands an app a capture of the wallpaper (or black) and no error, which
users of other copilots report as "it reads nothing".  So the permission is checked first
(``CGPreflightScreenCaptureAccess``, Quartz through pyobjc, imported only here and only on
macOS); when missing, the system's own prompt is asked for once
(``CGRequestScreenCaptureAccess``) and the capture is not attempted: the message names the
setting.  The bundle declares ``NSScreenCaptureUsageDescription`` (packaging/macos/Info.plist).
With the permission, each display is taken through ScreenCaptureKit
(:func:`capture_displays`), the system's current capture API, with our own windows left
out of the picture by its content filter: so the window need not be hidden first, and no
wait for it to leave the screen is spent.  Only our own screenshot leaves us out; what
other apps capture (a call's screen share) still shows the window.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

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


SCREENSHOT_TIMEOUT_S = 5.0
"""ScreenCaptureKit answers in ~50 ms a display; five seconds covers a machine waking a
display from sleep, and is short enough to say what went wrong rather than hang the window."""
USER_DECLINED = -3801
"""``SCStreamErrorUserDeclined``: the candidate (or an MDM profile) refused the recording."""


@dataclass(frozen=True, slots=True)
class DisplayShot:
    """One display as ScreenCaptureKit saw it: where it sits, in points, and its pixels."""

    frame: tuple[float, float, float, float]
    """x, y, width, height in the desktop's points (Qt's logical coordinates on macOS)."""
    pixels: npt.NDArray[np.uint8]
    """Height x width x 3 RGB, device pixels."""


class CaptureFailed(RuntimeError):
    """ScreenCaptureKit gave no picture; the message is the sentence to show."""


def capture_displays(sck: ModuleType | Any | None = None, quartz: ModuleType | Any | None = None,
                     timeout_s: float = SCREENSHOT_TIMEOUT_S,
                     leave_out: int | None = None) -> list[DisplayShot]:
    """Every display, now, through ``SCScreenshotManager`` (macOS 14+): Qt's grab goes through
    ``CGDisplayCreateImage``, which macOS 15 obsoletes and answers with the wallpaper.
    ``leave_out``: a process id whose windows the pictures leave out (ours)."""
    if sck is None or quartz is None:
        import Quartz
        import ScreenCaptureKit

        sck, quartz = ScreenCaptureKit, Quartz
    content = _wait(sck.SCShareableContent.getShareableContentWithCompletionHandler_, timeout_s,
                    "the list of displays")
    left_out = _apps_of(content, leave_out)
    shots = []
    for display in content.displays():
        content_filter = (sck.SCContentFilter.alloc()
                          .initWithDisplay_excludingApplications_exceptingWindows_(display, left_out, []))
        scale = float(content_filter.pointPixelScale()) or 1.0
        frame = display.frame()
        config = sck.SCStreamConfiguration.alloc().init()
        config.setWidth_(round(display.width() * scale))
        config.setHeight_(round(display.height() * scale))
        config.setShowsCursor_(False)
        shoot = sck.SCScreenshotManager.captureImageWithFilter_configuration_completionHandler_
        image = _wait(partial(shoot, content_filter, config), timeout_s, "a display's picture")
        where = (float(frame.origin.x), float(frame.origin.y),
                 float(frame.size.width), float(frame.size.height))
        shots.append(DisplayShot(where, rgb_pixels(quartz, image)))
    return shots


def _apps_of(content: Any, pid: int | None) -> list[Any]:
    """The running application ``pid`` is, as the shareable content lists it (none if it is
    not listed: an app with no window yet, which has nothing on the screen to leave out)."""
    if pid is None:
        return []
    return [app for app in content.applications() if int(app.processID()) == pid]


def rgb_pixels(quartz: Any, image: Any) -> npt.NDArray[np.uint8]:
    """A CGImage as RGB: drawn into a bitmap of a layout we chose (RGBX, 8 bits), so no
    reading of the capture's own byte order and alpha flags."""
    width, height = int(quartz.CGImageGetWidth(image)), int(quartz.CGImageGetHeight(image))
    context = quartz.CGBitmapContextCreate(None, width, height, 8, 4 * width,
                                           quartz.CGColorSpaceCreateDeviceRGB(),
                                           quartz.kCGImageAlphaNoneSkipLast)
    quartz.CGContextDrawImage(context, quartz.CGRectMake(0, 0, width, height), image)
    drawn = quartz.CGBitmapContextCreateImage(context)
    stride = int(quartz.CGImageGetBytesPerRow(drawn))
    data = bytes(quartz.CGDataProviderCopyData(quartz.CGImageGetDataProvider(drawn)))
    rows = np.frombuffer(data, np.uint8)[: stride * height].reshape(height, stride)
    return np.ascontiguousarray(rows[:, : 4 * width].reshape(height, width, 4)[:, :, :3])


def _wait(call: Callable[[Callable[[Any, Any], None]], object], timeout_s: float, what: str) -> Any:
    """Run an API that answers through a completion handler (on a queue of its own), and
    wait for the answer; its error, or none in time, becomes a :class:`CaptureFailed`."""
    answered = threading.Event()
    answer: list[Any] = [None, None]

    def done(result: Any, error: Any) -> None:
        answer[:] = [result, error]
        answered.set()

    call(done)
    if not answered.wait(timeout_s):
        raise CaptureFailed(f"macOS did not hand over {what} within {timeout_s:.0f} s; try again")
    result, error = answer
    if error is not None or result is None:
        code = int(error.code()) if error is not None else 0
        if code == USER_DECLINED:
            raise CaptureFailed(f"macOS refused the screen recording: {FIX}")
        detail = str(error.localizedDescription()) if error is not None else "no picture"
        raise CaptureFailed(f"macOS could not capture {what}: {detail}")
    return result
