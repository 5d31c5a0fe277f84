"""The X11 global-hotkey back-end (pynput) under a private Xvfb, pressed for real.

A child process runs Qt on the ``xcb`` platform against the Xvfb, lets
:func:`app.ui.hotkeys.default_backend` pick the back-end (pynput on X11) and binds the
three actions through :class:`app.ui.hotkeys.HotkeyManager`, as the window does.  No
window is shown, so nothing has the keyboard focus and the in-window shortcuts cannot
fire: every trigger the child reports came through the global back-end.  ``xdotool key``
then presses keys on the X server as a keyboard would.

Key presses reach the listener in order, so pressing an unbound combination just before a
bound one and seeing only the bound one's trigger shows the unbound one triggered nothing,
without waiting for nothing to happen.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.patience import NEVER_S
from tests.speech import on_linux_ci

ROOT = Path(__file__).resolve().parents[2]
BINDINGS = {"toggle_low_latency": "ctrl+alt+l", "answer_now": "ctrl+alt+j", "show_hide": "ctrl+alt+h"}
UNBOUND = "ctrl+alt+k"
PRESS_EVERY_S = 0.5
"""While the listener starts (pynput gives no sign it is ready), the keys are pressed
again this often: above the manager's DEDUP_S, so no repeat is dropped as a double."""

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="X11 is Linux's (Windows and macOS back-ends: test_hotkeys_platform)")


def need(tool: str, package: str) -> str:
    """The tool's path; on Linux CI a missing one fails (tests/run.sh installs it)."""
    found = shutil.which(tool)
    if found is None:
        message = f"{tool} is missing: tests/run.sh installs it (apt-get install {package})"
        if on_linux_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found


@pytest.fixture
def xvfb() -> Iterator[str]:
    """A private X server with the RECORD extension pynput listens through; its DISPLAY."""
    binary = need("Xvfb", "xvfb")
    need("xdotool", "xdotool")
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([binary, "-displayfd", str(write_end), "-screen", "0", "640x480x24",
                             "-nolisten", "tcp", "+extension", "RECORD"],
                            pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as numbers:
            number = numbers.readline().strip()  # written once the server accepts clients
        if not number:
            pytest.fail(f"Xvfb did not start: {proc.communicate(timeout=NEVER_S)[1].decode()}")
        yield f":{number.decode()}"
    finally:
        proc.terminate()
        try:
            proc.wait(NEVER_S)
        except subprocess.TimeoutExpired:
            proc.kill()


def _child_main() -> None:
    """In the child: bind the actions, report the back-end, then one line per trigger,
    until stdin closes."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QWidget

    from app.core.config import HotkeyConfig
    from app.ui.hotkeys import HotkeyManager

    app = QApplication([])
    owner = QWidget()  # the shortcuts' parent; never shown, so never focused
    manager = HotkeyManager(owner)

    def say(obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    manager.triggered.connect(lambda action: say({"triggered": action}))
    problems = manager.apply(BINDINGS, HotkeyConfig().model_dump())
    backend = manager._backend
    say({"backend": getattr(backend, "name", None), "problems": problems, "global": manager.global_ok})

    closed = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        closed.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    ticker = QTimer()
    ticker.timeout.connect(lambda: app.quit() if closed.is_set() else None)
    ticker.start(50)
    app.exec()
    manager.close()


@dataclass
class Child:
    proc: subprocess.Popen[str]
    lines: queue.Queue[dict[str, Any]] = field(default_factory=queue.Queue)

    def read(self, timeout: float) -> dict[str, Any] | None:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None


@pytest.fixture
def child(xvfb: str) -> Iterator[Child]:
    env = {**os.environ, "DISPLAY": xvfb, "QT_QPA_PLATFORM": "xcb"}
    env.pop("WAYLAND_DISPLAY", None)
    code = "from tests.ui.test_hotkeys_x11 import _child_main; _child_main()"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader = Child(proc)

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            reader.lines.put(json.loads(line))

    threading.Thread(target=pump, daemon=True).start()
    try:
        yield reader
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(NEVER_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def press(display: str, *keys: str) -> None:
    subprocess.run(["xdotool", "key", *keys], env={**os.environ, "DISPLAY": display}, check=True,
                   timeout=NEVER_S)


def first_trigger(child: Child, display: str, *keys: str) -> str:
    """Press ``keys`` (in order) until a trigger arrives; the first one's action."""
    deadline = time.monotonic() + NEVER_S
    while time.monotonic() < deadline:
        press(display, *keys)
        line = child.read(PRESS_EVERY_S)
        if line is not None:
            return str(line["triggered"])
    stderr = child.proc.stderr.read() if child.proc.poll() is not None and child.proc.stderr else ""
    pytest.fail(f"no trigger for {keys} within {NEVER_S:g} s {stderr}")


def test_a_hotkey_pressed_on_x11_triggers_its_action_and_only_its_own(child: Child, xvfb: str) -> None:
    ready = child.read(NEVER_S)
    assert ready is not None, "the child never reported"
    assert ready["backend"] == "pynput" and ready["problems"] == [], ready
    assert set(BINDINGS) <= set(ready["global"]) and all(ready["global"].values()), ready

    # The unbound combination first, then a bound one: only the bound one triggers.
    assert first_trigger(child, xvfb, UNBOUND, BINDINGS["answer_now"]) == "answer_now"
    # The listener is running now: one press each, and each action arrives as itself.
    press(xvfb, UNBOUND, "j", BINDINGS["toggle_low_latency"])  # "j" alone is not Ctrl+Alt+J
    assert child.read(NEVER_S) == {"triggered": "toggle_low_latency"}
    press(xvfb, BINDINGS["show_hide"])
    assert child.read(NEVER_S) == {"triggered": "show_hide"}


def _keys_child_main() -> None:
    """In the child: every key the parser accepts through the pynput back-end; one JSON
    line, key -> None (registered) or the sentence refusing it.  An exception escaping
    ``register`` ends the child with a traceback.

    Each ``register`` restarts pynput's listener (an XRecord context, ~0.5 s), so the
    listener is held back during the loop and started once at the end with every
    accepted combination: pynput's ``GlobalHotKeys`` must take them all."""
    from app.ui.hotkeys.keys import KEYS, Hotkey
    from app.ui.hotkeys.x11 import PynputBackend

    backend = PynputBackend()
    assert backend.unavailable() is None, backend.unavailable()
    start_listener = backend._restart
    backend._restart = lambda: None  # type: ignore[method-assign]
    said: dict[str, str | None] = {}
    for key in sorted(KEYS):
        said[key] = backend.register(key, Hotkey(key, ctrl=True, alt=True), lambda: None)
    said["(listener)"] = start_listener()
    backend.unregister_all()
    sys.stdout.write(json.dumps(said) + "\n")


def test_every_key_the_parser_accepts_registers_on_x11_or_is_refused_by_name(xvfb: str) -> None:
    env = {**os.environ, "DISPLAY": xvfb}
    env.pop("WAYLAND_DISPLAY", None)
    code = "from tests.ui.test_hotkeys_x11 import _keys_child_main; _keys_child_main()"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=NEVER_S)
    assert done.returncode == 0, done.stderr
    said: dict[str, str | None] = json.loads(done.stdout)
    from app.ui.hotkeys.keys import KEYS, Hotkey

    assert said.pop("(listener)") is None  # one listener for every accepted combination
    assert set(said) == KEYS
    refused = {key: why for key, why in said.items() if why is not None}
    for key, why in refused.items():
        assert Hotkey(key).display(mac=False) in why, why
    assert set(refused) <= {f"f{i}" for i in range(21, 25)}  # pynput's X11 keys end at F20
    assert said["a"] is None and said["insert"] is None and said["f20"] is None
