"""A Mandarin pause set: interview questions with pauses inside them, for ``bench turns --pauses``.

``dev-pauses`` is English; ``dev-zh`` has no pause inside a question.  This writes a corpus
in their format (WAVs + ``manifest.json`` with ``pauses``) from 24 Mandarin questions written
for it, none of them a ``dev-zh`` sentence, spoken by espeak-ng's Mandarin voice with five
variants and rates (the characters are turned into tone-numbered pinyin by ``pypinyin``,
the ``dev`` extra: Debian's espeak-ng has no dictionary of characters, and reads them as
digits).  The pauses are of the kinds interviewers make: after an unfinished
clause, after a filler (嗯, 那个), between the items of a list, after a preamble
(a statement, then the question), and after a finished question they then change; four
questions have none::

    python -m devtools.bench.pauses_zh /tmp/zh-pauses
    interview-copilot bench turns --pauses --corpus /tmp/zh-pauses --modes product,rules

Measure on it; never tune on it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from devtools.bench.pause_set import Audio, Clip, write_set
from devtools.bench.synth import speak

VOICES = tuple(f"espeak:cmn-latn-pinyin{variant}" for variant in ("", "+f3", "+m3", "+f2", "+m1"))
RATES = (250, 230, 270, 240, 260)
"""espeak-ng's words per minute for each voice (175 is its default): five speakers."""

QUESTIONS: tuple[tuple[str | float, ...], ...] = (
    # an unfinished clause, then the rest
    ("你能不能给我讲一下", 0.6, "你上一个项目的整体架构？"),
    ("我想了解一下你平时", 0.8, "是怎么做代码评审的。"),
    ("如果线上服务突然变慢，", 1.0, "你会先从哪里开始排查？"),
    ("请你说一说", 0.5, "你对微服务拆分的看法。"),
    ("在你负责的系统里，", 0.9, "最难解决的一个问题是什么？"),
    # a filler, then the rest
    ("那个，", 0.7, "你为什么想离开现在的公司？"),
    ("你对，嗯，", 1.1, "单元测试是怎么理解的？"),
    ("你们团队的，嗯，", 0.6, "发布流程是什么样的？"),
    ("就是说，", 0.8, "你平时怎么安排自己的学习时间呢？"),
    # the items of a list
    ("你用过Redis、", 0.6, "Kafka、", 0.5, "还是RabbitMQ？"),
    ("请比较一下进程、", 0.8, "线程", 0.5, "和协程的区别。"),
    ("你熟悉Java、", 1.0, "Go", 0.6, "还是Python？"),
    # a preamble (a statement), then the question
    ("我们的系统全部部署在云上。", 1.0, "你有云原生的经验吗？"),
    ("这个岗位需要经常出差。", 0.8, "你能接受吗？"),
    ("我们先聊聊数据库。", 1.1, "索引为什么能让查询变快？"),
    ("你简历上写了带过团队。", 0.6, "团队有多少人？"),
    ("我们的用户量增长很快，", 0.9, "你会怎么设计缓存？"),
    # a finished question, then a change or a rider
    ("你做过性能优化吗？", 0.8, "我是说在生产环境里。"),
    ("你最大的优点是什么？", 1.0, "还有缺点呢？"),
    ("你了解分布式锁吗？", 0.6, "比如用Redis实现的那种。"),
    # none
    ("你期望的薪资是多少？",),
    ("你什么时候可以入职？",),
    ("你为什么选择我们公司？",),
    ("你有什么问题想问我们吗？",),
)
"""Each question: its parts, with the pause (s) between them; the whole text is the parts
joined.  Pauses of 0.5-1.1 s, as in ``dev-pauses``."""

_PUNCTUATION = str.maketrans({"，": ", ", "、": ", ", "？": "? ", "。": ". ", "！": "! "})


def pinyin(text: str) -> str:
    """``text`` as espeak-ng's pinyin voice reads it: "你好？" → "ni3 hao3?"; Latin words
    (Redis, Java) are left as they are."""
    try:
        from pypinyin import Style, lazy_pinyin
    except ImportError:
        raise SystemExit("the Mandarin pause set needs pypinyin: "
                         "pip install 'interview-copilot[dev]'") from None
    syllables = lazy_pinyin(text, style=Style.TONE3, neutral_tone_with_five=True)
    return " ".join(syllables).translate(_PUNCTUATION).replace(" ,", ",").replace(" ?", "?").strip()


def build(out: Path) -> None:
    clips = []
    for number, parts in enumerate(QUESTIONS):
        voice, rate = VOICES[number % len(VOICES)], RATES[number % len(RATES)]
        clips.append(Clip(parts, f"{voice}@{rate}", _in_pinyin(voice, rate)))
    write_set(out, clips, joiner="")


def _in_pinyin(voice: str, rate: int) -> Callable[[str], Audio]:
    return lambda text: speak(pinyin(text), voice, rate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    build(parser.parse_args().out)


if __name__ == "__main__":
    main()
