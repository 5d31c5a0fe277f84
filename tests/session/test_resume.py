"""A résumé that cannot be read is named with the reason, and the session still answers,
with the job description it could read recalled for the question."""

from __future__ import annotations

from pathlib import Path

from app.asr.decoder import WhisperDecoder
from app.core.config import PromptConfig, Settings
from app.core.events import AnswerDoneEvent, ErrorEvent, RecallEvent, SessionStateEvent
from app.llm.endpoint import LlmEndpoint
from app.session.session import Session, Sources
from devtools.fake_server import FakeServer, Profile
from tests.conftest import EventRecorder as Seen
from tests.speech import synth


def test_an_unreadable_resume_is_named_and_the_session_goes_on(decoder: WhisperDecoder,
                                                               tmp_path: Path) -> None:
    resume = tmp_path / "My CV.docx"
    resume.write_text("this was never a Word file", encoding="utf-8")
    job = tmp_path / "job.md"
    job.write_text("# Platform engineer\n- Lead the move of our batch jobs to streaming with Kafka\n",
                   encoding="utf-8")
    settings = Settings(prompt=PromptConfig(resume_file=str(resume), job_description_file=str(job)))
    with FakeServer(Profile(ttft=0.02, tokens_per_s=200, answer_tokens=8), api_key="sk-good") as server:
        session = Session(settings, sources=Sources(synth("What did you use Kafka for?"), speed=2.0),
                          decoder=decoder,
                          llm=LlmEndpoint(server.start(), "sk-good", "gpt-4o-mini", local=False))
        seen = Seen()
        session.bus.subscribe(seen)
        try:
            session.start()
            seen.wait(AnswerDoneEvent, 1, timeout=60)
        finally:
            session.shutdown()
    problems = [e for e in seen.of(ErrorEvent) if e.stage == "prompt"]
    assert len(problems) == 1
    assert problems[0].message.startswith('The résumé file "My CV.docx" could not be read as a Word document')
    assert "listening" in [e.state for e in seen.of(SessionStateEvent)]
    recalled = seen.of(RecallEvent)
    assert recalled and recalled[-1].lines[0].source == "job" and "Kafka" in recalled[-1].lines[0].text
    assert seen.of(AnswerDoneEvent)[0].error is None
