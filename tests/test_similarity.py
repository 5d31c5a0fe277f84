"""The reuse rule: when may an answer written for the partial be shown for the final?"""

import pytest

from app.answer.similarity import compare
from app.text import words

FILLERS = frozenset({"um", "uh", "嗯"})


def test_exact_ignores_case_punctuation_and_fillers() -> None:
    assert compare("why are you interested in this role", "Um, why are you interested in this role?",
                   fillers=FILLERS).same


def test_exact_rejects_any_word_change() -> None:
    assert not compare("why are you interested in this role", "why are you interested in this rule").same


def test_user_rule_alone_keeps_a_wrong_answer() -> None:
    sent, final = "should I take the job offer from them", "should I not take the job offer from them"
    verdict = compare(sent, final, "fuzzy_unguarded")
    assert verdict.similarity >= 0.92 and verdict.same  # the trap the issue describes


@pytest.mark.parametrize(("sent", "final"), [
    ("should I take the job offer from them", "should I not take the job offer from them"),
    ("how would you handle five million requests a day", "how would you handle six million requests a day"),
    ("how would you handle 5 million requests a day", "how would you handle 50 million requests a day"),
    ("what is the time complexity of binary search", "what is the time complexity of binary search and why"),
    ("do you have experience with kubernetes clusters", "do you have no experience with kubernetes clusters"),
])
def test_guarded_fuzzy_reissues_on_meaning_changes(sent: str, final: str) -> None:
    assert not compare(sent, final, "fuzzy").same


def test_guarded_fuzzy_accepts_a_small_recognition_fix() -> None:
    verdict = compare("tell me about a time you disagreed with your manger",
                      "tell me about a time you disagreed with your manager", "fuzzy")
    assert verdict.same and verdict.similarity >= 0.92


def test_chinese_characters_are_words_and_fillers_drop() -> None:
    assert words("嗯，你为什么想加入我们？", FILLERS) == list("你为什么想加入我们")
    assert compare("你为什么想加入我们", "嗯，你为什么想加入我们？", fillers=FILLERS).same
    assert not compare("你为什么想加入我们", "你为什么不想加入我们", "fuzzy").same
