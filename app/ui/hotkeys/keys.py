"""What a hotkey is, whatever the OS: parsing the user's text and showing it back.

Kept apart from the OS back-ends so the settings dialog can validate a combination
without loading any native API; each back-end translates a :class:`Hotkey` into its own
key codes (``windows.to_windows``, ``macos.to_carbon``, ``x11.to_pynput``), through
:func:`key_code`, which refuses a key its table lacks with :class:`UnmappableKey`.

A combination can parse and still be a bad global hotkey: :func:`types_characters` says
when it is a key that types a character in some keyboard layout (Windows sends AltGr as
Ctrl+Alt), so the global registration would take that character from every application.
"""

from __future__ import annotations

import string
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from PySide6.QtGui import QKeySequence

IS_MAC = sys.platform == "darwin"


class HotkeyError(ValueError):
    """A hotkey string that cannot be parsed; ``str()`` says what is wrong."""


class UnmappableKey(HotkeyError):
    """A key the parser accepts but an OS back-end has no key code for (F21 on macOS)."""


_MODIFIERS: dict[str, str] = {
    "ctrl": "ctrl", "control": "ctrl", "ctl": "ctrl", "⌃": "ctrl", "^": "ctrl",
    "alt": "alt", "option": "alt", "opt": "alt", "⌥": "alt",
    "shift": "shift", "⇧": "shift",
    "cmd": "meta", "command": "meta", "meta": "meta", "super": "meta", "win": "meta",
    "windows": "meta", "⌘": "meta",
}
_NAMED: dict[str, str] = {
    "space": "space", "spc": "space", "tab": "tab", "enter": "enter", "return": "enter",
    "esc": "escape", "escape": "escape", "backspace": "backspace", "delete": "delete",
    "del": "delete", "insert": "insert", "ins": "insert", "home": "home", "end": "end",
    "pageup": "pageup", "pgup": "pageup", "page_up": "pageup", "pagedown": "pagedown",
    "pgdn": "pagedown", "page_down": "pagedown", "up": "up", "down": "down", "left": "left",
    "right": "right", "comma": ",", "period": ".", "dot": ".", "slash": "/",
    "semicolon": ";", "quote": "'", "apostrophe": "'", "backslash": "\\", "minus": "-",
    "equal": "=", "equals": "=", "grave": "`", "backtick": "`", "bracketleft": "[",
    "bracketright": "]", "plus": "=",
}
_PUNCT = set(",./;'[]\\-=`")
KEYS: frozenset[str] = frozenset([*string.ascii_lowercase, *string.digits, *_PUNCT,
                                  *(f"f{i}" for i in range(1, 25)), *_NAMED.values()])
"""Every key name :func:`parse_hotkey` can return: what each back-end must map or refuse."""


@dataclass(frozen=True)
class Hotkey:
    """A parsed combination.  ``ctrl`` is the Control key on every OS (⌃ on macOS);
    ``meta`` is Cmd on macOS and the Windows/Super key elsewhere."""

    key: str
    """Lower-case: a letter, a digit, punctuation, ``f1``…``f24`` or a name from _NAMED."""
    ctrl: bool = False
    alt: bool = False
    shift: bool = False
    meta: bool = False

    def __str__(self) -> str:
        return self.display()

    def canonical(self) -> str:
        mods = [m for m, on in (("ctrl", self.ctrl), ("alt", self.alt), ("shift", self.shift),
                                ("meta", self.meta)) if on]
        return "+".join([*mods, self.key])

    def display(self, mac: bool = IS_MAC) -> str:
        key = self.key.upper() if len(self.key) == 1 or self.key.startswith("f") else (
            self.key.capitalize())
        if mac:
            syms = "".join(s for s, on in (("⌃", self.ctrl), ("⌥", self.alt),
                                            ("⇧", self.shift), ("⌘", self.meta)) if on)
            return syms + key
        mods = [m for m, on in (("Ctrl", self.ctrl), ("Alt", self.alt), ("Shift", self.shift),
                                ("Meta", self.meta)) if on]
        return "+".join([*mods, key])

    def to_qt(self) -> QKeySequence:
        """For QShortcut; on macOS Qt's "Ctrl" is Cmd, so the physical keys are swapped."""
        parts: list[str] = []
        ctrl_name, meta_name = ("Meta", "Ctrl") if IS_MAC else ("Ctrl", "Meta")
        if self.ctrl:
            parts.append(ctrl_name)
        if self.alt:
            parts.append("Alt")
        if self.shift:
            parts.append("Shift")
        if self.meta:
            parts.append(meta_name)
        qt_names = {"pageup": "PgUp", "pagedown": "PgDown", "delete": "Del", "insert": "Ins",
                    "escape": "Esc", "enter": "Return"}
        key = qt_names.get(self.key, self.key.upper() if len(self.key) <= 3 else
                           self.key.capitalize())
        return QKeySequence("+".join([*parts, key]))


def parse_hotkey(text: str) -> Hotkey:
    """Parse "ctrl+alt+l", "Ctrl+Shift+F5", "⌃⌥L", "cmd + option + space"…

    At least one of ctrl/alt/meta is required (except for F-keys): a global hotkey on a
    bare letter would eat that letter in every other application.
    """
    raw = (text or "").strip()
    if not raw:
        raise HotkeyError("the hotkey is empty")
    # macOS symbol prefixes ("⌃⌥L") become "+"-separated tokens
    for sym in "⌃⌥⇧⌘":
        raw = raw.replace(sym, f"{sym}+")
    tokens = [t.strip().lower() for t in raw.replace(" + ", "+").split("+")]
    if raw.endswith("++"):  # "ctrl++" means the plus key
        tokens = [*tokens[:-2], "plus"]
    tokens = [t for t in tokens if t]
    if not tokens:
        raise HotkeyError(f"{text!r} has no key")
    mods: set[str] = set()
    key: str | None = None
    for token in tokens:
        if token in _MODIFIERS:
            mod = _MODIFIERS[token]
            if mod in mods:
                raise HotkeyError(f"{text!r} names {mod} twice")
            mods.add(mod)
            continue
        name = _key_name(token)
        if name is None:
            raise HotkeyError(f"{text!r}: unknown key {token!r}")
        if key is not None:
            raise HotkeyError(f"{text!r} has two keys ({key!r} and {name!r}); use one key "
                              "with modifiers")
        key = name
    if key is None:
        raise HotkeyError(f"{text!r} has only modifiers; add a key, e.g. {text.strip()}+l")
    is_fkey = key.startswith("f") and key[1:].isdigit()
    if not (mods & {"ctrl", "alt", "meta"}) and not is_fkey:
        raise HotkeyError(f"{text!r} needs ctrl, alt or cmd: a bare key would be taken from "
                          "every other application")
    return Hotkey(key=key, ctrl="ctrl" in mods, alt="alt" in mods, shift="shift" in mods,
                  meta="meta" in mods)


def _key_name(token: str) -> str | None:
    if len(token) == 1 and ((token.isascii() and token.isalnum()) or token in _PUNCT):
        return token
    if token[0] == "f" and token[1:].isdigit() and 1 <= int(token[1:]) <= 24:
        return token
    return _NAMED.get(token)


def key_code(table: Mapping[str, int], hotkey: Hotkey, api: str) -> int:
    """The back-end's code for the hotkey's key; :class:`UnmappableKey` naming the key and
    the API (``api``) when its table has none, instead of a KeyError that would escape."""
    try:
        return table[hotkey.key]
    except KeyError:
        name = Hotkey(hotkey.key).display(mac=False)
        raise UnmappableKey(f"{api} has no key code for {name}") from None


def types_characters(hotkey: Hotkey, platform: str = sys.platform) -> str | None:
    """Why this combination types a character in some keyboard layout, or None.

    Windows: AltGr arrives as Ctrl+Alt, so Ctrl+Alt(+Shift)+<a key that types> is an AltGr
    character in many layouts (Polish ą ł, German @ €, French €); RegisterHotKey would
    take it from every application.  Shift does not help (AltGr+Shift+A is Ą); Win does.
    macOS: Option (with or without Shift) types characters, Control or Command with it
    does not.  Linux/X11: AltGr is its own key (ISO_Level3_Shift), never Ctrl+Alt, and
    pynput observes keys without taking them, so nothing there is lost.
    """
    if hotkey.meta or not (len(hotkey.key) == 1 or hotkey.key == "space"):
        return None
    shifted = "Shift+" if hotkey.shift else ""
    key = Hotkey(hotkey.key).display(mac=False)
    if platform == "win32" and hotkey.ctrl and hotkey.alt:
        return (f"Windows sends AltGr+{shifted}{key} as {hotkey.display(mac=False)}, which types "
                "a character in many keyboard layouts (AltGr+A is ą in Polish): as a global "
                "hotkey it would take that character from every application")
    if platform == "darwin" and hotkey.alt and not hotkey.ctrl:
        return (f"Option+{shifted}{key} types a character on macOS (Option+A is å): as a global "
                "hotkey it would take that character from every application")
    return None
