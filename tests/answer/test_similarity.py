"""The reuse rule: when may an answer written for the partial be shown for the final?"""

import pytest

from app.answer.similarity import exact
from app.core.text import words
from devtools.bench.baselines import FuzzyReuse

FILLERS = frozenset({"um", "uh", "嗯"})


def test_exact_ignores_case_punctuation_and_fillers() -> None:
    assert exact("why are you interested in this role", "Um, why are you interested in this role?",
                 fillers=FILLERS).same


def test_exact_rejects_any_word_change() -> None:
    assert not exact("why are you interested in this role", "why are you interested in this rule").same


@pytest.mark.parametrize(("sent", "final"), [
    ("should I take the job offer from them", "should I not take the job offer from them"),
    ("how would you handle five million requests a day", "how would you handle six million requests a day"),
])
def test_the_users_rule_keeps_a_wrong_answer_the_products_does_not(sent: str, final: str) -> None:
    """The benchmark's ``user-fixes`` baseline reuses what the product asks again."""
    users = FuzzyReuse(0.92)(sent, final, fillers=frozenset(), tags=())
    assert users.similarity >= 0.92 and users.same  # the trap the issue describes
    product = exact(sent, final)
    assert not product.same and product.similarity == users.similarity  # reported alike


def test_chinese_characters_are_words_and_fillers_drop() -> None:
    assert words("嗯，你为什么想加入我们？", FILLERS) == list("你为什么想加入我们")
    assert exact("你为什么想加入我们", "嗯，你为什么想加入我们？", fillers=FILLERS).same
    assert not exact("你为什么想加入我们", "你为什么不想加入我们").same
