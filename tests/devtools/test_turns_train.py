"""The end-of-turn head's training texts: varied, labelled by rule, split by family, and
none of them from the measuring corpus."""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app.turns.words import prepare
from devtools.turns_train.dataset import examples

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("IC_CORPUS", "/work/shared/corpus"))
"""The measuring corpus (``../shared/corpus`` beside a checkout in the team's sandbox)."""
NEAR = 0.85
"""difflib ratio (over words; characters in Chinese) from which two texts count as one
sentence lightly edited."""


def _norm(text: str) -> tuple[str, ...]:
    """Words, or characters where the text is Chinese: what a near copy is measured in."""
    plain = re.sub(r"[\W_]+", " ", text.lower()).strip()
    return tuple(plain.replace(" ", "")) if re.search(r"[\u4e00-\u9fff]", plain) else tuple(plain.split())


def _corpus_texts() -> list[tuple[str, ...]]:
    texts: list[str] = []
    for manifest in sorted(CORPUS.glob("*/manifest.json")):
        texts += [entry["text"] for entry in json.loads(manifest.read_text(encoding="utf-8"))]
    for listing in sorted(CORPUS.glob("*.txt")):
        texts += [line for line in listing.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [t for t in (_norm(t) for t in texts) if len(t) > 2]


def test_no_corpus_sentence_nor_a_near_copy_is_trained_on() -> None:
    corpus = _corpus_texts()
    if not corpus:
        pytest.skip(f"no corpus at {CORPUS}")
    found = []
    for mine in sorted({_norm(ex.text) for ex in examples("en") + examples("zh")}):
        for theirs in corpus:
            matcher = difflib.SequenceMatcher(None, mine, theirs, autojunk=False)
            if min(matcher.real_quick_ratio(), matcher.quick_ratio()) >= NEAR and matcher.ratio() >= NEAR:
                found.append((mine, theirs))
    assert not found, found[:10]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_several_hundred_questions_with_their_truncations_per_language(language: str) -> None:
    texts = examples(language)
    whole = [e for e in texts if e.kind == "whole"]
    assert len(whole) >= 400
    kinds = {e.kind for e in texts}
    assert {"cut", "filler", "statement", "list", "preamble+whole", "preamble+cut"} <= kinds
    assert all(e.label == (1 if e.kind in ("whole", "preamble+whole") else 0) for e in texts)
    assert len({e.text for e in texts}) == len(texts)  # one label a text


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_held_out_split_is_by_family(language: str) -> None:
    texts = [e for e in examples(language) if e.family != "preamble"]  # pairs are made within a split
    held = {e.family for e in texts if e.held_out}
    trained = {e.family for e in texts if not e.held_out}
    assert held and trained and not held & trained
    assert 0.15 < sum(e.held_out for e in texts) / len(texts) < 0.45


def test_a_cut_is_never_a_whole_question_of_the_same_family() -> None:
    for language in ("en", "zh"):
        texts = examples(language)
        whole = {prepare(e.text) for e in texts if e.label == 1}
        assert not [e.text for e in texts if e.label == 0 and prepare(e.text) in whole]


def test_the_texts_are_the_same_each_run() -> None:
    assert examples("en") == examples("en") and examples("zh") == examples("zh")


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("IC_REBUILD_HEAD"),
                    reason="25 min on 2 cores, and llama.cpp's sums differ from one CPU's SIMD to "
                           "another's: run with IC_REBUILD_HEAD=1 on the machine that trained it")
def test_training_rebuilds_the_shipped_weights_byte_for_byte(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-m", "devtools.turns_train", str(tmp_path)], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, run.stderr[-2000:]
    shipped = REPO / "app" / "turns" / "end_of_turn_head.json"
    assert (tmp_path / "end_of_turn_head.json").read_bytes() == shipped.read_bytes()
