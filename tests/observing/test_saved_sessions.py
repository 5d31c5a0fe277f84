"""Session logs: per-event flushing, crash recovery, listing, and the Markdown export."""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from PIL import Image as PilImage

from app.core.events import (
    AnswerDoneEvent,
    CutEvent,
    EndpointEvent,
    Event,
    EventBus,
    FinalEvent,
    FirstTokenEvent,
    LevelEvent,
    PaintedEvent,
    PartialEvent,
    RequestEvent,
    RetractedEvent,
    SpeculationEvent,
    TokenEvent,
    TurnStatsEvent,
    Usage,
    VadEvent,
    WrittenQuestionEvent,
    to_json,
)
from app.observing.eventlog import EventLog
from app.observing.session_files import (
    SessionLog,
    event_from_dict,
    export_markdown,
    list_sessions,
    load_session,
    sessions_dir,
)
from tests.patience import NEVER_S

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def _turn_events() -> list[Event]:
    return [
        VadEvent(t=0.5, speech=True),
        LevelEvent(t=0.6, dbfs=-20.0),
        PartialEvent(t=1.0, turn=1, text="Tell me about", stable="Tell", audio_end=1.0),
        VadEvent(t=2.0, speech=False),
        RequestEvent(t=2.25, turn=1, request=1, kind="speculative", text="Tell me about you"),
        EndpointEvent(t=2.3, turn=1, reason="question", silence=0.3),
        FinalEvent(t=2.31, turn=1, text="Tell me about yourself?", audio_end=2.0),
        SpeculationEvent(t=2.32, turn=1, request=1, outcome="hit", similarity=1.0),
        FirstTokenEvent(t=2.5, turn=1, request=1, ttft=0.25),
        TokenEvent(t=2.51, turn=1, request=1, text="- I build"),
        PaintedEvent(t=2.52, turn=1, request=1, latency=0.01),
        TokenEvent(t=2.53, turn=1, request=1, text=" data tools.\n"),
        AnswerDoneEvent(t=2.6, turn=1, request=1, text="- I build data tools.\n",
                        usage=Usage(prompt_tokens=100, completion_tokens=10), cost=0.001),
        TurnStatsEvent(t=2.6, turn=1, requests=1, speculative_requests=1, hits=1, misses=0,
                       prompt_tokens=100, completion_tokens=10, wasted_prompt_tokens=0,
                       wasted_completion_tokens=0, cost=0.001, wasted_cost=0.0),
    ]


def test_log_is_written_per_event_in_the_data_dir(_data_home: Path) -> None:
    bus = EventBus()
    log = SessionLog()
    log.attach(bus)
    log.attach(bus)  # idempotent: no duplicate lines
    assert log.path.parent == _data_home / "interview-copilot" / "sessions" == sessions_dir()
    written = sum(event.name != "level" for event in _turn_events())
    for event in _turn_events():
        bus.emit(event)
    # flushed by the writer thread on its own (every FLUSH_INTERVAL_S): another reader sees
    # the lines before close.  The deadline only ends a wait that would otherwise be forever.
    deadline = time.monotonic() + NEVER_S
    while len(log.path.read_text(encoding="utf-8").splitlines()) < written and time.monotonic() < deadline:
        time.sleep(0.01)
    lines = log.path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == written
    assert all('"level"' not in line for line in lines)
    assert lines[0] == to_json(_turn_events()[0])
    assert any('"painted"' in line for line in lines) and any('"token"' in line for line in lines)
    log.close()
    bus.emit(VadEvent(t=9.0, speech=True))  # detached: nothing more is written
    assert len(log.path.read_text(encoding="utf-8").splitlines()) == written


def test_event_round_trip_through_the_wire_form() -> None:
    for event in _turn_events():
        again = event_from_dict(json.loads(to_json(event)))
        assert again == event
    assert event_from_dict({"event": "from_the_future", "t": 1}) is None
    assert event_from_dict({"event": "token", "t": 1}) is None  # missing fields


def test_truncated_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "session-20240102-030405-000.jsonl"
    lines = [to_json(e) for e in _turn_events() if e.name != "level"]
    path.write_text("\n".join(lines) + "\n" + lines[-1][:17], encoding="utf-8")
    session = load_session(path)
    assert session.skipped == 1
    assert len(session.events) == len(lines)
    assert "I build data tools." in export_markdown(path)


_CHILD = """
import sys, time
sys.path.insert(0, {root!r})
from app.core.events import EventBus, TokenEvent
from app.observing.session_files import SessionLog
bus = EventBus()
log = SessionLog()
log.attach(bus)
print(log.path, flush=True)
i = 0
while True:
    bus.emit(TokenEvent(t=i * 0.001, turn=1, request=1, text=f" w{{i}}" + "x" * 200))
    if i % 50 == 0:
        print(i, flush=True)
    i += 1
    time.sleep(0.0005)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_session_survives_sigkill(_data_home: Path) -> None:
    env = {**os.environ, "XDG_DATA_HOME": str(_data_home)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD.format(root=str(ROOT))],
                             stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        path = Path(child.stdout.readline().strip())
        deadline = time.monotonic() + NEVER_S
        emitted = 0
        while time.monotonic() < deadline and (not path.exists() or path.stat().st_size < 50_000):
            emitted = int(child.stdout.readline())
        # The child's writer flushes on its own (it is never closed): wait until what was
        # emitted up to here is in the file, however slowly this machine runs it, then kill.
        wanted = f'" w{emitted}' + "x" * 200 + '"'
        while time.monotonic() < deadline and wanted not in path.read_text(encoding="utf-8"):
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(5)
    session = load_session(path)
    assert session.skipped <= 1  # at most a torn last line
    texts = [e.text for e in session.events if isinstance(e, TokenEvent)]
    assert len(texts) > emitted >= 100
    assert texts == [f" w{i}" + "x" * 200 for i in range(len(texts))]  # nothing lost mid-file
    assert [s.path for s in list_sessions()] == [path]


class _StuckDisk(io.StringIO):
    """A disk whose writes block until ``release`` is set; ``stuck`` says one is waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.stuck = threading.Event()
        self.release = threading.Event()

    def write(self, s: str) -> int:
        self.stuck.set()
        assert self.release.wait(NEVER_S)
        return super().write(s)


def test_a_slow_disk_never_blocks_the_emitting_thread() -> None:
    """While the writer is stuck in a write, 200 more events are emitted and every emit
    returns: had one waited for the disk, ``emitted`` could only be set after the release."""
    disk = _StuckDisk()
    log = EventLog(disk, close_stream=False)
    try:
        log(TokenEvent(t=0, turn=1, request=1, text="w"))
        assert disk.stuck.wait(NEVER_S)  # the writer is inside the disk's write now
        emitted = threading.Event()

        def emit() -> None:
            for i in range(1, 201):
                log(TokenEvent(t=i, turn=1, request=1, text="w"))
            emitted.set()

        threading.Thread(target=emit, daemon=True).start()
        assert emitted.wait(NEVER_S) and not disk.release.is_set()
    finally:
        disk.release.set()
        log.close(timeout=NEVER_S)
    assert len(disk.getvalue().splitlines()) == 201 and log.dropped == 0


def test_a_full_disk_is_said_once_and_the_session_goes_on(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    problems: list[str] = []
    log = EventLog(open("/dev/full", "w", encoding="utf-8"), on_error=problems.append)  # noqa: SIM115
    for i in range(5000):
        log(TokenEvent(t=i, turn=1, request=1, text="w" * 100))
    log.close()
    assert len(problems) == 1 and "No space left on device" in problems[0]


def test_words_before_any_question_open_the_export(tmp_path: Path) -> None:
    path = tmp_path / "session-20240102-030405-000.jsonl"
    events = [FinalEvent(t=1.0, turn=1, text="Hello, can you hear me?", audio_end=1.0, speaker="candidate"),
              FinalEvent(t=3.0, turn=2, text="Tell me about yourself.", audio_end=3.0)]
    path.write_text("".join(to_json(e) + "\n" for e in events), encoding="utf-8")
    md = export_markdown(path)
    you, q1 = md.index("**You:** Hello, can you hear me?"), md.index("## Q1")
    assert you < q1 < md.index("> Tell me about yourself.")


def test_markdown_export(tmp_path: Path) -> None:
    path = tmp_path / "session-20240102-030405-000.jsonl"
    events = [
        *_turn_events(),
        # second question, answered, then regenerated: a new request of the same turn
        VadEvent(t=5.0, speech=True),
        VadEvent(t=7.0, speech=False),
        FinalEvent(t=7.5, turn=2, text="Why this company?", audio_end=7.0),
        EndpointEvent(t=7.8, turn=2, reason="silence", silence=0.8),
        RequestEvent(t=7.81, turn=2, request=2, kind="final", text="Why this company?"),
        RequestEvent(t=7.82, turn=2, request=3, kind="speculative", text="DISCARDED SPEC"),
        FirstTokenEvent(t=8.2, turn=2, request=2, ttft=0.39),
        TokenEvent(t=8.21, turn=2, request=2, text="Because of the mission."),
        RequestEvent(t=9.0, turn=2, request=4, kind="regenerate", text="Why this company?"),
        CutEvent(t=9.39, turn=2, request=2),
        TokenEvent(t=9.4, turn=2, request=4, text="I love the product."),
        # a third question that went on: its first answer was taken back
        FinalEvent(t=12.0, turn=3, text="Have you led a team?", audio_end=12.0),
        EndpointEvent(t=12.1, turn=3, reason="silence", silence=0.4),
        TokenEvent(t=12.3, turn=3, request=5, text="Yes, a team of four."),
        RetractedEvent(t=12.9, turn=3, request=5, reason="continued"),
        FinalEvent(t=14.0, turn=3, text="Have you led a team? A big one.", audio_end=14.0),
        TokenEvent(t=14.3, turn=3, request=6, text="Yes, twelve people."),
        FinalEvent(t=16.0, turn=4, text="Any questions for us?", audio_end=16.0),
        # the candidate's words: with the question asked before them, never a question
        FinalEvent(t=17.5, turn=5, text="Yes, about the team.", audio_end=17.4, speaker="candidate"),
    ]
    path.write_text("".join(to_json(e) + "\n" for e in events), encoding="utf-8")
    md = export_markdown(path)
    assert md.startswith("# Interview Copilot session — 2024-01-02 03:04")
    q1, q2 = md.index("> Tell me about yourself?"), md.index("> Why this company?")
    assert q1 < md.index("- I build data tools.") < q2
    assert q2 < md.index("Because of the mission.") < md.index("**Answer (regenerated):**")
    assert md.index("**Answer (regenerated):**") < md.index("I love the product.")
    assert "DISCARDED SPEC" not in md and "Tell me about you\n" not in md
    assert "a newer answer took its place" in md  # the first answer to Q2 was cut
    q3 = md.index("> Have you led a team? A big one.")
    assert q3 < md.index("~~Yes, a team of four.~~") < md.index("Yes, twelve people.")
    assert "> Have you led a team?\n" not in md and "> Any questions for us?" in md
    # timings: silence at 2.0, endpoint 2.3, spec. request 2.25, first token 2.5, paint 2.52
    assert "Latency 520 ms: endpoint +300 · request +250 spec. hit · 1st token +500 · " \
           "shown +520" in md
    assert "> Any questions for us?" in md and "_No answer was shown._" in md
    assert md.index("> Any questions for us?") < md.index("**You:** Yes, about the team.")
    assert "> Yes, about the team." not in md and "## Q5" not in md
    assert "Session usage: 110 tok · $0.0010" in md


def _png(colour: int) -> bytes:
    out = io.BytesIO()
    PilImage.new("RGB", (40, 20), (colour, 0, 0)).save(out, "PNG")
    return out.getvalue()


def test_a_written_questions_pictures_are_kept_as_private_files_named_in_the_log(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "session-20240102-030405-000.jsonl")
    pictures = (_png(10), _png(200))
    log(WrittenQuestionEvent(t=1.0, turn=3, text="1. Two Sum", captures=2, pictures=pictures))
    log.close()
    [line] = [json.loads(x) for x in log.path.read_text(encoding="utf-8").splitlines()]
    assert "pictures" not in line  # the bytes are files, never a line of the log
    folder = tmp_path / "session-20240102-030405-000.captures"
    assert line["kept"] == [f"{folder.name}/q3-1.png", f"{folder.name}/q3-2.png"]
    assert [(tmp_path / name).read_bytes() for name in line["kept"]] == list(pictures)
    if sys.platform != "win32":
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert {stat.S_IMODE((tmp_path / name).stat().st_mode) for name in line["kept"]} == {0o600}


def test_without_pictures_nothing_is_written_beside_the_session_file(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "session-20240102-030405-000.jsonl")
    log(WrittenQuestionEvent(t=1.0, turn=3, text="1. Two Sum", captures=2))
    log.close()
    [line] = [json.loads(x) for x in log.path.read_text(encoding="utf-8").splitlines()]
    assert line["kept"] == [] and sorted(p.name for p in tmp_path.iterdir()) == [log.path.name]


def test_a_kept_picture_never_overwrites_a_file_already_there(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "session-1.jsonl")
    log.captures_dir.mkdir()
    (log.captures_dir / "q1-1.png").write_bytes(b"the user's own")
    log(WrittenQuestionEvent(t=1.0, turn=1, text="x", pictures=(_png(1),)))
    log.close()
    assert (log.captures_dir / "q1-1.png").read_bytes() == b"the user's own"
    assert (log.captures_dir / "q1-1-2.png").read_bytes() == _png(1)


def test_a_picture_that_cannot_be_kept_is_said_and_the_question_is_still_logged(tmp_path: Path) -> None:
    problems: list[str] = []
    log = SessionLog(tmp_path / "session-1.jsonl", on_error=problems.append)
    log.captures_dir.write_text("a file where the folder would go")
    log(WrittenQuestionEvent(t=1.0, turn=1, text="1. Two Sum", pictures=(_png(1),)))
    log.close()
    [line] = [json.loads(x) for x in log.path.read_text(encoding="utf-8").splitlines()]
    assert line["text"] == "1. Two Sum" and line["kept"] == []
    assert len(problems) == 1 and "images of question 1 were not kept" in problems[0]


def test_a_question_read_from_the_screen_is_in_the_export_like_a_spoken_one(tmp_path: Path) -> None:
    path = tmp_path / "session-20240102-030405-000.jsonl"
    code = "1. Two Sum\n\nclass Solution:\n    def two_sum(self, nums):\n        return ```odd```"
    events = [
        *_turn_events(),
        WrittenQuestionEvent(t=5.0, turn=2, text=code, captures=2, kept=("s.captures/q2-1.png",)),
        RequestEvent(t=5.01, turn=2, request=2, kind="final", text=code),
        FirstTokenEvent(t=5.3, turn=2, request=2, ttft=0.29),
        TokenEvent(t=5.31, turn=2, request=2, text="Use a hash map: O(n)."),
        AnswerDoneEvent(t=5.5, turn=2, request=2, text="Use a hash map: O(n).",
                        usage=Usage(prompt_tokens=50, completion_tokens=8), cost=0.0),
        WrittenQuestionEvent(t=9.0, turn=3, text="What does this print?", captures=1),
    ]
    path.write_text("".join(to_json(e) + "\n" for e in events), encoding="utf-8")
    md = export_markdown(path)
    q1, q2, q3 = md.index("## Q1"), md.index("## Q2 _(at 00:05.0)_"), md.index("## Q3")
    assert q1 < md.index("- I build data tools.") < q2
    assert md.index("_Read from the screen (2 captures):_") > q2
    # indentation kept; the backticks in it cannot close its fence
    fenced = md.index("````text\n1. Two Sum\n\nclass Solution:\n    def two_sum(self, nums):\n"
                      "        return ```odd```\n````")
    assert q2 < fenced < md.index("`s.captures/q2-1.png`") < md.index("Use a hash map: O(n).") < q3
    assert "_(question not captured)_" not in md
    assert q3 < md.index("_Read from the screen (1 capture):_") < md.index("What does this print?")
    assert md.index("What does this print?") < md.index("_No answer was shown._")
