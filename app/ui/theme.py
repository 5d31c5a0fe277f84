"""Light and dark palettes that follow the system, and the large-font option.

Fusion plus our own palette looks the same on every OS, which keeps the panes readable
on a shared screen whatever the platform style does; "system" asks Qt for the OS colour
scheme (and is re-applied when it changes).

Chinese text needs a CJK font, and the right one: Qt's own fallback may draw Chinese
with a Japanese face (Han unification: same code points, different glyph shapes) or
with whatever font fontconfig finds first.  So every font we set lists, after the UI
font, the system Chinese fonts of each OS in the caption script: Microsoft YaHei /
JhengHei (Windows), PingFang (macOS), Noto Sans CJK (Linux: Debian's ``fonts-noto-cjk``,
which the README and the Linux bundle's notes name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontDatabase, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

ThemeMode = Literal["system", "light", "dark"]

LARGE_FONT_SCALE = 1.3
"""How much bigger the transcript and answer text get with ``ui.large_font``."""

CJK_FAMILIES = {
    "simplified": ("Microsoft YaHei UI", "Microsoft YaHei", "PingFang SC", "Hiragino Sans GB",
                   "Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Micro Hei"),
    "traditional": ("Microsoft JhengHei UI", "Microsoft JhengHei", "PingFang TC",
                    "Noto Sans CJK TC", "Source Han Sans TC"),
}
"""Chinese UI fonts per script, most preferred first; the missing ones are skipped."""


@dataclass(frozen=True)
class Theme:
    dark: bool
    window: str
    base: str
    surface: str
    text: str
    muted: str
    faint: str
    """The unstable tail of a partial: readable, clearly provisional."""
    border: str
    accent: str
    accent_text: str
    good: str
    warn: str
    bad: str
    code_bg: str
    banner_error: tuple[str, str]
    banner_warning: tuple[str, str]
    banner_info: tuple[str, str]
    """(background, border) per banner level."""


LIGHT = Theme(
    dark=False,
    window="#eef0f4",
    base="#ffffff",
    surface="#f7f8fa",
    text="#1b1f24",
    muted="#667085",
    faint="#a0a7b4",
    border="#d8dce3",
    accent="#2f6fed",
    accent_text="#ffffff",
    good="#16a34a",
    warn="#d97706",
    bad="#dc2626",
    code_bg="#eef1f5",
    banner_error=("#fdecec", "#f3b4b4"),
    banner_warning=("#fff6e5", "#f1cf8f"),
    banner_info=("#e9f1ff", "#b5cdf7"),
)

DARK = Theme(
    dark=True,
    window="#181a1f",
    base="#22252b",
    surface="#2a2e35",
    text="#e7e9ee",
    muted="#9aa3b2",
    faint="#656d7a",
    border="#353a43",
    accent="#4c8dff",
    accent_text="#ffffff",
    good="#22c55e",
    warn="#f59e0b",
    bad="#f87171",
    code_bg="#2f333b",
    banner_error=("#3a2023", "#7a3a3f"),
    banner_warning=("#3a2f1c", "#7a5a26"),
    banner_info=("#1d2a40", "#34507e"),
)


def system_is_dark() -> bool:
    app = QGuiApplication.instance()
    if not isinstance(app, QGuiApplication):
        return False
    return app.styleHints().colorScheme() == Qt.ColorScheme.Dark


def resolve(mode: ThemeMode) -> Theme:
    if mode == "dark" or (mode == "system" and system_is_dark()):
        return DARK
    return LIGHT


def palette(theme: Theme) -> QPalette:
    p = QPalette()
    role = QPalette.ColorRole
    colors = {
        role.Window: theme.window,
        role.WindowText: theme.text,
        role.Base: theme.base,
        role.AlternateBase: theme.surface,
        role.Text: theme.text,
        role.Button: theme.surface,
        role.ButtonText: theme.text,
        role.BrightText: theme.bad,
        role.Highlight: theme.accent,
        role.HighlightedText: theme.accent_text,
        role.ToolTipBase: theme.base,
        role.ToolTipText: theme.text,
        role.PlaceholderText: theme.faint,
        role.Link: theme.accent,
        role.Mid: theme.border,
    }
    for r, c in colors.items():
        p.setColor(r, QColor(c))
    for r in (role.Text, role.WindowText, role.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, r, QColor(theme.faint))
    return p


def stylesheet(theme: Theme) -> str:
    t = theme
    return f"""
QMainWindow, QDialog {{ background: {t.window}; }}
QFrame#pane {{ background: {t.base}; border: 1px solid {t.border}; border-radius: 10px; }}
QFrame#pane QTextEdit {{ background: transparent; border: none; }}
QLabel#paneTitle {{ color: {t.muted}; font-weight: 600; letter-spacing: 0.5px; }}
QLabel#paneHint {{ color: {t.faint}; }}
QFrame#footer {{ background: {t.base}; border-top: 1px solid {t.border}; }}
QLabel#metric {{ color: {t.muted}; }}
QLabel#chip {{ border-radius: 9px; padding: 1px 8px; background: {t.surface};
               border: 1px solid {t.border}; }}
QPushButton {{ background: {t.base}; color: {t.text}; border: 1px solid {t.border};
               border-radius: 7px; padding: 5px 11px; }}
QPushButton:hover {{ border-color: {t.accent}; }}
QPushButton:pressed {{ background: {t.surface}; }}
QPushButton:disabled {{ color: {t.faint}; border-color: {t.border}; }}
QPushButton#primary {{ background: {t.accent}; color: {t.accent_text}; border-color: {t.accent};
                       font-weight: 600; }}
QPushButton#primary[listening="true"] {{ background: {t.base}; color: {t.bad};
                                         border-color: {t.bad}; }}
QPushButton:checked {{ background: {t.accent}; color: {t.accent_text}; border-color: {t.accent}; }}
QPushButton#flat {{ border: none; background: transparent; color: {t.muted}; padding: 2px 6px; }}
QPushButton#flat:hover {{ color: {t.accent}; }}
QToolButton {{ border: none; color: {t.muted}; padding: 2px 4px; border-radius: 5px; }}
QToolButton:hover {{ background: {t.surface}; color: {t.text}; }}
QSplitter::handle {{ background: transparent; }}
QMenuBar {{ background: {t.window}; }}
QScrollBar:vertical {{ background: transparent; width: 10px; margin: 2px; }}
QScrollBar::handle:vertical {{ background: {t.border}; border-radius: 4px; min-height: 24px; }}
QScrollBar::add-line:vertical, QScrollBar::sub-line:vertical {{ height: 0; }}
QScrollBar::add-page:vertical, QScrollBar::sub-page:vertical {{ background: transparent; }}
QLineEdit, QPlainTextEdit, QSpinBox, QDoubleSpinBox, QComboBox {{
    background: {t.base}; border: 1px solid {t.border}; border-radius: 6px; padding: 3px 6px; }}
QLineEdit:focus, QPlainTextEdit:focus, QSpinBox:focus, QDoubleSpinBox:focus,
QComboBox:focus {{ border-color: {t.accent}; }}
QLabel#error {{ color: {t.bad}; }}
"""


def cjk_families(script: str = "simplified") -> list[str]:
    """The installed Chinese fonts for a caption script, in preference order."""
    wanted = CJK_FAMILIES["simplified" if script == "simplified" else "traditional"]
    installed = set(QFontDatabase.families())
    other = CJK_FAMILIES["traditional" if script == "simplified" else "simplified"]
    return [f for f in (*wanted, *other) if f in installed]


def with_cjk_fallback(font: QFont, script: str = "simplified") -> QFont:
    """``font`` first, then the installed Chinese fonts: Latin text keeps its look."""
    out = QFont(font)
    families = [f for f in (font.families() or [font.family()]) if f]
    out.setFamilies([*families, *(f for f in cjk_families(script) if f not in families)])
    return out


def apply(app: QApplication, mode: ThemeMode, chinese_script: str = "simplified") -> Theme:
    theme = resolve(mode)
    app.setStyle("Fusion")
    app.setPalette(palette(theme))
    app.setStyleSheet(stylesheet(theme))
    app.setFont(with_cjk_fallback(app.font(), chinese_script))
    return theme


def pane_font(base: QFont, large: bool, chinese_script: str = "simplified") -> QFont:
    """The reading font of the panes: a notch above the UI font, more with large_font."""
    font = with_cjk_fallback(base, chinese_script)
    size = base.pointSizeF() if base.pointSizeF() > 0 else 10.0
    font.setPointSizeF(size * (1.12 * (LARGE_FONT_SCALE if large else 1.0)))
    return font
