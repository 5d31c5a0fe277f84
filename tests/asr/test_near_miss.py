"""The near-miss mend's rule, with a stand-in vocabulary and stand-in scores: what is
nominated (a span holding a word spelt from pieces, alike in letters to a term not said)
and what wins (the term's sentence within the bonus a piece, and heard at all).  The
real decoder's side is in ``tests/asr/test_glossary_by_need.py``."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.asr import near_miss
from app.asr.near_miss import BONUS_PER_PIECE, HEARD_LOG_PROB, Scores, mend, near_misses
from app.frontends import selftest
from app.frontends.selftest import run_check

VOCABULARY = {"how", "did", "you", "keep", "posters", "upgrades", "from", "causing", "down", "time",
              "tell", "me", "about", "cuba", "next", "year", "change", "capture", "with", "feed",
              "the", "we", "use", "what", "is", "a", "mutex", "thank"}
"""Words the stand-in tokenizer writes in one piece; any other word takes two."""
TERMS = ("PostgreSQL", "Debezium", "Kubernetes", "Snowflake", "星澜支付")
PIECES = {"PostgreSQL": 2, "Debezium": 4, "Kubernetes": 4, "Snowflake": 2}


def pieces(text: str) -> int:
    return PIECES.get(text) or (1 if text.lower() in VOCABULARY else 2)


def scores_by(table: dict[str, float]) -> Scores:
    """Stand-in scores: each sentence's total from ``table`` spread over ten tokens (one
    not in it: -2 a token, a sentence nobody would keep); records each batch asked for."""
    def scores(texts: list[str], terms: list[str]) -> list[list[float]]:
        asked.append(texts)
        prompted.append(terms)
        return [[table.get(t, -20.0) / 10] * 10 for t in texts]
    asked: list[list[str]] = []
    prompted: list[list[str]] = []
    scores.asked = asked  # type: ignore[attr-defined]
    scores.prompted = prompted  # type: ignore[attr-defined]
    return scores


MISHEARD = "How did you keep posters, QL upgrades from causing down time?"
RIGHT = "How did you keep PostgreSQL upgrades from causing down time?"


def test_a_word_spelt_from_pieces_that_looks_like_a_term_is_nominated() -> None:
    misses = near_misses(MISHEARD, TERMS, pieces)
    assert [(m.term, m.start, m.end) for m in misses][:1] == [("PostgreSQL", 4, 6)]  # "posters, QL"


def test_a_question_of_everyday_words_nominates_nothing() -> None:
    """"Cuba next" looks like Kubernetes, but both are words of the vocabulary: what the
    model wrote whole, it heard; nothing is scored, nothing is paid."""
    assert not near_misses("Tell me about Cuba next year.", TERMS, pieces)
    assert not near_misses("What is a mutex?", TERMS, pieces)


def test_a_term_already_said_or_a_term_of_another_script_is_not_nominated() -> None:
    assert not [m for m in near_misses(RIGHT + " Postgre QL", TERMS, pieces) if m.term == "PostgreSQL"]
    assert not [m for m in near_misses("We use 星澜 支付", TERMS, pieces) if m.term == "星澜支付"]


def test_a_real_word_that_looks_like_a_term_was_heard_as_itself() -> None:
    """Spelt from pieces, alike in letters, but English: "answerable" is no Ansible,
    "logistic regression" no Logistics."""
    assert "answerable" not in VOCABULARY and pieces("answerable") > 1
    assert not near_misses("What makes a question answerable?", ("Ansible",), pieces)
    assert not near_misses("Have you built logistic regression models?", ("Logistics",), pieces)
    assert near_misses("How do you test an Ansibel playbook?", ("Ansible",), pieces)


def test_a_word_that_holds_the_whole_term_heard_the_term_and_more() -> None:
    """"Terraforming" is not a mishearing of Terraform: mending it would drop "ing"."""
    assert not near_misses("Have you read about terraforming Mars?", ("Terraform",), pieces)
    assert near_misses("Have you read about terraform Mars?", ("Terraform",), pieces) == []  # said
    assert near_misses("We use Teraform", ("Terraform",), pieces)


def test_the_terms_own_words_are_not_strange() -> None:
    """"Snowflake" said right takes pieces too, but it is a term: it nominates nothing."""
    assert not near_misses("How did change capture with Snowflake?", TERMS, pieces)


def test_the_term_wins_within_the_bonus_a_piece_of_the_term() -> None:
    own = -4.0  # ten tokens
    within = own - BONUS_PER_PIECE * PIECES["PostgreSQL"] + 0.1
    beyond = own - BONUS_PER_PIECE * PIECES["PostgreSQL"] - 0.1
    assert mend(MISHEARD, TERMS, pieces, scores_by({MISHEARD: own, RIGHT: within})) == RIGHT
    assert mend(MISHEARD, TERMS, pieces, scores_by({MISHEARD: own, RIGHT: beyond})) == MISHEARD


def test_a_sentence_whisper_would_not_keep_never_wins() -> None:
    """Over noise every sentence is a guess: the term's must be heard (≥ -1 a token)."""
    own = -40.0  # ten tokens at -4: no speech here
    heard_not = HEARD_LOG_PROB * 10 - 1.0
    assert mend(MISHEARD, TERMS, pieces, scores_by({MISHEARD: own, RIGHT: heard_not})) == MISHEARD


def test_two_names_misheard_in_one_question_are_both_mended_and_punctuation_kept() -> None:
    said = "How did change capture with Deadbism feed posters, QL?"
    one = "How did change capture with Debezium feed posters, QL?"
    other = "How did change capture with Deadbism feed PostgreSQL?"
    scores = scores_by({said: -5.0, one: -7.0, other: -7.0})
    assert mend(said, TERMS, pieces, scores) == "How did change capture with Debezium feed PostgreSQL?"
    assert len(scores.asked) == 1  # one batch: the pass's words and each candidate…
    assert set(scores.prompted[0]) == {"Debezium", "PostgreSQL"}  # …behind the nominated terms


def test_overlapping_candidates_keep_the_best_margin() -> None:
    said = "We use Postbezium"
    as_postgres, as_debezium = "We use PostgreSQL", "We use Debezium"
    misses = near_misses(said, TERMS, pieces)
    assert {m.term for m in misses} >= {"PostgreSQL", "Debezium"}
    scores = scores_by({said: -6.0, as_postgres: -9.0, as_debezium: -7.0})
    assert mend(said, TERMS, pieces, scores) == as_debezium


@pytest.mark.parametrize("text", ["", "Thank you."])
def test_nothing_to_nominate_asks_for_no_scores(text: str) -> None:
    scores = scores_by({})
    assert mend(text, TERMS, pieces, scores) == text
    assert scores.asked == []


@pytest.fixture
def damaged_word_list(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """The install's word list cut short, read afresh (and the real one again after)."""
    (tmp_path / "resources").mkdir()
    (tmp_path / "resources" / "en.json.gz").write_bytes(gzip.compress(b'{"the": 1, "answ')[:-8])
    monkeypatch.setattr(near_miss, "files", lambda package: tmp_path)
    near_miss.english_words.cache_clear()
    yield
    near_miss.english_words.cache_clear()


@pytest.mark.usefixtures("damaged_word_list")
def test_a_damaged_word_list_mends_nothing_and_the_self_test_says_so() -> None:
    """Without the list a real word cannot be told from a misheard name: the words stay
    as the search wrote them, no pass fails, and the self-test names the fix."""
    assert near_miss.english_words() is None
    assert mend(MISHEARD, TERMS, pieces, scores_by({RIGHT: 0.0})) == MISHEARD
    result = run_check("word-list", selftest.check_word_list)
    assert result.status == "fail" and "word list" in result.detail and result.fix
