"""Readers of session files skip a malformed line with one warning and keep the rest
(issue 54, item 6): torn lines, garbage, and valid JSON of the wrong shape, which crashed
both the sessions viewer and the Markdown export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core import events as ev
from app.core.events import to_json
from app.observing.session_files import export_markdown, load_session

GOOD = [
    ev.FinalEvent(t=1.0, turn=1, text="What is a B-tree?", audio_end=1.0),
    ev.TokenEvent(t=1.6, turn=1, request=1, text="A balanced tree."),
    ev.AnswerDoneEvent(t=1.9, turn=1, request=1, text="A balanced tree."),
    ev.FinalEvent(t=5.0, turn=2, text="Why us?", audio_end=5.0),
]

WRONG_SHAPE = [
    {"event": "final", "t": 2.0, "turn": 3, "text": 123, "audio_end": 2.0},
    {"event": "final", "t": 2.0, "turn": [1], "text": "x", "audio_end": 2.0},
    {"event": "final", "t": None, "turn": 3, "text": "x", "audio_end": 2.0},
    {"event": "final", "t": 2.0, "turn": 3, "text": "x", "audio_end": 2.0, "speaker": "nobody"},
    {"event": "token", "t": 2.0, "turn": 1, "request": 1, "text": {"a": 1}},
    {"event": "answer_done", "t": 2.0, "turn": 1, "request": 1, "text": "x", "usage": 5},
    {"event": "answer_done", "t": 2.0, "turn": 1, "request": 1, "text": "x",
     "usage": {"prompt_tokens": "many"}},
    {"event": "recall", "t": 2.0, "turn": 1, "lines": "abc"},
    {"event": "recall", "t": 2.0, "turn": 1, "lines": [{"text": 5, "source": "resume", "score": 1.0}]},
    {"event": ["final"], "t": 2.0},
    [1, 2, 3],
    "final",
    42,
]

GARBAGE = ['{"event": "final", "t": 2.0, "tu', "\x1f\x8b\x08\x00garbage\xff", "[" * 100_000]


@pytest.fixture
def session(tmp_path: Path) -> Path:
    path = tmp_path / "session-20261206-210000-000.jsonl"
    good = [to_json(e) for e in GOOD]
    bad = [json.dumps(d) for d in WRONG_SHAPE] + GARBAGE
    lines = [line for pair in zip(good, bad, strict=False) for line in pair] + bad[len(good):]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_every_malformed_line_is_skipped_and_counted(session: Path) -> None:
    read = load_session(session)
    assert read.events == GOOD
    assert read.skipped == len(WRONG_SHAPE) + len(GARBAGE)


def test_the_export_keeps_the_rest_and_warns_once(session: Path) -> None:
    text = export_markdown(session)
    assert "What is a B-tree?" in text and "A balanced tree." in text and "Why us?" in text
    assert text.count("unreadable line(s) skipped") == 1
    assert f"_{len(WRONG_SHAPE) + len(GARBAGE)} unreadable line(s) skipped" in text
