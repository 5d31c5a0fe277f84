"""Which Chinese script captions are written in, and steering Whisper into it.

Whisper's Chinese training data mixes scripts, and without a hint it often writes
Traditional characters for Mandarin speech.  Two things keep captions in the user's
script: an initial prompt written in it (Whisper continues in the prompt's script most
of the time, at no cost) and OpenCC's character conversion for what slips through.
OpenCC (BYVoid's official binding, ``OpenCC`` on PyPI: binary wheels for Windows, macOS
and Linux, typed, no dependencies, Apache-2.0) converts characters and variants only:
no phrase rewriting (进程 → 程序 in Taiwan usage) because a caption must say what was said.
"""

from __future__ import annotations

import logging
from typing import Literal, Protocol

log = logging.getLogger(__name__)

ChineseScript = Literal["simplified", "traditional", "taiwan", "hongkong"]

_OPENCC_CONFIG: dict[ChineseScript, str] = {
    "simplified": "t2s",
    "traditional": "s2t",
    "taiwan": "s2tw",
    "hongkong": "s2hk",
}

INITIAL_PROMPTS: dict[ChineseScript, str] = {
    "simplified": "以下是普通话的句子。",
    "traditional": "以下是普通話的句子。",
    "taiwan": "以下是普通話的句子。",
    "hongkong": "以下是普通話的句子。",
}


class _Converter(Protocol):
    def convert(self, text: str) -> str: ...


class ScriptConverter:
    """Converts Chinese text into one script; a no-op (with one warning) without OpenCC."""

    def __init__(self, script: ChineseScript = "simplified") -> None:
        self.script = script
        self.initial_prompt = INITIAL_PROMPTS[script]
        self._converter: _Converter | None = None
        try:
            import opencc

            self._converter = opencc.OpenCC(_OPENCC_CONFIG[script])
        except ImportError:
            log.warning("OpenCC is not installed (pip install 'interview-copilot[zh]'): Chinese "
                        "captions rely on the initial prompt alone for the %s script", script)

    @property
    def available(self) -> bool:
        return self._converter is not None

    def convert(self, text: str) -> str:
        return self._converter.convert(text) if self._converter and text else text
