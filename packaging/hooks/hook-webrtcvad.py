"""Overrides pyinstaller-hooks-contrib's hook, which copies the metadata of the
``webrtcvad`` distribution; ours is installed as ``webrtcvad-wheels``."""

from PyInstaller.utils.hooks import copy_metadata

datas = copy_metadata("webrtcvad-wheels")
