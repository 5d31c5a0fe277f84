"""The real recogniser on rendered screens: order, indentation, themes, scales, blank frames."""

from __future__ import annotations

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein

from app.screen.errors import NothingReadable, OneColour
from app.screen.ocr import Reader
from devtools.screen_pages import render


@pytest.fixture(scope="module")
def reader() -> Reader:
    return Reader()


def cer(read: str, expected: str) -> float:
    return Levenshtein.distance(read, expected) / max(1, len(expected))


def test_the_engine_loads_on_the_first_capture_not_before() -> None:
    reader = Reader()
    assert not reader.loaded
    with pytest.raises(OneColour):
        reader.read(np.zeros((50, 50, 3), np.uint8))
    assert not reader.loaded  # a blank frame is refused before the models are loaded


def test_a_two_pane_problem_reads_the_statement_whole_then_the_code_indented(reader: Reader) -> None:
    page = render("problem")
    text = reader.read(page.image).text
    statement, code = text.split("\n\n")
    assert statement.splitlines()[0] == "1. Two Sum"
    assert statement.splitlines()[-1].startswith("Constraints")
    assert code.splitlines() == page.expected.split("\n\n")[1].splitlines()


@pytest.mark.parametrize(("scale", "theme"), [(2, "dark"), (1, "dark"), (2, "light")])
def test_dark_and_2x_pages_read_as_well_as_1x_light(reader: Reader, scale: int, theme: str) -> None:
    light = render("problem")
    page = render("problem", scale=scale, theme=theme)  # type: ignore[arg-type]
    reference = cer(reader.read(light.image).text, light.expected)
    assert cer(reader.read(page.image).text, page.expected) <= max(0.02, 2 * reference)


def test_14px_chat_text_and_mandarin_read(reader: Reader) -> None:
    for page in (render("chat", text_px=14), render("chat", text_px=14, language="zh", theme="dark")):
        assert cer(reader.read(page.image, page.language).text, page.expected) <= 0.03, page.name


def test_an_error_under_the_code_keeps_its_lines(reader: Reader) -> None:
    page = render("editor", theme="dark")
    text = reader.read(page.image).text
    assert "    def two_sum(self, nums, target):" in text.splitlines()
    assert text.splitlines()[-1].startswith("TypeError")


def test_an_all_black_capture_is_named_with_its_fix(reader: Reader) -> None:
    with pytest.raises(OneColour, match="all black"):
        reader.read(np.zeros((1080, 1920, 3), np.uint8))
    with pytest.raises(OneColour, match="one colour"):
        reader.read(np.full((300, 400, 3), (40, 90, 160), np.uint8))


def test_a_picture_without_text_is_nothing_readable(reader: Reader) -> None:
    gradient = np.tile(np.linspace(0, 255, 640, dtype=np.uint8)[None, :, None], (360, 1, 3))
    with pytest.raises(NothingReadable):
        reader.read(np.ascontiguousarray(gradient))
