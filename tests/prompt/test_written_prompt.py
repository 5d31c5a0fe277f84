"""The written question's prompt: the answer's order, a fix for an error, images as parts."""

from __future__ import annotations

import base64

import pytest

from app.prompt.written import shows_an_error, written_messages


def test_a_problem_asks_for_the_line_the_approach_the_code_and_the_complexity() -> None:
    system, user = written_messages("1. Two Sum\nGiven an array of integers nums ...")
    for heading in ("**Problem:**", "one line", "**Approach:**", "**Code:**", "fenced code block",
                    "**Complexity:**", "time and space", "OCR"):
        assert heading in system["content"]
    assert "```\n1. Two Sum\nGiven an array" in user["content"]
    assert user["content"].endswith("Solve it.")


@pytest.mark.parametrize("text", [
    "def f(x):\n    return x[0]\nTraceback (most recent call last):\n  File \"a.py\"\nIndexError: list index",
    "int main() {\n}\nerror: expected ';' before '}' token",
    "Exception in thread \"main\" java.lang.NullPointerException\n    at Main.main(Main.java:5)",
])
def test_code_with_an_error_asks_for_the_fix(text: str) -> None:
    assert shows_an_error(text)
    assert written_messages(text)[1]["content"].endswith("Fix the error.")


def test_prose_about_errors_is_not_an_error() -> None:
    assert not shows_an_error("Return the number of errors made while typing the string.")


def test_images_go_as_image_parts_after_the_text() -> None:
    png = b"\x89PNG fake"
    _, user = written_messages("Reverse a list.", [png, png])
    parts = user["content"]
    assert parts[0]["type"] == "text" and "Reverse a list." in parts[0]["text"]
    assert [p["type"] for p in parts[1:]] == ["image_url", "image_url"]
    assert parts[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png).decode()


def test_an_empty_capture_is_no_question() -> None:
    with pytest.raises(ValueError):
        written_messages("  \n ")
