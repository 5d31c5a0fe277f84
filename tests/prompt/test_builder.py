"""Prompt layout: byte-stable prefix, append-only history, whole-block trimming."""

from __future__ import annotations

import json
import re

import pytest

from app.prompt.builder import PromptBuilder, cache_key, estimate_tokens, serialise

RESUME = "Jane Doe\nBackend engineer at Initech (2019-2024): Python, Postgres, Kubernetes."
JD = "Senior Backend Engineer at Globex: design APIs, mentor engineers."
CJK = re.compile("[\u4e00-\u9fff]")


def _history_bytes(builder: PromptBuilder) -> bytes:
    return serialise(builder.history_messages())


def test_prefix_bytes_identical_across_turns() -> None:
    builder = PromptBuilder(None, RESUME, JD, max_turns=20)
    first = builder.messages("tell me about yourself")
    prefix_turn1 = builder.stable_prefix_bytes()
    for i in range(1, 10):
        builder.record_turn(f"question {i}", f"- answer {i}\nDetail {i}.")
    tenth = builder.messages("why globex")
    assert builder.stable_prefix_bytes() == prefix_turn1
    n = len(builder.prefix_messages())
    assert serialise(first[:n]) == serialise(tenth[:n]) == prefix_turn1


def test_each_request_extends_the_previous_one_byte_for_byte() -> None:
    builder = PromptBuilder(None, RESUME, JD, max_turns=20)
    previous_request = builder.messages("q0")
    previous_history = _history_bytes(builder)
    for i in range(12):
        builder.record_turn(f"q{i}", f"a{i}")
        request = builder.messages(f"q{i + 1}")
        history = _history_bytes(builder)
        # Turn N+1's history starts with turn N's history bytes (minus the closing "]").
        assert history.startswith(previous_history[:-1])
        # Turn N's whole request (its question included) is a prefix of turn N+1's request.
        assert request[: len(previous_request)] == previous_request
        assert serialise(request).startswith(serialise(previous_request)[:-1])
        previous_request, previous_history = request, history


def test_current_question_is_last_and_stripped() -> None:
    builder = PromptBuilder(None, RESUME, None)
    builder.record_turn("q1", "a1")
    messages = builder.messages("  what is your biggest weakness  ")
    assert messages[-1] == {"role": "user", "content": "what is your biggest weakness"}
    assert messages[-3:-1] == [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
    ]
    with pytest.raises(ValueError):
        builder.messages("   ")


def test_roles_alternate_after_system() -> None:
    builder = PromptBuilder(None, RESUME, JD)
    for i in range(3):
        builder.record_turn(f"q{i}", f"a{i}")
    roles = [m["role"] for m in builder.messages("next")]
    assert roles[0] == "system"
    assert roles[1:] == ["user", "assistant"] * ((len(roles) - 2) // 2) + ["user"]


def test_history_dropped_only_in_whole_blocks() -> None:
    builder = PromptBuilder(None, None, None, max_turns=6)
    oldest_seen: list[str] = []
    for i in range(1, 31):
        builder.record_turn(f"q{i}", f"a{i}")
        turns = builder.turns
        assert 1 <= len(turns) <= 6
        assert [t.question for t in turns] == [f"q{j}" for j in range(i - len(turns) + 1, i + 1)]
        if not oldest_seen or oldest_seen[-1] != turns[0].question:
            oldest_seen.append(turns[0].question)
    # Trims happen at turns 7, 10, 13, …, each dropping 3 turns at once: 8 prefix changes in
    # 30 turns, where a sliding window would have changed the prefix 24 times.
    assert len(oldest_seen) == 9
    assert oldest_seen[:3] == ["q1", "q4", "q7"]


def test_history_stable_between_trims() -> None:
    builder = PromptBuilder(None, None, None, max_turns=4)
    for i in range(5):  # trimmed once at turn 5: q3, q4, q5 remain
        builder.record_turn(f"q{i + 1}", f"a{i + 1}")
    before = _history_bytes(builder)
    builder.record_turn("q6", "a6")  # 4 turns: no trim, history only grows
    assert _history_bytes(builder).startswith(before[:-1])


def test_zero_and_one_max_turns() -> None:
    none = PromptBuilder(None, None, None, max_turns=0)
    none.record_turn("q", "a")
    assert none.turns == () and none.messages("x")[-1]["content"] == "x"
    one = PromptBuilder(None, None, None, max_turns=1)
    one.record_turn("q1", "a1")
    one.record_turn("q2", "a2")
    assert [t.question for t in one.turns] == ["q2"]
    with pytest.raises(ValueError):
        PromptBuilder(None, None, None, max_turns=-1)


def test_blank_turns_not_recorded() -> None:
    builder = PromptBuilder(None, None, None)
    builder.record_turn("q", "   ")
    builder.record_turn("", "a")
    assert builder.turns == ()


def test_context_message_contains_documents_and_is_omitted_when_absent() -> None:
    with_docs = PromptBuilder(None, RESUME, JD)
    context = with_docs.prefix_messages()[-2]["content"]
    assert RESUME in context and JD in context
    assert context.index(RESUME) < context.index(JD)
    assert with_docs.prefix_messages()[-1]["role"] == "assistant"

    bare = PromptBuilder(None, None, "  ")
    assert not any(RESUME in m["content"] for m in bare.prefix_messages())
    assert len(bare.prefix_messages()) == len(with_docs.prefix_messages()) - 2

    only_resume = PromptBuilder(None, RESUME, None).prefix_messages()[-2]["content"]
    assert "résumé" in only_resume and "job description" not in only_resume


def test_english_few_shot_by_default_chinese_for_zh() -> None:
    english = PromptBuilder(None, None, None).prefix_messages()
    assert len(english) == 5  # system + 2 example pairs
    assert not any(CJK.search(m["content"]) for m in english[1:])
    assert "Answer in English." in english[0]["content"]
    for language in ("zh", "zh-CN", "zh_TW"):
        chinese = PromptBuilder(None, RESUME, JD, language=language).prefix_messages()
        examples = chinese[1:5]
        assert all(CJK.search(m["content"]) for m in examples)
        assert "中文回答" in chinese[0]["content"]  # the Chinese prompt, in Chinese
        assert CJK.search(chinese[-2]["content"])  # context framing in Chinese too


def test_builtin_system_prompt_rules() -> None:
    prompt = PromptBuilder(None, None, None).system_prompt
    for needle in ("speech recognition", "first person", "bullet", "Sure!", "Never invent"):
        assert needle in prompt
    assert "{" not in prompt  # fully formatted


def test_custom_system_prompt_replaces_builtin() -> None:
    custom = "You are a terse coach. Reply in five words."
    messages = PromptBuilder(custom, RESUME, JD).messages("hi")
    assert messages[0] == {"role": "system", "content": custom}
    assert sum(m["role"] == "system" for m in messages) == 1
    builtin = PromptBuilder(None, None, None).system_prompt
    assert PromptBuilder("   ", None, None).system_prompt == builtin
    no_examples = PromptBuilder(custom, None, None, few_shot=False).messages("hi")
    assert [m["role"] for m in no_examples] == ["system", "user"]


def test_returned_messages_are_copies() -> None:
    builder = PromptBuilder(None, RESUME, JD)
    before = builder.stable_prefix_bytes()
    builder.messages("q")[0]["content"] = "tampered"
    builder.prefix_messages()[1]["content"] = "tampered"
    assert builder.stable_prefix_bytes() == before


def test_prefix_bytes_are_json_of_prefix_messages() -> None:
    builder = PromptBuilder(None, RESUME, JD, language="zh")
    data = builder.stable_prefix_bytes()
    assert json.loads(data) == builder.prefix_messages()
    assert "简历".encode() in data  # UTF-8, not \\u escapes: what the HTTP body carries


def test_same_inputs_same_bytes() -> None:
    a = PromptBuilder(None, RESUME, JD).stable_prefix_bytes()
    b = PromptBuilder(None, RESUME, JD).stable_prefix_bytes()
    assert a == b
    assert PromptBuilder(None, RESUME + ".", JD).stable_prefix_bytes() != a


def test_cache_key() -> None:
    builder = PromptBuilder(None, RESUME, JD)
    key = cache_key("session-1", builder.prefix_messages())
    assert re.fullmatch(r"icp-[0-9a-f]{16}", key)
    assert key == cache_key("session-1", builder.stable_prefix_bytes())
    builder.record_turn("q", "a")
    assert key == cache_key("session-1", builder.prefix_messages())  # history doesn't matter
    assert key != cache_key("session-2", builder.prefix_messages())
    other = PromptBuilder(None, RESUME, None)
    assert key != cache_key("session-1", other.prefix_messages())
    assert "session-1" not in key


def test_estimate_tokens() -> None:
    english = [{"role": "user", "content": "a" * 400}]
    assert estimate_tokens(english) == 3 + 4 + 100
    chinese = [{"role": "user", "content": "你好世界。"}]
    assert estimate_tokens(chinese) == 3 + 4 + 5
    mixed = [{"role": "user", "content": "用 Kubernetes"}]  # 1 CJK + 11 Latin chars
    assert estimate_tokens(mixed) == 3 + 4 + 1 + 3
    parts = [{"role": "user", "content": [{"type": "text", "text": "a" * 40}]}]
    assert estimate_tokens(parts) == 3 + 4 + 10
    assert estimate_tokens([]) == 3
    full = PromptBuilder(None, RESUME, JD).messages("tell me about yourself")
    total_chars = sum(len(m["content"]) for m in full)
    assert total_chars / 5 < estimate_tokens(full) < total_chars / 2
