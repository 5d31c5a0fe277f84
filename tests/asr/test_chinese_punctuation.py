"""Chinese captions punctuated as Chinese: "，？！：；。" where Whisper wrote ASCII marks
after Chinese clauses, English clauses and tokens ("Node.js", "10:30") left as written."""

from __future__ import annotations

from pathlib import Path

import pytest
from faster_whisper import WhisperModel

import app.asr.decoder as decoder_module
from app.asr.decoder import WhisperDecoder
from app.asr.multilingual import ensure_multilingual_model
from app.asr.punctuation import chinese_punctuation
from app.core.config import TurnConfig
from app.turns.endpointer import Endpoint, Endpointer
from tests.speech import read_wav

DATA = Path(__file__).parents[1] / "data"


@pytest.mark.parametrize(("written", "read"), [
    ("我用过 Kubernetes, 也用过 Nomad.", "我用过 Kubernetes，也用过 Nomad。"),
    ("你用过 Kubernetes 吗?", "你用过 Kubernetes 吗？"),
    ("为什么要迁移到 CockroachDB?", "为什么要迁移到 CockroachDB？"),
    ("太好了!", "太好了！"),
    ("为什么?!", "为什么？！"),
    ("技术栈: Kubernetes; 数据库: CockroachDB", "技术栈：Kubernetes；数据库：CockroachDB"),
    ("OK, 我们开始吧.", "OK，我们开始吧。"),
    ("你用过 Kubernetes 吗? Nomad 呢?", "你用过 Kubernetes 吗？Nomad 呢？"),
    ("进程和线程有什么区别?", "进程和线程有什么区别？"),
])
def test_ascii_marks_ending_chinese_clauses_become_full_width(written: str, read: str) -> None:
    assert chinese_punctuation(written) == read


@pytest.mark.parametrize("text", [
    "What is Kubernetes? 请解释一下",  # an English sentence keeps its "?"
    "Tell me about yourself. 请用中文回答",
    "我们用 Node.js 写的",  # marks inside a token
    "版本 3.5 在 10:30 发布",
    "文档在 http://example.com 上",
    "嗯...然后呢",  # an ellipsis is no full stop
    "e.g. 这个",
    "Hello, world.",  # no Chinese at all
    "进程和线程有什么区别？",  # already Chinese
    "",
])
def test_english_and_tokens_keep_their_own_punctuation(text: str) -> None:
    assert chinese_punctuation(text) == text


def test_mixed_sentence_converts_only_its_chinese_clauses() -> None:
    assert chinese_punctuation("你好, how are you? 我很好.") == "你好，how are you? 我很好。"
    told = "Tell me about yourself. 请用中文回答"
    assert chinese_punctuation(told + ".") == told + "。"


def test_it_is_idempotent() -> None:
    for text in ("我用过 Kubernetes, 也用过 Nomad.", "What is Kubernetes? 请解释一下?", "为什么?!"):
        once = chinese_punctuation(text)
        assert chinese_punctuation(once) == once


# --- where the text is produced: the decoder ---------------------------------------------


@pytest.fixture(scope="module")
def zh_decoder(tmp_path_factory: pytest.TempPathFactory) -> WhisperDecoder:
    folder = ensure_multilingual_model(tmp_path_factory.mktemp("cache") / "models")
    return WhisperDecoder(WhisperModel(str(folder), device="cpu", compute_type="int8", cpu_threads=2), "zh")


def test_the_decoder_writes_chinese_punctuation(zh_decoder: WhisperDecoder,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt in ASCII punctuation makes Whisper end the real question with "?"; the
    caption (and so the prompt and the export, which take the pass's text) reads "？"."""
    clip = read_wav(DATA / "zh-question.wav")
    styled = "你好, 我们开始吧? 好的!"
    caption = zh_decoder.decode(clip, styled).text
    monkeypatch.setattr(decoder_module, "chinese_punctuation", lambda text: text)
    raw = zh_decoder.decode(clip, styled).text
    assert raw.endswith("?"), raw  # what Whisper wrote
    assert caption == raw[:-1] + "？", caption


# --- the endpointer still hears the question --------------------------------------------


def _endpoint_after(*partials: str) -> float | None:
    ep = Endpointer(TurnConfig(), "zh")
    ep.speech_started(1, 0.5)
    t = 0.5
    while t < 2.0 - 1e-9:
        t = min(round(t + 0.03, 3), 2.0)
        ep.voiced(t)
        ep.tick(t)
    for i, text in enumerate(partials):
        ep.partial(1, text, "", 2.0 - 0.1 * (len(partials) - 1 - i), 2.0)
    while t < 3.5:
        t = round(t + 0.03, 3)
        if any(isinstance(d, Endpoint) for d in ep.tick(t)):
            return round(t - 2.0, 2)
    return None


def test_a_full_width_question_mark_still_ends_the_question() -> None:
    """"？" made from "?" is the question ending the endpointer knows: twice in a row, the
    turn ends at the question wait, as with the ASCII mark and sooner than with none."""
    ascii_marks = ("你在生产环境用过 Kubernetes?", "你在生产环境用过 Kubernetes 集群?")
    converted = tuple(chinese_punctuation(p) for p in ascii_marks)
    assert all(p.endswith("？") for p in converted)
    asked = _endpoint_after(*converted)
    assert asked is not None and asked == _endpoint_after(*ascii_marks)
    unmarked = _endpoint_after(*(p[:-1] for p in ascii_marks))
    assert unmarked is not None and asked < unmarked
