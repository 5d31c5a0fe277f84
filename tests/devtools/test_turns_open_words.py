"""Which cuts the end-of-turn head is taught as "goes on": words that cannot end a question."""

from __future__ import annotations

import pytest

from devtools.turns_train.open_words import leaves_open


@pytest.mark.parametrize("text", [
    "tell me about", "tell me about a", "walk me through your", "when can you", "so can you",
    "what is", "okay so how would", "can you explain the difference between", "i'd like you to",
    "what would you do if", "tell me about a time when we", "um", "have you used kafka and",
    "let's", "who did you work with when you",
])
def test_english_words_that_leave_the_clause_open_go_on(text: str) -> None:
    assert leaves_open(text.split(), "en")


@pytest.mark.parametrize("text", [
    "when can you start", "where would you start", "do you know rust", "have you used",
    "what did you learn", "how long did it take", "why did you leave",
    # a preposition a wh-word earlier may be the object of
    "what are you most proud of", "what kind of manager do you work best with",
    # an auxiliary after its subject: a main verb or an ellipsis
    "how much experience do you have", "what would you do",
    # "you" after "be" or a verb: whole
    "how comfortable are you", "why should we hire you",
    # a lone wh-word is a question; "that", "this" may stand alone
    "why", "so what", "what do you think of that",
])
def test_english_words_that_may_end_a_question_are_not_called_open(text: str) -> None:
    assert not leaves_open(text.split(), "en")


@pytest.mark.parametrize("text", [
    "你 会 怎么", "你 对", "说说 你 跟", "你 最大 的", "实现 一个", "讲讲 你 的 一次", "如果", "让 你",
    "你", "好 你", "嗯", "你 为什么",
])
def test_mandarin_closed_class_endings_go_on(text: str) -> None:
    assert leaves_open(text.split(), "zh")


@pytest.mark.parametrize("text", [
    "你 用过 Kafka", "请 介绍 一下", "你 对 Redis 有 什么", "你 希望 下 一份 工作 是 什么样 的",
    "领导 会 怎么 评价 你", "为什么", "数据库 磁盘 满 了", "你 会 怎么 设计",
])
def test_mandarin_words_that_may_end_a_question_are_not_called_open(text: str) -> None:
    assert not leaves_open(text.split(), "zh")


def test_no_words_are_not_a_cut() -> None:
    assert not leaves_open([], "en") and not leaves_open([], "zh")
