"""The macOS and Windows global-hotkey back-ends, driven on Linux through fake OS libraries.

Each fake is a :class:`tests.fake_dll.FakeLibrary`: the back-end declares its ctypes
prototypes on it as on the real library, every call is checked against the real
prototype (argument sizes) and goes through a real ctypes call, and the fake behaves as
the OS documents (Carbon Event Manager; user32 RegisterHotKey / message-only windows).
"""

from __future__ import annotations

import ctypes
import itertools
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from app.ui.hotkeys import parse_hotkey
from app.ui.hotkeys import macos
from app.ui.hotkeys.macos import MacBackend, to_carbon
from tests.fake_dll import CFunction, FakeLibrary, write_at

# --- macOS: a fake Carbon ---------------------------------------------------------------

c_void_p, c_uint32, c_int32, c_ulong = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int32, ctypes.c_ulong
OSStatus = c_int32
OSType = c_uint32
ItemCount = ByteCount = c_ulong  # unsigned long in MacTypes.h


def fourcc(code: str) -> int:
    return int.from_bytes(code.encode("ascii"), "big")


class EventHotKeyID(ctypes.Structure):
    _fields_ = [("signature", OSType), ("id", c_uint32)]


class EventTypeSpec(ctypes.Structure):
    _fields_ = [("eventClass", OSType), ("eventKind", c_uint32)]


EventHandlerProcPtr = ctypes.CFUNCTYPE(OSStatus, c_void_p, c_void_p, c_void_p)
eventParameterNotFoundErr = -9870
eventHotKeyExistsErr = -9878
errAEBufferTooSmall = -1741


@dataclass
class _CarbonEvent:
    """An EventRef: a hot-key press carries its EventHotKeyID as the direct object."""

    hotkey: EventHotKeyID
    cell: ctypes.c_int = field(default_factory=ctypes.c_int)  # gives the event an address


class FakeCarbon(FakeLibrary):
    """Carbon's Event Manager as far as hot keys go (CarbonEvents.h, Events.h)."""

    def __init__(self) -> None:
        self._target = ctypes.c_int()
        self.handlers: list[tuple[Any, list[tuple[int, int]], int | None]] = []
        self.hotkeys: dict[int, tuple[int, int, EventHotKeyID]] = {}
        """EventHotKeyRef -> (key code, modifiers, the id given at registration)."""
        self._refs = itertools.count(0x1000)
        self._events: dict[int, _CarbonEvent] = {}
        self.asked: list[tuple[str, str]] = []
        """(name, type) of every GetEventParameter call, as four-char codes."""
        super().__init__([
            CFunction("GetApplicationEventTarget", c_void_p, [], self._get_target),
            CFunction("InstallEventHandler", OSStatus,
                      [c_void_p, EventHandlerProcPtr, ItemCount, c_void_p, c_void_p, c_void_p],
                      self._install),
            CFunction("RegisterEventHotKey", OSStatus,
                      [c_uint32, c_uint32, EventHotKeyID, c_void_p, c_uint32, c_void_p],
                      self._register),
            CFunction("UnregisterEventHotKey", OSStatus, [c_void_p], self._unregister),
            CFunction("GetEventParameter", OSStatus,
                      [c_void_p, OSType, OSType, c_void_p, ByteCount, c_void_p, c_void_p],
                      self._get_parameter),
        ])

    @property
    def target(self) -> int:
        return ctypes.addressof(self._target)

    def _get_target(self) -> int:
        return self.target

    def _install(self, target: int, handler: Any, count: int, specs: int, user_data: int | None,
                 out_ref: int | None) -> int:
        assert target == self.target, "handler installed on another target"
        kinds = [(s.eventClass, s.eventKind) for s in (EventTypeSpec * count).from_address(specs)]
        self.handlers.append((handler, kinds, user_data))
        write_at(out_ref, c_void_p, 0x2000 + len(self.handlers))
        return 0

    def _register(self, code: int, mods: int, hk_id: EventHotKeyID, target: int, options: int,
                  out_ref: int | None) -> int:
        assert target == self.target
        if any((code, mods) == (c, m) for c, m, _ in self.hotkeys.values()):
            return eventHotKeyExistsErr
        ref = next(self._refs)
        self.hotkeys[ref] = (code, mods, EventHotKeyID(hk_id.signature, hk_id.id))
        write_at(out_ref, c_void_p, ref)
        return 0

    def _unregister(self, ref: int | None) -> int:
        return 0 if self.hotkeys.pop(ref or 0, None) is not None else -50  # paramErr

    def _get_parameter(self, event: int, name: int, kind: int, out_type: int | None,
                       size: int, out_size: int | None, out_data: int | None) -> int:
        self.asked.append((name.to_bytes(4, "big").decode(), kind.to_bytes(4, "big").decode()))
        hotkey = self._events[event].hotkey
        if name != fourcc("----") or kind != fourcc("hkid"):
            return eventParameterNotFoundErr
        if size < ctypes.sizeof(EventHotKeyID) or not out_data:
            return errAEBufferTooSmall
        ctypes.memmove(out_data, ctypes.addressof(hotkey), ctypes.sizeof(EventHotKeyID))
        write_at(out_type, OSType, fourcc("hkid"))
        write_at(out_size, ByteCount, ctypes.sizeof(EventHotKeyID))
        return 0

    def press(self, code: int, mods: int) -> list[int]:
        """The user presses a registered combination: each matching handler runs, as the
        event loop would call it, through its C function pointer; returns their OSStatus."""
        found = [hk for c, m, hk in self.hotkeys.values() if (c, m) == (code, mods)]
        assert found, "nothing registered for this combination"
        event = _CarbonEvent(found[0])
        address = ctypes.addressof(event.cell)
        self._events[address] = event
        try:
            return [EventHandlerProcPtr(ctypes.cast(h, c_void_p).value)(0x3000, address, data)
                    for h, kinds, data in self.handlers if (fourcc("keyb"), 5) in kinds]
        finally:
            del self._events[address]


def test_a_carbon_hot_key_press_reaches_its_callback() -> None:
    carbon = FakeCarbon()
    backend = MacBackend(carbon=carbon)
    assert backend.unavailable() is None
    pressed: list[str] = []
    low_latency, answer_now = parse_hotkey("ctrl+alt+l"), parse_hotkey("cmd+shift+space")
    assert backend.register("toggle_low_latency", low_latency,
                            lambda: pressed.append("low")) is None
    assert backend.register("answer_now", answer_now, lambda: pressed.append("now")) is None

    assert carbon.press(*to_carbon(answer_now)) == [0]  # noErr: handled
    assert carbon.press(*to_carbon(low_latency)) == [0]
    assert pressed == ["now", "low"]
    assert set(carbon.asked) == {("----", "hkid")}  # the direct object, typed as a hot-key id


def test_the_old_parameter_name_never_fired(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake refuses a parameter named 'hkid', as Carbon does (what shipped before)."""
    monkeypatch.setattr(macos, "K_EVENT_PARAM_DIRECT_OBJECT", fourcc("hkid"))
    carbon = FakeCarbon()
    backend = MacBackend(carbon=carbon)
    pressed: list[str] = []
    hotkey = parse_hotkey("ctrl+alt+l")
    assert backend.register("toggle_low_latency", hotkey, lambda: pressed.append("low")) is None
    assert carbon.press(*to_carbon(hotkey)) == [macos.EVENT_NOT_HANDLED_ERR]
    assert pressed == []


def test_carbon_refusals_and_unregistering() -> None:
    carbon = FakeCarbon()
    other_app = MacBackend(carbon=carbon)
    hotkey = parse_hotkey("ctrl+alt+l")
    assert other_app.register("toggle_low_latency", hotkey, lambda: None) is None
    backend = MacBackend(carbon=carbon)
    error = backend.register("toggle_low_latency", hotkey, lambda: None)
    assert error is not None and "already used by another application" in error
    assert backend.register("answer_now", parse_hotkey("ctrl+shift+space"), lambda: None) is None
    assert len(carbon.hotkeys) == 2
    backend.unregister_all()
    other_app.unregister_all()
    assert carbon.hotkeys == {}


def test_a_press_that_is_not_ours_is_passed_on() -> None:
    """Another handler's hot key (another signature) returns eventNotHandledErr."""
    carbon = FakeCarbon()
    backend = MacBackend(carbon=carbon)
    fired: list[int] = []
    assert backend.register("answer_now", parse_hotkey("ctrl+alt+l"), lambda: fired.append(1)) is None
    ref = next(iter(carbon.hotkeys))
    code, mods, hk = carbon.hotkeys[ref]
    carbon.hotkeys[ref] = (code, mods, EventHotKeyID(fourcc("xxxx"), hk.id))
    assert carbon.press(code, mods) == [macos.EVENT_NOT_HANDLED_ERR]
    assert fired == []
