"""The Settings dialog (:mod:`app.ui.settings.dialog`) and its tabs, one module each."""

from app.ui.settings.dialog import SettingsDialog

__all__ = ["SettingsDialog"]
