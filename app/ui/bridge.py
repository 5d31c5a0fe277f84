"""Crossing threads: bus events into the GUI thread, GUI-made events back out to the bus.

Stages emit on their own threads (audio callback, ASR worker, asyncio loop).  The listener
here only emits a Qt signal, which Qt queues to the GUI thread because the bridge lives
there, so a stage never waits on painting.  The other direction matters too: events the
window makes (``painted``) go through a small poster thread, because bus listeners such
as the session log write to disk and the GUI thread must not.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal

from app.core.events import Event, EventBus
from app.ui.qtcompat import protect_singletons


class EventBridge(QObject):
    """Re-emits bus events as ``received`` on the thread this object lives in (the GUI)."""

    received = Signal(object)

    def __init__(self, bus: EventBus | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        protect_singletons()  # before any stage thread starts emitting through us
        self._unsubscribe: Callable[[], None] | None = None
        if bus is not None:
            self.attach(bus)

    def attach(self, bus: EventBus) -> None:
        self.detach()
        self._unsubscribe = bus.subscribe(self._listener)

    def detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def connect_to(self, slot: Callable[[object], None]) -> None:
        # Queued even when emitted from the GUI thread itself: a listener never re-enters
        # the window in the middle of an update it triggered.
        self.received.connect(slot, Qt.ConnectionType.QueuedConnection)

    def _listener(self, event: Event) -> None:
        self.received.emit(event)


class BusPoster:
    """Emits events on a private thread so the GUI thread never runs bus listeners."""

    def __init__(self, bus: EventBus) -> None:
        self._bus = bus
        self._queue: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ui-bus-poster", daemon=True)
        self._thread.start()

    def post(self, event: Event) -> None:
        self._queue.put(event)

    def close(self, wait: float = 0.0) -> None:
        """No more events; those posted are still emitted.  The window closes without
        waiting (the GUI thread never joins); ``wait`` > 0 waits for them that long, for
        a caller about to close the session log once the Qt loop is over."""
        self._queue.put(None)
        if wait > 0:
            self._thread.join(wait)

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            if event is None:
                return
            self._bus.emit(event)
