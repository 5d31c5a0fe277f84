"""Markers of more to come ("Actually.", "I mean", 另外) hold the end of the turn as a
thinking word does: read from the per-language word table, punctuation aside."""

from __future__ import annotations

import pytest

from app.core.config import TurnConfig
from app.turns.endpointer import Endpoint, Endpointer, OpenTurn
from tests.turns.test_policy import speak_until


def cues_trailing(text: str, language: str = "en", cfg: TurnConfig | None = None) -> bool:
    ep = Endpointer(cfg or TurnConfig(), language)
    return ep.cues(OpenTurn(id=1, last_voiced_end=1.0, text=text)).trailing


@pytest.mark.parametrize("text", [
    "What is the difference between TCP and UDP? Actually.",
    "How do you test your code? Sorry,",
    "Tell me about your last project. I mean",
    "Which database would you pick, or rather",
    "What did you build there, and also",
    "How did you handle it? Well,",
    "Well.",
])
def test_a_question_followed_by_a_marker_is_a_thinking_pause(text: str) -> None:
    assert cues_trailing(text)


@pytest.mark.parametrize("text", [
    "What did you do there, actually?",  # the "?" closes it: it asks
    "How well?",
    "Do you know Kubernetes well?",
    "Do you know Kubernetes well.",  # no clause boundary before a one-word marker
    "What was your farewell",
    "What is the difference between TCP and UDP?",
])
def test_a_marker_that_ends_the_question_holds_nothing(text: str) -> None:
    assert not cues_trailing(text)


def test_chinese_markers_follow_anything() -> None:
    assert cues_trailing("进程和线程有什么区别？另外。", "zh")
    assert cues_trailing("你用过Redis吗？我的意思是", "zh")
    assert cues_trailing("说说你的项目，就是说", "zh")
    assert not cues_trailing("进程和线程有什么区别？", "zh")


def test_the_markers_are_the_word_tables_not_a_rule() -> None:
    mine = TurnConfig.model_validate({"words": {"en": {"more_words": ["anyway"]}}})  # [turns.words.en]
    assert cues_trailing("What is a closure? Anyway,", cfg=mine)
    assert not cues_trailing("What is a closure? Actually.", cfg=mine)
    none = TurnConfig.model_validate({"words": {"en": {"more_words": []}}})
    assert not cues_trailing("What is the difference between TCP and UDP? Actually.", cfg=none)


def test_a_marker_after_a_finished_question_waits_the_thinking_pause() -> None:
    cfg = TurnConfig()
    ep = Endpointer(cfg, "en")
    ep.expect_words(True)
    ep.speech_started(1, 0.5)
    speak_until(ep, 2.0)
    text = "What is the difference between TCP and UDP? Actually."
    ep.partial(1, text, "", 2.0, 2.05)
    # even words the model called finished: the marker says more is coming
    ep.end_of_turn_scores(1, text, 2.0, 2.08, words_logp=-4.0)
    ends = [t for t in (2.5, 2.9, 3.3) if any(isinstance(d, Endpoint) for d in ep.tick(t))]
    assert ends == []
    wait = ep.wait()
    assert wait is not None
    assert (wait.verdict, wait.endpoint_ms) == ("thinking", cfg.endpoint_thinking_silence_ms)


@pytest.mark.parametrize("text", ["你为什么？", "那你是怎么", "我们为什么。", "所以您是怎么？"])
def test_mandarin_why_or_how_before_its_verb_is_a_thinking_pause(text: str) -> None:
    """为什么 and 怎么 stand before the verb: "你为什么……想加入我们？" is one question."""
    assert cues_trailing(text, "zh")


@pytest.mark.parametrize("text", ["这是为什么？", "为什么？", "你怎么看？", "你为什么想加入我们公司？",
                                  "你是怎么做技术选型的？"])
def test_a_mandarin_why_or_how_with_its_verb_or_standing_alone_holds_nothing(text: str) -> None:
    assert not cues_trailing(text, "zh")


def test_a_why_before_its_verb_is_not_ended_by_the_question_rule() -> None:
    """The recogniser's "？" after "你为什么" closed the turn at the question wait (400 ms),
    and an answer to "Why are you?" showed until the interviewer went on."""
    cfg = TurnConfig()
    ep = Endpointer(cfg, "zh")
    ep.speech_started(1, 0.5)
    speak_until(ep, 1.2)
    for at in (1.3, 1.45):  # pass after pass hears the same "question"
        ep.partial(1, "你为什么？", "", 1.2, at)
    ends = [t for t in (1.6, 1.7, 1.9) if any(isinstance(d, Endpoint) for d in ep.tick(t))]
    assert ends == []
    wait = ep.wait()
    assert wait is not None and wait.verdict == "thinking"


def test_endings_that_lack_their_verb_are_the_word_tables_and_whole_words() -> None:
    mine = TurnConfig.model_validate({"words": {"en": {"verb_pending": ["why did you"]}}})
    assert cues_trailing("So, why did you?", cfg=mine)
    assert not cues_trailing("Why did you leave?", cfg=mine)
    assert not cues_trailing("Why did you?")  # English has none: the words model reads them
    assert cues_trailing("你 为什么？", "zh")  # the recogniser's spaces between Chinese words
