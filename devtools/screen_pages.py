"""Rendered screens for the OCR tests and ``bench screen``: each page with the text it shows.

A page is drawn with Pillow (a dependency of RapidOCR) in the fonts Debian ships
(DejaVu for Latin, Noto CJK for Mandarin: tests/run.sh installs ``fonts-noto-cjk``):
a problem page of two panes (the statement left, the editor right, with line numbers),
an editor alone, a chat; light or dark; at 1x or 2x.  ``expected`` is the text in the
reading order the reader must give back (the statement whole, then the code with its
indentation; line numbers are the editor's, not the code's).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image, ImageDraw, ImageFont

Kind = Literal["problem", "editor", "chat"]
Theme = Literal["light", "dark"]

SANS = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
MONO = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
CJK = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"

PROBLEM_EN = [
    "1. Two Sum",
    "Given an array of integers nums and an integer target,",
    "return the indices of the two numbers that add up to target.",
    "You may assume that each input has exactly one solution,",
    "and you may not use the same element twice.",
    "Example 1:",
    "Input: nums = [2,7,11,15], target = 9",
    "Output: [0,1]",
    "Constraints: 2 <= nums.length <= 10000",
]
PROBLEM_ZH = [
    "1. 两数之和",
    "给定一个整数数组 nums 和一个整数目标值 target，",
    "请你在该数组中找出和为目标值的那两个整数，",
    "并返回它们的数组下标。",
    "你可以假设每种输入只会对应一个答案。",
    "示例 1：",
    "输入：nums = [2,7,11,15], target = 9",
    "输出：[0,1]",
]
CODE = [
    "class Solution:",
    "    def two_sum(self, nums, target):",
    "        seen = {}",
    "        for i, n in enumerate(nums):",
    "            if target - n in seen:",
    "                return [seen[target - n], i]",
    "            seen[n] = i",
    "        return []",
]
TRACE = [
    "Traceback (most recent call last):",
    '  File "solution.py", line 6, in two_sum',
    "TypeError: unhashable type: 'list'",
]
CHAT_EN = [
    "Interviewer: Please write a function that reverses a linked list",
    "in place and returns the new head. Explain its complexity.",
]
CHAT_ZH = [
    "面试官：请写一个函数，原地反转一个链表，",
    "并返回新的头结点，说明它的复杂度。",
]

COLOURS = {
    "light": {"bg": (255, 255, 255), "pane": (247, 247, 248), "text": (38, 38, 38),
              "code": (36, 41, 47), "gutter": (140, 140, 140), "key": (207, 34, 46)},
    "dark": {"bg": (26, 26, 26), "pane": (30, 30, 30), "text": (220, 220, 220),
             "code": (212, 212, 212), "gutter": (110, 118, 129), "key": (86, 156, 214)},
}


@dataclass(frozen=True, slots=True)
class Page:
    name: str
    image: np.ndarray
    """RGB, uint8, device pixels."""
    expected: str
    kind: Kind
    language: str
    scale: int
    theme: Theme

    def save(self, path: Path) -> Path:
        Image.fromarray(self.image).save(path)
        return path


def render(kind: Kind, *, language: str = "en", scale: int = 1, theme: Theme = "light",
           text_px: int = 16, width: int | None = None, height: int | None = None) -> Page:
    """One page; ``text_px`` is the body text's size in logical pixels (14 for chat)."""
    colours = COLOURS[theme]
    zh = language.startswith("zh")
    prose = PROBLEM_ZH if zh else PROBLEM_EN
    if kind == "chat":
        prose, code = (CHAT_ZH if zh else CHAT_EN), []
        width, height = width or 760, height or 140
    elif kind == "editor":
        prose, code = [], [*CODE, "", *TRACE]
        width, height = width or 760, height or 380
    else:
        code = CODE
        width, height = width or 1280, height or 400
    image = Image.new("RGB", (width * scale, height * scale), colours["bg"])
    draw = ImageDraw.Draw(image)
    body = ImageFont.truetype(CJK if zh else SANS, text_px * scale)
    mono = ImageFont.truetype(MONO, 15 * scale)
    pitch = round(text_px * 1.7)
    left, top = 24, 24
    for i, line in enumerate(prose):
        draw.text((left * scale, (top + i * pitch) * scale), line, font=body, fill=colours["text"])
    if code:
        pane_x = width // 2 + 20 if prose else 0
        draw.rectangle(((pane_x * scale, 0), (width * scale, height * scale)), fill=colours["pane"])
        for i, line in enumerate(code):
            y = (top + i * 24) * scale
            if line:
                draw.text(((pane_x + 12) * scale, y), f"{i + 1:>2}", font=mono, fill=colours["gutter"])
            draw.text(((pane_x + 56) * scale, y), line, font=mono, fill=colours["code"])
    expected = "\n".join(prose) + ("\n\n" if prose and code else "") + "\n".join(code)
    name = f"{kind}-{'zh' if zh else 'en'}-{scale}x-{theme}"
    return Page(name, np.asarray(image), expected.strip("\n"), kind, "zh" if zh else "en", scale, theme)


def corpus() -> list[Page]:
    """``bench screen``'s pages: every kind, language, scale and theme."""
    pages = []
    for kind in ("problem", "editor", "chat"):
        for language in ("en", "zh"):
            if kind == "editor" and language == "zh":
                continue  # the editor's code is the same in either language
            for scale in (1, 2):
                for theme in ("light", "dark"):
                    pages.append(render(kind, language=language, scale=scale, theme=theme,
                                        text_px=14 if kind == "chat" else 16))
    return pages


def full_screen(scale: int = 1, theme: Theme = "light") -> Page:
    """A 1920x1080 screen: the problem page with room around it (the whole-screen target)."""
    return render("problem", scale=scale, theme=theme, width=1920, height=1080)
