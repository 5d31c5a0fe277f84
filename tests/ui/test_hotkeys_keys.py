"""Every key the parser accepts either maps to a code in each back-end or is refused with a
sentence naming it, never a KeyError that escapes ``HotkeyManager.apply`` (which kept the
window from opening on every start, on macOS, for Insert and F21-F24).

The Carbon and user32 back-ends run against the fakes of ``tests/ui/test_hotkeys_platform``
(their key tables and mapping are pure Python); pynput's is in ``tests/ui/test_hotkeys_x11``.
"""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.core.config import HotkeyConfig
from app.ui.hotkeys import ACTIONS, GlobalBackend, Hotkey, HotkeyManager, UnmappableKey, platform_warning
from app.ui.hotkeys.keys import KEYS, parse_hotkey
from app.ui.hotkeys.macos import MacBackend, to_carbon
from app.ui.hotkeys.windows import WindowsBackend, to_windows
from tests.ui.test_hotkeys_platform import FakeCarbon, FakeWin32

MAC_HAS_NO = {"insert", *(f"f{i}" for i in range(21, 25))}
"""Keys no Mac keyboard has, and Events.h has no kVK_ code for."""
DEFAULTS = HotkeyConfig().model_dump()


def combo(key: str) -> Hotkey:
    """The key with every modifier but Shift: never one of the defaults (Ctrl+Shift+<letter>)."""
    return Hotkey(key, ctrl=True, alt=True, meta=True)


def test_the_parser_accepts_every_key_in_keys_and_gives_it_back() -> None:
    for key in KEYS:
        assert parse_hotkey(combo(key).canonical()) == combo(key)


def test_carbon_maps_every_key_but_those_macs_lack_and_names_what_it_refuses() -> None:
    refused: dict[str, str] = {}
    for key in KEYS:
        try:
            code, _mods = to_carbon(combo(key))
        except UnmappableKey as exc:
            refused[key] = str(exc)
        else:
            assert 0 <= code <= 0x7F  # a kVK_ code
    assert set(refused) == MAC_HAS_NO
    assert refused["insert"] == "macOS (Carbon hotkeys) has no key code for Insert"
    assert refused["f21"] == "macOS (Carbon hotkeys) has no key code for F21"


def test_windows_maps_every_key() -> None:
    codes = {key: to_windows(combo(key))[1] for key in KEYS}
    assert all(0x01 <= vk <= 0xFE for vk in codes.values())
    assert len(set(codes.values())) == len(codes)  # no two keys share a virtual key


@pytest.fixture
def widget(qtbot: QtBot) -> QWidget:
    widget = QWidget()
    qtbot.addWidget(widget)
    return widget


def apply_every_key(widget: QWidget, backend: GlobalBackend) -> dict[str, list[str]]:
    """``answer_now`` bound to each key in turn, the others at their defaults; the problems."""
    manager = HotkeyManager(widget, backend)
    problems: dict[str, list[str]] = {}
    for key in sorted(KEYS):
        config = {**DEFAULTS, "answer_now": combo(key).canonical()}
        problems[key] = list(manager.apply(config, DEFAULTS))  # never raises
        assert manager.global_ok["toggle_low_latency"] and manager.global_ok["show_hide"], key
        assert set(manager.shortcuts) == set(ACTIONS)
    manager.close()
    return problems


def test_an_unmapped_key_on_macos_is_refused_by_name_and_the_others_register(
        widget: QWidget) -> None:
    carbon = FakeCarbon()
    problems = apply_every_key(widget, MacBackend(carbon=carbon))
    assert {key for key, said in problems.items() if said} == MAC_HAS_NO
    [said] = problems["f21"]
    assert "F21" in said and "[hotkeys] answer_now" in said and "no key code" in said
    for key in MAC_HAS_NO:
        assert Hotkey(key).display(mac=False) in problems[key][0]
    assert carbon.hotkeys == {}  # closed: nothing left registered


def test_windows_registers_every_key(widget: QWidget) -> None:
    fake = FakeWin32()
    backend = WindowsBackend(user32=fake.user32, kernel32=fake.kernel32, last_error=fake.last_error)
    try:
        problems = apply_every_key(widget, backend)
    finally:
        backend.close()
    assert {key: said for key, said in problems.items() if said} == {}
    assert fake.hotkeys == {}


def test_the_settings_tab_names_a_key_macos_cannot_register() -> None:
    """What the Settings dialog shows as the user types, before the manager refuses it."""
    said = platform_warning(parse_hotkey("ctrl+alt+insert"), "darwin")
    assert said is not None and "Insert" in said
    assert platform_warning(parse_hotkey("ctrl+alt+insert"), "win32") is None
    assert platform_warning(parse_hotkey("ctrl+shift+f21"), "win32") is None


def test_a_refused_key_does_not_stop_a_working_one_from_firing(qtbot: QtBot, widget: QWidget) -> None:
    """After a refusal the registered hotkeys still reach the manager."""
    carbon = FakeCarbon()
    manager = HotkeyManager(widget, MacBackend(carbon=carbon))
    problems = manager.apply({**DEFAULTS, "show_hide": "ctrl+alt+f24"}, DEFAULTS)
    assert len(problems) == 1 and "F24" in problems[0] and "[hotkeys] show_hide" in problems[0]
    assert manager.global_ok == {**dict.fromkeys(ACTIONS, True), "show_hide": False}
    got: list[str] = []
    manager.triggered.connect(got.append)
    assert carbon.press(*to_carbon(parse_hotkey(DEFAULTS["answer_now"]))) == [0]
    qtbot.waitUntil(lambda: bool(got), timeout=30_000)
    assert got == ["answer_now"]
    manager.close()
    assert carbon.hotkeys == {}


def test_one_combination_for_two_actions_is_said_and_the_first_keeps_it(qtbot: QtBot) -> None:
    from PySide6.QtWidgets import QWidget

    from app.core.config import HotkeyConfig
    from app.ui.hotkeys import HotkeyManager
    from tests.ui_fakes import AcceptingBackend

    widget = QWidget()
    qtbot.addWidget(widget)
    manager = HotkeyManager(widget, AcceptingBackend())
    defaults = HotkeyConfig().model_dump()
    problems = manager.apply({**defaults, "capture_region": defaults["answer_now"]}, defaults)
    assert "capture_region" not in manager.bindings and "answer_now" in manager.bindings
    assert any("already Answer now" in p and "[hotkeys] capture_region" in p for p in problems)
