"""Recalled lines in the session log (read back whole) and in the Markdown export."""

from __future__ import annotations

from pathlib import Path

from app.core.events import (
    EndpointEvent,
    EventBus,
    FinalEvent,
    RecallEvent,
    RecallLine,
    TokenEvent,
    to_dict,
)
from app.observing.session_files import SessionLog, event_from_dict, export_markdown, load_session

KAFKA = RecallLine("Replaced nightly batch jobs with a Kafka event pipeline", "resume", 1.234)
FLINK = RecallLine("Lead the move of our batch ETL to streaming with Kafka and Flink", "job", 0.8)


def test_a_recall_event_survives_the_log_and_old_readers_skip_nothing(tmp_path: Path) -> None:
    path = tmp_path / "session-20260102-030405-000.jsonl"
    log = SessionLog(path)
    bus = EventBus()
    log.attach(bus)
    events = [
        FinalEvent(t=1.0, turn=1, text="what did you use kafka for", audio_end=1.0),
        RecallEvent(t=1.0, turn=1, lines=(KAFKA,), guessed=True),
        RecallEvent(t=1.1, turn=1, lines=(KAFKA, FLINK)),
        EndpointEvent(t=1.1, turn=1, reason="silence", silence=0.5),
        TokenEvent(t=1.5, turn=1, request=1, text="- I built the event pipeline"),
        FinalEvent(t=4.0, turn=2, text="what is your greatest weakness", audio_end=4.0),
        RecallEvent(t=4.0, turn=2, lines=()),
        TokenEvent(t=4.5, turn=2, request=2, text="- In my last role I said yes too often"),
    ]
    for event in events:
        bus.emit(event)
    log.close()
    session = load_session(path)
    assert session.skipped == 0 and session.events == events
    assert to_dict(events[2])["lines"][1] == {"text": FLINK.text, "source": "job", "score": 0.8}
    assert event_from_dict({"event": "recall", "t": 1.0, "turn": 3}) == RecallEvent(t=1.0, turn=3)

    md = export_markdown(path)
    question, answer = md.index("> what did you use kafka for"), md.index("- I built the event pipeline")
    shown = md.index(f"- {KAFKA.text} _(résumé)_")
    assert question < md.index("_From your documents:_") < shown < md.index(
        f"- {FLINK.text} _(job description)_") < answer
    assert md.count("_From your documents:_") == 1  # the second question touched nothing
