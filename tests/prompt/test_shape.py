"""The small model's answer shape, enforced on the stream: bullets, repeats, words."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from app.llm.client import Delta, Done, RequestTiming, StreamItem
from app.prompt.shape import ReplyShape, ShapeGuard

SHAPE = ReplyShape(max_bullets=3, max_words=60)


def _feed(text: str, shape: ReplyShape = SHAPE, step: int = 3) -> tuple[str, ShapeGuard]:
    """Stream ``text`` in small pieces, as tokens arrive."""
    guard = ShapeGuard(shape)
    shown = "".join(guard.feed(text[i:i + step]) for i in range(0, len(text), step))
    return shown + guard.finish(), guard


def test_a_repeated_line_ends_the_answer_before_it_shows() -> None:
    shown, guard = _feed("- I led the team\n- I wrote the plan\n- I led the team\n- I led the team\n")
    assert shown == "- I led the team\n- I wrote the plan\n"
    assert guard.stopped and guard.reason == "repeat"


def test_a_line_that_only_starts_like_an_earlier_one_is_shown_whole() -> None:
    shown, guard = _feed("- I led the team\n- I led the team through a migration\n")
    assert shown == "- I led the team\n- I led the team through a migration\n"
    assert not guard.stopped


def test_at_most_three_bullets_and_one_sentence_after_them() -> None:
    text = "- one thing\n- two things\n- three things\n- four things\n"
    shown, guard = _feed(text)
    assert shown == "- one thing\n- two things\n- three things\n" and guard.reason == "bullets"
    shown, guard = _feed("- a b\n- c d\nSo that is it.\nAnd another thing.\n")
    assert shown == "- a b\n- c d\nSo that is it.\n" and guard.reason == "lines"
    shown, guard = _feed("1. first\n2. second\n3. third\n4. fourth")
    assert shown == "1. first\n2. second\n3. third\n"


def test_the_word_cap_cuts_at_a_word() -> None:
    shown, guard = _feed("word " * 80, ReplyShape(max_bullets=3, max_words=10))
    assert shown.split() == ["word"] * 10 and guard.reason == "words"


def test_an_inactive_shape_passes_the_stream_through() -> None:
    async def source() -> AsyncGenerator[StreamItem, None]:
        yield Delta("x", 0.0)

    stream = source()
    assert ReplyShape().wrap(stream) is stream
    assert ReplyShape().tokens(300) == 300
    assert ReplyShape(max_tokens=96).tokens(300) == 96 and ReplyShape(max_tokens=96).tokens(50) == 50


async def test_the_wrapped_stream_stops_and_closes_its_source() -> None:
    closed: list[bool] = []
    timing = RequestTiming()

    async def source() -> AsyncGenerator[StreamItem, None]:
        try:
            yield Delta("-", 0.1, timing)
            for piece in (" a\n", "- b\n", "- a\n", "- c\n", "- d\n"):
                yield Delta(piece, 0.2)
            yield Done(None, "stop", timing)
        finally:
            closed.append(True)

    items = [item async for item in SHAPE.wrap(source())]
    assert "".join(i.text for i in items if isinstance(i, Delta)) == "- a\n- b\n"
    assert isinstance(items[0], Delta) and items[0].timing is timing  # the first shown keeps it
    assert not any(isinstance(i, Done) for i in items) and closed == [True]
