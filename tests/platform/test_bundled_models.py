"""The bundled SmolLM2, converted once to Q8_0 for llama.cpp's batched kernels."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from app.platform.bundled import fast_model, find_bundled_model
from app.turns.words import WordsScorer
from tests.llm.test_embedded_server import needs_llama

FINISHED = ("Why are you interested in this role?", "What is the difference between a process and a thread?")
CUT = ("Why are you interested in", "What is the difference between a")


@pytest.mark.local_llm
@needs_llama
def test_the_model_is_converted_once_and_scores_as_shipped_near_enough(tmp_path: Path) -> None:
    stale = tmp_path / "SmolLM2-135M-Instruct.Q8_0-1-2.gguf"  # another package version's
    stale.write_bytes(b"old")
    fast = fast_model(tmp_path)
    assert fast is not None and fast.parent == tmp_path and fast.stat().st_size > 100_000_000
    assert not stale.exists() and not list(tmp_path.glob("*.tmp-*"))
    converted_at = fast.stat().st_mtime_ns
    assert fast_model(tmp_path) == fast and fast.stat().st_mtime_ns == converted_at  # once
    shipped, converted = WordsScorer(model_path=find_bundled_model()), WordsScorer(model_path=fast)
    assert converted._llm.metadata["general.file_type"] == "7"  # LLAMA_FTYPE_MOSTLY_Q8_0
    for text in FINISHED + CUT:  # 8-bit blocks made from 4-bit ones: the same scores, near enough
        assert abs(shipped.log_p_end(text) - converted.log_p_end(text)) < 1.0, text


@pytest.mark.local_llm
@needs_llama
def test_a_cache_folder_that_cannot_be_written_falls_back_to_the_shipped_file(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocked = tmp_path / "models"
    blocked.write_text("a file where the folder should be")
    with caplog.at_level(logging.WARNING, logger="app.platform.bundled"):
        assert fast_model(blocked) == find_bundled_model()
    assert "as shipped" in caplog.text
