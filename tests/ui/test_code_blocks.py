"""Fenced code in the answer pane: a monospace block, highlighted by Pygments when its fence
closes, Markdown left alone inside it, a copy link that copies the code exactly; the work
per streamed token stays the token's."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QGuiApplication, QTextBlock
from pytestqt.qtbot import QtBot

from app.ui.answer_view import AnswerView
from app.ui.code_blocks import spans

CODE = ("def two_sum(nums, target):\n"
        "    # one pass\n"
        "    seen = {}\n"
        "\n"
        "    - x\n"
        "    return [seen[target - n], i]  # **not bold**")
ANSWER = f"**Problem:** find two indices.\n**Code:**\n```python\n{CODE}\n```\n**Complexity:** O(n) time."


def stream(view: AnswerView, text: str, size: int) -> None:
    for i in range(0, len(text), size):
        view.append_token(1, 1, text[i:i + size])
    view.mark_done(1, truncated=False)


def code_blocks(view: AnswerView) -> list[QTextBlock]:
    out, block = [], view.document().firstBlock()
    while block.isValid():
        if block.blockFormat().background().color().name() == "#eef1f5":
            out.append(block)
        block = block.next()
    return out


def colour_of(block: QTextBlock, text: str) -> str:
    it = block.begin()
    while not it.atEnd():
        if text in it.fragment().text():
            return str(it.fragment().charFormat().foreground().color().name())
        it += 1
    raise AssertionError(f"{text!r} is not one run of {block.text()!r}")


def colours(block: QTextBlock) -> set[str]:
    found, it = set(), block.begin()
    while not it.atEnd():
        found.add(it.fragment().charFormat().foreground().color().name())
        it += 1
    return found


@pytest.mark.parametrize("size", [1, 3, 8, 1000])
def test_a_fenced_block_is_code_highlighted_whatever_the_tokens(qtbot: QtBot, size: int) -> None:
    view = AnswerView()
    qtbot.addWidget(view)
    stream(view, ANSWER, size)
    blocks = code_blocks(view)
    assert [b.text() for b in blocks] == CODE.split("\n")  # indentation and blank line kept
    assert all(b.textList() is None for b in blocks)  # "- x" is code, not a bullet
    keyword, name, comment = (colour_of(blocks[0], "def"), colour_of(blocks[0], "two_sum"),
                              colour_of(blocks[1], "# one pass"))
    assert len({keyword, name, comment}) == 3  # Pygments' colours: keyword, function name, comment
    assert colour_of(blocks[5], "# **not bold**")  # Markdown markers stay as written in code
    assert blocks[0].begin().fragment().charFormat().fontFamilies()  # the fixed font
    assert view.codes == [CODE]
    text = view.toPlainText()
    assert "```" not in text and "Copy code" in text and text.rstrip().endswith("O(n) time.")


def test_the_copy_link_copies_the_code_exactly(qtbot: QtBot) -> None:
    view = AnswerView()
    qtbot.addWidget(view)
    stream(view, ANSWER, 5)
    view.copy_code(0)
    assert QGuiApplication.clipboard().text() == CODE


def test_an_answer_that_ends_inside_its_fence_is_still_highlighted(qtbot: QtBot) -> None:
    view = AnswerView()
    qtbot.addWidget(view)
    stream(view, "```js\nconst x = 1;\nlet y = 'a';", 4)
    assert view.codes == ["const x = 1;\nlet y = 'a';"]
    assert len(colours(code_blocks(view)[0])) >= 2


def test_streaming_code_costs_the_token_not_the_block(qtbot: QtBot) -> None:
    view = AnswerView()
    qtbot.addWidget(view)
    work: list[int] = []
    view.append_token(1, 1, "```python\n")
    view.document().contentsChange.connect(lambda _at, removed, added: work.append(removed + added))
    tokens = ["x = 1\n"] * 2000
    for token in tokens:
        view.append_token(1, 1, token)
    assert sum(work) <= 2 * sum(len(t) for t in tokens)


def test_an_unknown_language_is_guessed_or_left_plain() -> None:
    assert spans("SELECT name FROM users;", "no-such-language") is not None
    assert spans("", "python") == []
