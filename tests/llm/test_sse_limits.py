"""An endpoint that never stops ends the answer with one clear error, the text so far kept.

Real SDK, real sockets, the test server's hostile streams: an answer that ignores
``max_tokens`` and one SSE line of 10 MB.  Memory is measured (``tracemalloc``, the
client's and the server's), not inferred: the line must never be held whole.  Then
generated streams (Hypothesis): any chunking, garbage lines, lines past the limit,
invalid JSON, chunks missing their fields — the reader yields the answer's text, or what
came before the fault and one :class:`LlmError`, never anything else.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import tracemalloc
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai._streaming import _SSELineDecoder

from app.answer.engine import AnswerEngine, AnswerTarget
from app.core.clock import SessionClock
from app.core.config import Settings
from app.core.events import AnswerDoneEvent, ErrorEvent, EventBus, FinalEvent
from app.llm.client import ClientTuning, Delta, LlmClient
from app.llm.errors import LlmError
from app.llm.limits import MAX_SSE_EVENT_BYTES, EventSizeGuard, StreamTooLarge, answer_cap
from app.prompt.builder import PromptBuilder
from devtools.fake_server import FakeServer, Fault, Profile
from tests.conftest import EventRecorder
from tests.patience import NEVER_S

KEY = "test-key"
MODEL = "gpt-4o-mini"
MAX_TOKENS = 300
HUGE = 10 * 2**20


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(Profile(answer_tokens=40), api_key=KEY) as s:
        yield s


async def _read(url: str, *, max_tokens: int = MAX_TOKENS) -> tuple[str, LlmError | None]:
    """The text the client yielded, and the error that ended it (None: it finished)."""
    client = LlmClient(url, KEY, MODEL, ClientTuning(rewarm_idle_s=None, first_token_timeout=10.0))
    text: list[str] = []
    try:
        stream = client.stream_chat([{"role": "user", "content": "Tell me everything."}],
                                    max_tokens=max_tokens, temperature=0.0, extra_requests=0)
        async with contextlib.aclosing(stream):
            async for item in stream:
                if isinstance(item, Delta):
                    text.append(item.text)
    except LlmError as exc:
        return "".join(text), exc
    finally:
        await client.aclose()
    return "".join(text), None


async def test_an_answer_that_never_ends_is_cut_at_the_cap(server: FakeServer) -> None:
    server.faults.append(Fault("endless", size=20_000))  # ~120 000 characters if read to the end
    text, error = await _read(server.start())
    cap = answer_cap(MAX_TOKENS)
    assert error is not None and error.kind == "stream_cut", error
    assert f"cut at {cap:,} characters" in error.message and "kept streaming" in error.message
    assert cap - 20 < len(text) <= cap  # what arrived is kept, up to the cap
    assert server.wait_for(lambda s: s.chat_requests()[0].cancelled, NEVER_S)  # the stream was closed


@pytest.mark.parametrize("after_tokens", [0, 3])
async def test_a_10_mb_line_ends_in_bounded_memory(server: FakeServer, after_tokens: int) -> None:
    server.faults.append(Fault("huge_line", after_tokens=after_tokens, size=HUGE))
    tracemalloc.start()
    try:
        text, error = await _read(server.start())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(error, StreamTooLarge), error
    assert "passed 1 MB" in error.message
    assert len(text.split()) == after_tokens  # the answer so far is kept
    assert peak < 6 * 2**20, f"peak {peak / 2**20:.1f} MiB while reading a {HUGE / 2**20:.0f} MiB line"


async def test_an_ordinary_answer_is_untouched(server: FakeServer) -> None:
    text, error = await _read(server.start())
    assert error is None and len(text.split()) == 40


def test_the_engine_reports_the_cut_and_keeps_the_answer(server: FakeServer) -> None:
    server.faults.append(Fault("endless", size=20_000, times=5))
    bus, rec = EventBus(), EventRecorder()
    bus.subscribe(rec)
    base_url = server.start()
    settings = Settings()
    prompt = PromptBuilder(None, None, None)
    engine = AnswerEngine(settings, bus, SessionClock(), lambda language: prompt,
                          lambda: LlmClient(base_url, KEY, MODEL), target=AnswerTarget(MODEL, "test"))
    bus.subscribe(engine.on_event)
    engine.start()
    try:
        assert engine.warmed.wait(NEVER_S)
        bus.emit(FinalEvent(t=0.0, turn=1, text="Tell me everything.", audio_end=0.0, reused=True))
        rec.wait(lambda r: bool(r.of(AnswerDoneEvent)))
    finally:
        engine.stop()
    done = rec.of(AnswerDoneEvent)[0]
    errors = rec.of(ErrorEvent)
    assert len(errors) == 1 and "cut at" in errors[0].message and "kept streaming" in errors[0].message
    assert done.error == errors[0].message and done.truncated
    assert 0 < len(done.text) <= answer_cap(settings.llm.max_tokens) and done.text == rec.shown(1)


@pytest.mark.parametrize(("body", "fits"), [
    (b"data: " + b"x" * 100 + b"\n\n", True),
    (b"data: " + b"x" * 200 + b"\n\n", False),  # one line
    (b"data: " + b"x" * 60 + b"\ndata: " + b"y" * 60 + b"\n\n", False),  # one event of two lines
    ((b"data: " + b"x" * 60 + b"\n\n") * 10, True),  # many events, each small
    ((b"data: " + b"x" * 60 + b"\r\n\r\n") * 10, True),  # CRLF
    ((b"data: " + b"x" * 60 + b"\r\r") * 10, True),  # CR
])
@pytest.mark.parametrize("piece", [1, 2, 7, 1000])
def test_the_guard_counts_events_as_the_sdk_splits_them(body: bytes, fits: bool, piece: int) -> None:
    guard = EventSizeGuard(limit=128)
    try:
        for i in range(0, len(body), piece):
            guard.feed(body[i:i + piece])
    except StreamTooLarge:
        assert not fits
    else:
        assert fits


# --- generated streams ----------------------------------------------------------------------

LINE = st.binary(max_size=40).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))
"""One line's bytes, without its end."""


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.tuples(LINE, st.sampled_from([b"\n", b"\r", b"\r\n"])), max_size=20), tail=LINE,
       cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12))
def test_the_guard_agrees_with_the_sdks_own_line_splitting(lines: list[tuple[bytes, bytes]], tail: bytes,
                                                           cuts: list[int]) -> None:
    """Oracle: the SDK's line decoder over the whole body; an event is the lines between
    blank ones (the last, unended line included: the SDK holds it)."""
    body = b"".join(text + end for text, end in lines) + tail
    limit = 64
    split = _SSELineDecoder()
    seen = [*split.feed(body), *split.finish()]
    biggest = event = 0
    for line in seen:
        event = 0 if not line else event + len(line)
        biggest = max(biggest, event)
    guard = EventSizeGuard(limit)
    points = [0, *sorted(c for c in cuts if c < len(body)), len(body)]
    try:
        for start, end in itertools.pairwise(points):
            guard.feed(body[start:end])
    except StreamTooLarge:
        assert biggest > limit
    else:
        assert biggest <= limit


BENIGN_JSON = [b'{"choices": []}', b'{"choices": [{}]}', b'{"choices": [{"index": 0, "delta": {}}]}',
               b'{"choices": [{"index": 0, "delta": null}]}',
               b'{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}']
"""Chunks without content: the reader goes on."""
FATAL_JSON = [b"{}", b"42", b"null", b"[1, 2]", b'"text"', b'{"choices": "x"}',
              b'{"choices": [{"index": 0, "delta": {"content": 5}}]}', b'{"error": {"message": "boom"}}']
"""Valid JSON that is no chunk, or a chunk whose fields are missing or of the wrong type."""

ITEMS = st.one_of(
    st.text(max_size=12).filter(bool).map(lambda t: ("text", t)),
    st.just(("comment", "")),
    st.sampled_from(BENIGN_JSON).map(lambda b: ("benign", b.decode())),
    st.sampled_from(FATAL_JSON).map(lambda b: ("fatal", b.decode())),
    st.text(alphabet="abcxyz<>!#", min_size=1, max_size=20).map(lambda t: ("fatal", t)),  # not JSON
    st.binary(min_size=1, max_size=8).map(lambda b: ("binary", bytes(0x80 | x for x in b).hex())),
    st.just(("huge", "")),
)


def _sse(kind: str, value: str) -> bytes:
    if kind == "text":
        chunk = {"choices": [{"index": 0, "delta": {"content": value}}]}
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"
    if kind == "comment":
        return b": keep-alive\n\n"
    if kind == "binary":
        return b"data: " + bytes.fromhex(value) + b"\n\n"  # not UTF-8
    if kind == "huge":
        return b"data: " + b"x" * (MAX_SSE_EVENT_BYTES + 1) + b"\n\n"
    return b"data: " + value.encode() + b"\n\n"


FINISH = b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'


@pytest.fixture(scope="module")
def raw_server() -> Iterator[FakeServer]:
    with FakeServer(Profile(), api_key=KEY) as s:
        yield s


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(ITEMS, max_size=8), ended=st.booleans(), cuts=st.lists(st.integers(0, 400), max_size=6))
def test_a_generated_stream_yields_text_or_one_clear_error(
        raw_server: FakeServer, items: list[tuple[str, str]], ended: bool, cuts: list[int]) -> None:
    body = b"".join(_sse(kind, value) for kind, value in items) + (FINISH if ended else b"")
    raw_server.faults.append(Fault("raw", payload=body, splits=tuple(cuts)))
    text, error = asyncio.run(_read(raw_server.start()))  # any other exception fails the test
    fatal = next((i for i, (kind, _) in enumerate(items) if kind in ("fatal", "binary", "huge")), None)
    before = "".join(value for kind, value in items[:fatal] if kind == "text")
    if fatal is not None:
        assert error is not None and text == before, (items, text, error)
        if items[fatal][0] == "huge":
            assert isinstance(error, StreamTooLarge)
    elif not ended:
        assert error is not None and text == before  # the stream ended early
    else:
        assert error is None and text == before
