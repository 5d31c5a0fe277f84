"""The compact prompt for the bundled model: facts, no history, and what it may not write."""

from __future__ import annotations

import importlib.util

import pytest

from app.platform.bundled import fast_model
from app.prompt.builder import DIGITS, NUMBER_WORDS, PromptBuilder

RESUME = """# Priya Raman
Backend engineer. Payments and data pipelines.

## Experience
- Led the migration of 40 services from Nomad to Kubernetes
- Replaced nightly batch jobs with a Kafka event pipeline
"""


def test_compact_sends_the_recalled_lines_as_facts_and_no_history() -> None:
    builder = PromptBuilder(None, RESUME, None, compact=True)
    builder.record_turn("earlier question", "earlier answer", key=1)
    messages = builder.messages("what did you use kafka for")
    assert messages[:-1] == builder.prefix_messages()  # the cached prefix, then one message
    assert messages[-1]["content"] == (
        "Facts:\n- Replaced nightly batch jobs with a Kafka event pipeline\n\n"
        "Question: what did you use kafka for")
    prefix = "\n".join(m["content"] for m in builder.prefix_messages())
    assert "Priya Raman\nBackend engineer." in prefix and "Nomad" not in prefix  # the head only
    assert not any(c.isdigit() for c in prefix.replace(RESUME, ""))  # few-shot: no figures
    assert PromptBuilder(None, None, None, compact=True).messages("hello")[-1]["content"] == (
        "Facts: none\n\nQuestion: hello")


def test_compact_bans_the_figures_the_facts_do_not_have() -> None:
    builder = PromptBuilder(None, RESUME, None, compact=True)
    free = builder.sampling("how do you handle stress")
    assert free is not None and free["logit_bias_type"] == "tokens" and free["repeat_penalty"] > 1.1
    assert set(free["logit_bias"]) == set(DIGITS) | {f" {w}" for w in NUMBER_WORDS}
    grounded = builder.sampling("tell me about the nomad migration")  # facts: "40 services"
    assert grounded is not None and not {"4", "0"} & set(grounded["logit_bias"])
    assert "1" in grounded["logit_bias"]
    assert " two" not in (builder.sampling("two things about you") or {})["logit_bias"]


def test_other_models_and_chinese_keep_the_full_prompt() -> None:
    assert PromptBuilder(None, RESUME, None).sampling("x") is None
    chinese = PromptBuilder(None, RESUME, None, language="zh", compact=True)
    assert not chinese.compact and chinese.sampling("x") is None


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or fast_model() is None,
                    reason="llama-cpp-python or the bundled model is not installed")
def test_every_banned_text_is_one_smollm2_token() -> None:
    """llama.cpp biases every token of a banned text: a two-token one would ban its parts
    (" " and "five"), and the model could no longer write a space."""
    import llama_cpp

    vocab = llama_cpp.Llama(model_path=str(fast_model()), vocab_only=True, verbose=False)
    for text in [*DIGITS, *(f" {w}" for w in NUMBER_WORDS)]:
        assert len(vocab.tokenize(text.encode(), add_bos=False, special=True)) == 1, text
