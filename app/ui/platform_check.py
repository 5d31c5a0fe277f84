"""Can Qt open a window here?  Asked before Qt is imported, because Qt cannot be asked.

When the xcb platform plugin misses a system library, Qt prints "could not load the Qt
platform plugin" and aborts the process: no exception to catch, no chance to fall back.
So on Linux X11 the libraries the plugin needs are opened first with ``ctypes``; the
missing ones are named with the Debian/Ubuntu package that has them, and the caller
runs headless instead.  No Qt import here.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

XCB_LIBRARIES: dict[str, str] = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
}
"""What Qt 6's xcb plugin loads (``ldd libqxcb.so``), with the package that ships each."""


def uses_xcb() -> bool:
    """Will Qt pick its X11 (xcb) plugin?  Wayland, offscreen and other OSes need no probe."""
    if not sys.platform.startswith("linux"):
        return False
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform:
        return platform.startswith("xcb")
    return bool(os.environ.get("DISPLAY")) and not os.environ.get("WAYLAND_DISPLAY")


def missing_packages(load: Callable[[str], object] = ctypes.CDLL) -> list[str]:
    """Debian packages whose libraries Qt's xcb plugin needs but cannot load."""
    missing = []
    for library, package in XCB_LIBRARIES.items():
        try:
            load(library)
        except OSError:
            missing.append(package)
    return missing
