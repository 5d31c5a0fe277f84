"""The candidate's documents at a session's start: each file is read once per start
(the recogniser's terms and every prompt come from that one reading), and a file that
cannot be read, whatever the reader raises, is named with the reason and skipped while
the session starts and answers."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import app.prompt.documents as reader
from app.asr.decoder import WhisperDecoder
from app.asr.glossary import pick_terms, rough_pieces
from app.core.clock import SessionClock
from app.core.config import PromptConfig, Settings
from app.core.events import AnswerDoneEvent, ErrorEvent, EventBus, SessionStateEvent
from app.llm.endpoint import LlmEndpoint
from app.session.candidate_documents import CandidateDocuments
from app.session.session import Session, Sources
from devtools.fake_server import FakeServer, Profile
from tests.conftest import EventRecorder
from tests.speech import synth

RESUME = "# Ada Lovelace\n- Built the Zanzibar billing pipeline on Kafka and Flink\n"
JOB = "# Platform engineer\n- Lead the move of our batch jobs to streaming with Kafka\n"
NO_SUCH_HOME = "~no-such-user-of-interview-copilot/cv.md"
"""A real path the reader cannot resolve (a settings file copied from another machine):
``expanduser`` raises ``RuntimeError``, not a :class:`DocumentError`."""


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each file (by name) was parsed: the real reader, counted."""
    counted: Counter[str] = Counter()
    real = reader.load_document

    def load_document(path: str | Path, **kwargs: Any) -> str:
        counted[Path(path).name] += 1
        return real(path, **kwargs)

    monkeypatch.setattr(reader, "load_document", load_document)
    return counted


def _files(tmp_path: Path) -> tuple[Path, Path]:
    resume, job = tmp_path / "cv.md", tmp_path / "job.txt"
    resume.write_text(RESUME, encoding="utf-8")
    job.write_text(JOB, encoding="utf-8")
    return resume, job


def _not_a_zip(tmp_path: Path) -> str:
    path = tmp_path / "cv.docx"
    path.write_text("this was never a Word file", encoding="utf-8")
    return str(path)


def _broken_deflate(tmp_path: Path) -> str:
    """A real Word package whose compressed body is damaged (zlib's own error, once)."""
    package = io.BytesIO()
    with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED) as docx:
        body = "<w:p><w:r><w:t>Built the Zanzibar billing pipeline</w:t></w:r></w:p>" * 200
        xml = f"<w:document xmlns:w='urn:w'><w:body>{body}</w:body></w:document>"
        docx.writestr("word/document.xml", xml)
    data = bytearray(package.getvalue())
    start = 30 + int.from_bytes(data[26:28], "little") + int.from_bytes(data[28:30], "little")
    data[start:start + 20] = bytes(b ^ 0xFF for b in data[start:start + 20])
    path = tmp_path / "cv.docx"
    path.write_bytes(bytes(data))
    return str(path)


def _no_such_home(_tmp_path: Path) -> str:
    return NO_SUCH_HOME


BAD_RESUMES: list[Any] = [
    pytest.param(_not_a_zip, "cv.docx", id="not-a-zip"),
    pytest.param(_broken_deflate, "cv.docx", id="broken-deflate"),
    pytest.param(_no_such_home, "cv.md", id="unresolvable-path",
                 marks=pytest.mark.skipif(sys.platform == "win32", reason="~user resolves on Windows")),
]


def _documents(resume: str, job: Path, bus: EventBus) -> CandidateDocuments:
    settings = Settings(prompt=PromptConfig(resume_file=resume, job_description_file=str(job)))
    return CandidateDocuments(settings, bus, SessionClock(), compact=lambda: False)


def test_one_reading_serves_the_terms_and_every_prompt(tmp_path: Path, reads: Counter[str]) -> None:
    """The terms, the first prompt and an ``auto`` session's prompt in the settled
    language all come from one reading; the next start reads the files again."""
    resume, job = _files(tmp_path)
    documents = _documents(str(resume), job, EventBus())
    documents.read()
    assert "Zanzibar" in documents.recogniser_terms(rough_pieces)
    for language in ("en", "zh", "en"):
        assert "Zanzibar" in json.dumps(documents.prompt(language).prefix_messages(), ensure_ascii=False)
    assert reads == {"cv.md": 1, "job.txt": 1}
    documents.read()  # the next start: the user may have saved a new version meanwhile
    assert reads == {"cv.md": 2, "job.txt": 2}


@pytest.mark.parametrize(("make", "name"), BAD_RESUMES)
def test_an_unreadable_resume_is_named_once_and_skipped(tmp_path: Path, make: Callable[[Path], str],
                                                        name: str) -> None:
    """Whatever reading the file raises, the prompt names it with the reason, once per
    reading, and goes on with the job description; the terms never raise either."""
    _, job = _files(tmp_path)
    bus = EventBus()
    said: list[ErrorEvent] = []
    bus.subscribe(lambda event: said.append(event) if isinstance(event, ErrorEvent) else None)
    documents = _documents(make(tmp_path), job, bus)
    documents.read()
    from_the_job = pick_terms([None, reader.load_job_description(job)], pieces=rough_pieces)
    assert from_the_job and documents.recogniser_terms(rough_pieces) == from_the_job
    prompt = json.dumps(documents.prompt("en").prefix_messages(), ensure_ascii=False)
    documents.prompt("en")  # the settled language's prompt: nothing said twice
    assert "streaming with Kafka" in prompt and "Zanzibar" not in prompt
    assert [e.stage for e in said] == ["prompt"]
    message = said[0].message
    assert message.startswith(f'The résumé file "{name}" could not be read') and "Settings" in message


@pytest.fixture
def server() -> Any:
    with FakeServer(Profile(ttft=0.02, tokens_per_s=200, answer_tokens=8), api_key="sk-good") as fake:
        yield fake


def _replay(settings: Settings, decoder: WhisperDecoder, server: FakeServer) -> EventRecorder:
    session = Session(settings, sources=Sources(synth("What did you use Kafka for?"), speed=2.0),
                      decoder=decoder, llm=LlmEndpoint(server.start(), "sk-good", "gpt-4o-mini", local=False))
    seen = EventRecorder()
    session.bus.subscribe(seen)
    try:
        session.run_file(timeout=60)
    finally:
        session.shutdown()
    assert session.failure is None
    return seen


def test_a_start_parses_each_document_once(decoder: WhisperDecoder, tmp_path: Path, server: FakeServer,
                                           reads: Counter[str]) -> None:
    """Before, a start parsed each file twice: once for the recogniser, once for the prompt."""
    resume, job = _files(tmp_path)
    settings = Settings(prompt=PromptConfig(resume_file=str(resume), job_description_file=str(job)))
    seen = _replay(settings, decoder, server)
    assert reads == {"cv.md": 1, "job.txt": 1}
    assert seen.of(AnswerDoneEvent) and not seen.of(ErrorEvent)
    sent = json.dumps(server.chat_requests()[0].body["messages"], ensure_ascii=False)
    assert "Zanzibar" in sent and "streaming with Kafka" in sent  # the prompt is made of that reading


@pytest.mark.skipif(sys.platform == "win32", reason="~user resolves on Windows")
def test_a_resume_the_reader_chokes_on_is_named_and_the_session_answers(
        decoder: WhisperDecoder, tmp_path: Path, server: FakeServer) -> None:
    """Not only a :class:`DocumentError`: anything reading a file raises is that file's
    problem, said once, and the session starts and answers from what it could read."""
    _, job = _files(tmp_path)
    settings = Settings(prompt=PromptConfig(resume_file=NO_SUCH_HOME, job_description_file=str(job)))
    seen = _replay(settings, decoder, server)
    problems = seen.of(ErrorEvent)
    assert len(problems) == 1 and problems[0].stage == "prompt"
    assert problems[0].message.startswith('The résumé file "cv.md" could not be read (')
    assert "listening" in [e.state for e in seen.of(SessionStateEvent)]
    done = seen.of(AnswerDoneEvent)
    assert done and done[0].error is None
    sent = json.dumps(server.chat_requests()[0].body["messages"], ensure_ascii=False)
    assert "streaming with Kafka" in sent
