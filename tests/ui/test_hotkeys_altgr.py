"""Hotkeys that type characters: AltGr is Ctrl+Alt on Windows, Option types on macOS.

With Ctrl+Alt+A/L/H registered, a Polish user's AltGr+A (ą) and AltGr+L (ł) fired our
hotkeys in every application.  The defaults now type nothing on any OS; a combination
that does is warned about (next to its field in Settings, and as a banner when a settings
file has it), never refused: an old ``settings.toml`` with the old defaults written out
keeps working.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.core.config import HotkeyConfig, Settings, load_settings
from app.ui.hotkeys import ACTIONS, HotkeyManager, parse_hotkey, types_characters
from app.ui.hotkeys.windows import WindowsBackend, to_windows
from app.ui.settings.hotkeys_tab import HotkeysTab
from tests.ui.test_hotkeys_platform import FakeWin32

OLD_DEFAULTS = {"toggle_low_latency": "ctrl+alt+l", "answer_now": "ctrl+alt+a", "show_hide": "ctrl+alt+h"}


@pytest.mark.parametrize("text", ["ctrl+alt+a", "ctrl+alt+l", "Ctrl+Alt+Shift+A", "ctrl+alt+space",
                                  "ctrl+alt+2", "ctrl+alt+[", "ctrl+alt+="])
def test_ctrl_alt_with_a_typing_key_is_altgr_on_windows(text: str) -> None:
    said = types_characters(parse_hotkey(text), "win32")
    assert said is not None and "AltGr" in said


@pytest.mark.parametrize("text", ["ctrl+shift+a", "ctrl+alt+f5", "ctrl+alt+left", "ctrl+alt+win+a",
                                  "alt+shift+a", "ctrl+alt+insert", "f9"])
def test_combinations_altgr_cannot_type_are_accepted_on_windows(text: str) -> None:
    assert types_characters(parse_hotkey(text), "win32") is None


def test_option_types_on_macos_and_control_option_does_not() -> None:
    assert types_characters(parse_hotkey("alt+a"), "darwin") is not None  # å
    assert types_characters(parse_hotkey("alt+shift+a"), "darwin") is not None  # Å
    assert types_characters(parse_hotkey("ctrl+alt+a"), "darwin") is None
    assert types_characters(parse_hotkey("cmd+alt+a"), "darwin") is None


def test_x11_altgr_is_its_own_key() -> None:
    """X11's AltGr is ISO_Level3_Shift, not Ctrl+Alt, and pynput takes no key from anyone."""
    assert types_characters(parse_hotkey("ctrl+alt+a"), "linux") is None


@pytest.mark.parametrize("platform", ["win32", "darwin", "linux"])
def test_the_defaults_type_nothing_and_the_old_ones_did_on_windows(platform: str) -> None:
    for action, text in HotkeyConfig().model_dump().items():
        assert types_characters(parse_hotkey(text), platform) is None, action
    if platform == "win32":
        assert all(types_characters(parse_hotkey(t), platform) for t in OLD_DEFAULTS.values())


def test_the_defaults_keep_their_letters() -> None:
    """A = answer now, L = low latency, H = hide: what users learnt, with Shift for Alt."""
    assert {a: parse_hotkey(t).key for a, t in HotkeyConfig().model_dump().items()} == {
        "toggle_low_latency": "l", "answer_now": "a", "show_hide": "h",
        "capture_region": "y", "capture_again": "g"}


def test_an_old_settings_file_with_the_old_defaults_loads_registers_and_warns(
        tmp_path: Path, qtbot: QtBot) -> None:
    """Written out by an older Settings dialog: the user's choice now, so it keeps working."""
    path = tmp_path / "settings.toml"
    path.write_text("[hotkeys]\n" + "".join(f'{a} = "{t}"\n' for a, t in OLD_DEFAULTS.items()),
                    encoding="utf-8")
    settings, config_problems = load_settings(path)
    assert config_problems == []
    assert settings.hotkeys.model_dump() == {**HotkeyConfig().model_dump(), **OLD_DEFAULTS}

    fake = FakeWin32()
    backend = WindowsBackend(user32=fake.user32, kernel32=fake.kernel32, last_error=fake.last_error)
    widget = QWidget()
    qtbot.addWidget(widget)
    manager = HotkeyManager(widget, backend, platform="win32")
    try:
        problems = manager.apply(settings.hotkeys.model_dump(), HotkeyConfig().model_dump())
        assert manager.global_ok == dict.fromkeys(ACTIONS, True)  # registered as chosen
        assert sorted((m, vk) for m, vk, _ in fake.hotkeys.values()) == sorted(
            (to_windows(parse_hotkey(t))[0] & ~0x4000, to_windows(parse_hotkey(t))[1])
            for t in settings.hotkeys.model_dump().values())
        assert len(problems) == 3
        for action, problem in zip(OLD_DEFAULTS, problems, strict=True):
            assert "AltGr" in problem and f"[hotkeys] {action}" in problem
    finally:
        manager.close()
        backend.close()


def test_the_defaults_apply_on_windows_without_a_word(qtbot: QtBot) -> None:
    fake = FakeWin32()
    backend = WindowsBackend(user32=fake.user32, kernel32=fake.kernel32, last_error=fake.last_error)
    widget = QWidget()
    qtbot.addWidget(widget)
    manager = HotkeyManager(widget, backend, platform="win32")
    defaults = HotkeyConfig().model_dump()
    try:
        assert manager.apply(defaults, defaults) == []
        assert manager.global_ok == dict.fromkeys(ACTIONS, True)
    finally:
        manager.close()
        backend.close()


def test_the_settings_tab_warns_next_to_an_altgr_field_and_still_saves_it(qtbot: QtBot) -> None:
    settings = Settings()
    settings.hotkeys.answer_now = "ctrl+alt+a"
    tab = HotkeysTab(settings, platform="win32")
    qtbot.addWidget(tab)
    tab.show()
    warning = tab.warnings["answer_now"]
    assert warning.isVisible() and "AltGr" in warning.text()
    assert not tab.warnings["toggle_low_latency"].isVisible()
    assert not tab.warnings["show_hide"].isVisible()

    tab.hotkey_edits["show_hide"].setText("Ctrl+Alt+Shift+H")  # Shift does not help: AltGr+Shift
    assert tab.warnings["show_hide"].isVisible() and "AltGr" in tab.warnings["show_hide"].text()
    tab.hotkey_edits["answer_now"].setText("ctrl+shift+a")
    assert not warning.isVisible() and warning.text() == ""

    data = {"hotkeys": {}}
    errors: list[str] = []
    tab.collect(data, errors)
    assert errors == []  # a warning, not a refusal
    assert data["hotkeys"] == {**HotkeyConfig().model_dump(), "show_hide": "ctrl+alt+shift+h"}


def test_the_settings_tab_says_what_does_not_parse_as_the_user_types(qtbot: QtBot) -> None:
    tab = HotkeysTab(Settings(), platform="win32")
    qtbot.addWidget(tab)
    tab.show()
    tab.hotkey_edits["answer_now"].setText("ctrl+alt+nope")
    assert tab.warnings["answer_now"].isVisible()
    assert "unknown key" in tab.warnings["answer_now"].text()


def test_the_settings_tab_on_linux_does_not_warn_about_ctrl_alt(qtbot: QtBot) -> None:
    settings = Settings()
    settings.hotkeys.answer_now = "ctrl+alt+a"
    tab = HotkeysTab(settings, platform="linux")
    qtbot.addWidget(tab)
    tab.show()
    assert not tab.warnings["answer_now"].isVisible()
