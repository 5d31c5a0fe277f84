"""Wayland: a screenshot through the desktop's portal, which shows its own picker and asks consent.

A Wayland client can neither read the screen (Qt's grab comes back black) nor place an
overlay where it likes, so the capture asks xdg-desktop-portal:
``org.freedesktop.portal.Screenshot.Screenshot`` with ``interactive`` set, on the session
bus.  The call returns a Request object at once; the desktop's dialog (screen, window or
area) then answers with that Request's ``Response`` signal: 0 and a ``file://`` URI, 1 when
the candidate cancelled, 2 when the desktop ended it.  We subscribe to the Request's path
before calling (the path is known from our bus name and the token we choose), so a fast
answer is never missed.  The picture is what the candidate chose in that dialog: no region
is dragged over it.  The file stays where the portal put it (the desktop's choice).
Decision 0057.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from typing import cast

from PySide6.QtCore import SLOT, QObject, QTimer, QUrl, Slot
from PySide6.QtDBus import QDBusConnection, QDBusMessage, QDBusObjectPath, QDBusPendingCallWatcher
from PySide6.QtGui import QImage

SERVICE = "org.freedesktop.portal.Desktop"
PATH = "/org/freedesktop/portal/desktop"
SCREENSHOT = "org.freedesktop.portal.Screenshot"
REQUEST = "org.freedesktop.portal.Request"
CALL_TIMEOUT_MS = 25_000
"""The call itself returns before the dialog shows; D-Bus's own default (25 s) covers a
portal that the bus starts on demand."""
ANSWER_TIMEOUT_S = 120.0
"""How long the desktop's dialog may stay up: choosing an area takes seconds, so two
minutes without an answer means the dialog is gone, and our window must come back."""

NO_BUS = ("the screen could not be captured: there is no D-Bus session bus, and on Wayland "
          "screenshots go through the desktop's portal on it")
NO_PORTAL = ("the screen could not be captured: this desktop has no screenshot portal. Install "
             "xdg-desktop-portal and your desktop's backend (xdg-desktop-portal-gnome, -kde or -wlr), "
             "then log in again")
CANCELLED = "the screenshot was cancelled in the desktop's dialog: nothing was captured"
ENDED = ("the desktop refused the screenshot: allow screenshots for Interview Copilot in your "
         "desktop's privacy settings, then try again")
NO_ANSWER = "the desktop's screenshot dialog gave no answer within {seconds:.0f} s: nothing was captured"

_MISSING = frozenset(f"org.freedesktop.DBus.Error.{name}" for name in (
    "ServiceUnknown", "NameHasNoOwner", "UnknownMethod", "UnknownInterface", "UnknownObject"))
"""The errors of a bus without a portal, or a portal without the Screenshot interface."""
_RESPONSE_SLOT = cast(bytes, SLOT("_on_response(uint,QVariantMap)"))
"""Qt unmarshals ``ua{sv}`` for a slot declared so (PySide6 cannot read a QDBusArgument's
map itself); the binding takes the str SLOT() makes, its stubs say bytes."""
_tokens = itertools.count(1)

Done = Callable[[QImage], object]
Failed = Callable[[str], object]


def request_path(unique_name: str, token: str) -> str:
    """Where the portal puts the Request of ``token`` (its documented rule: the caller's
    unique name without the colon, dots as underscores)."""
    return f"{PATH}/request/{unique_name.lstrip(':').replace('.', '_')}/{token}"


class PortalScreenshot(QObject):
    """One interactive screenshot at a time; ``done`` gets the picture, ``failed`` one line."""

    def __init__(self, connect: Callable[[], QDBusConnection] = QDBusConnection.sessionBus, *,
                 answer_timeout_s: float = ANSWER_TIMEOUT_S, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._connect = connect
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(round(answer_timeout_s * 1000))
        self._answer_timeout_s = answer_timeout_s
        self._timer.timeout.connect(self._no_answer)
        self._bus: QDBusConnection | None = None
        self._paths: list[str] = []
        self._done: Done | None = None
        self._failed: Failed | None = None
        self._watcher: QDBusPendingCallWatcher | None = None

    @property
    def busy(self) -> bool:
        return self._done is not None

    def take(self, done: Done, failed: Failed) -> None:
        """Ask the desktop for a screenshot; returns at once, one of the callbacks follows."""
        if self.busy:
            return
        bus = self._connect()
        if not bus.isConnected():
            failed(NO_BUS)
            return
        self._bus, self._done, self._failed = bus, done, failed
        token = f"interview_copilot_{os.getpid()}_{next(_tokens)}"
        self._listen(request_path(bus.baseService(), token))
        call = QDBusMessage.createMethodCall(SERVICE, PATH, SCREENSHOT, "Screenshot")
        call.setArguments(["", {"handle_token": token, "interactive": True, "modal": True}])
        self._watcher = QDBusPendingCallWatcher(bus.asyncCall(call, CALL_TIMEOUT_MS), self)
        self._watcher.finished.connect(self._called)
        self._timer.start()

    def _listen(self, path: str) -> None:
        if self._bus is not None and path not in self._paths:
            self._bus.connect(SERVICE, path, REQUEST, "Response", self, _RESPONSE_SLOT)
            self._paths.append(path)

    def _called(self) -> None:
        watcher = self._watcher
        if watcher is None or not self.busy:
            return
        if watcher.isError():
            error = watcher.error()
            self._finish(None, NO_PORTAL if error.name() in _MISSING else
                         f"the screen could not be captured: the desktop's portal said {error.message()}")
            return
        handle = watcher.reply().arguments()[0]
        if isinstance(handle, QDBusObjectPath):
            self._listen(handle.path())  # a portal older than handle_token names its own path

    @Slot("uint", "QVariantMap")
    def _on_response(self, code: int, results: dict[str, object]) -> None:
        if not self.busy:
            return
        if code == 1:
            self._finish(None, CANCELLED)
            return
        uri = results.get("uri")
        if code != 0 or not isinstance(uri, str):
            self._finish(None, ENDED)
            return
        path = QUrl(uri).toLocalFile()
        image = QImage(path)
        if image.isNull():
            self._finish(None, f"the desktop's screenshot could not be read: {path or uri}")
            return
        self._finish(image, None)

    def _no_answer(self) -> None:
        if self.busy:
            self._finish(None, NO_ANSWER.format(seconds=self._answer_timeout_s))

    def _finish(self, image: QImage | None, problem: str | None) -> None:
        done, failed = self._done, self._failed
        self._timer.stop()
        if self._bus is not None:
            for path in self._paths:
                self._bus.disconnect(SERVICE, path, REQUEST, "Response", self, _RESPONSE_SLOT)
        self._paths.clear()
        self._bus = self._done = self._failed = None
        if self._watcher is not None:
            self._watcher.deleteLater()
            self._watcher = None
        if image is not None and done is not None:
            done(image)
        elif failed is not None:
            failed(problem or ENDED)
