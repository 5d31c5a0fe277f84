"""Reading order from boxes alone: panes whole, line numbers dropped, code indented."""

from __future__ import annotations

from app.screen.layout import Box, reading_order

H = 20  # text height, px
C = 9  # a monospace character, px


def line(x: float, y: float, text: str, char: float = C) -> Box:
    return Box(x, y, x + char * len(text), y + H, text)


def test_two_panes_side_by_side_are_read_whole_left_then_right() -> None:
    prose = ["Given an array of integers,", "return the two indices", "that add up to target."]
    code = ["def f(nums):", "    seen = {}", "    return seen"]
    boxes = []
    for i, (p, c) in enumerate(zip(prose, code, strict=True)):
        indent = len(c) - len(c.lstrip())
        boxes += [line(20, 20 + 27 * i, p), line(700 + C * indent, 22 + 27 * i, c.lstrip())]
    assert reading_order(boxes) == "\n".join(prose) + "\n\n" + "\n".join(code)


def test_a_header_across_both_panes_comes_first() -> None:
    boxes = [line(20, 0, "Problem 7: Rotate an array by k places (medium)", char=14)]
    boxes += [line(20, 40 + 27 * i, f"left line {i}") for i in range(3)]
    boxes += [line(700, 40 + 27 * i, f"x{i} = {i}") for i in range(3)]
    text = reading_order(boxes)
    assert text.splitlines()[0].startswith("Problem 7")
    assert text.index("left line 2") < text.index("x0 = 0")


def test_line_numbers_are_dropped_and_indentation_is_rebuilt_in_characters() -> None:
    code = ["class A:", "    def f(self):", "        if x:", "            return 1", "        return 2"]
    boxes = []
    for i, c in enumerate(code):
        boxes.append(line(10, 10 + 24 * i, str(i + 1)))
        indent = len(c) - len(c.lstrip())
        boxes.append(line(56 + C * indent + (1 if i % 2 else -1), 11 + 24 * i, c.lstrip()))
    assert reading_order(boxes) == "\n".join(code)


def test_prose_is_not_indented_and_a_wide_space_in_one_line_stays_in_it() -> None:
    boxes = [line(20, 0, "Example 1:"), line(260, 1, "Output: [0,1]"), line(20, 30, "Input: nums = [2,7]")]
    assert reading_order(boxes).splitlines() == ["Example 1:" + " " * 17 + "Output: [0,1]",
                                                 "Input: nums = [2,7]"]


def test_a_paragraph_gap_is_a_blank_line() -> None:
    boxes = [line(20, 0, "First paragraph."), line(20, 70, "Second one.")]
    assert reading_order(boxes) == "First paragraph.\n\nSecond one."


def test_nothing_is_empty() -> None:
    assert reading_order([]) == ""
    assert reading_order([Box(0, 0, 10, 10, "  ")]) == ""


def test_line_numbers_whose_padded_boxes_all_but_touch_the_code_are_still_dropped() -> None:
    code = ["def f(x):", "    y = g(x)", "    return y"]
    boxes = []
    for i, c in enumerate(code):
        boxes.append(Box(0, 24 * i, 27, 24 * i + H, str(i + 1)))  # padded: ends 3 px before the code
        indent = len(c) - len(c.lstrip())
        boxes.append(line(30 + C * indent, 24 * i, c.lstrip()))
    assert reading_order(boxes) == "\n".join(code)
