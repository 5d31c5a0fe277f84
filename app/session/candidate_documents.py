"""The candidate's documents: the résumé and the job description the settings name, read
once per start and used twice, to steer the recogniser (their rarest names) and to build
the prompt.

Reading a file is the only step here that can fail, and a file the user picked must
never stop a session: whatever goes wrong reading one (a :class:`DocumentError` or
anything else a damaged file makes a parser raise) becomes one sentence naming the
file, and the file is skipped.  That sentence is the prompt's to say, when a prompt is
built from that reading (a session without answers reads the files for the recogniser
alone and says nothing), and it is said once per reading.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.asr.decoder import AUTO
from app.asr.glossary import Pieces, Prior, pick_terms
from app.core.clock import SessionClock
from app.core.config import Settings
from app.core.events import ErrorEvent, EventBus
from app.prompt.builder import PromptBuilder
from app.prompt.documents import DocumentError, load_job_description, load_resume
from app.prompt.texts import prompt_language


@dataclass(frozen=True, slots=True)
class Documents:
    """One reading of the candidate's files: each text, or None when not set or unreadable."""

    resume: str | None
    job_description: str | None
    problems: tuple[str, ...]
    """A sentence for each file that could not be read: which one, and why."""


def read_documents(resume_file: str | None, job_description_file: str | None) -> Documents:
    """Read each file named (None or empty: none), once; never raises for a bad file."""
    problems: list[str] = []

    def read(path: str | None, loader: Callable[[str], str], label: str) -> str | None:
        if not path:
            return None
        try:
            return loader(path)
        except DocumentError as exc:
            problems.append(str(exc))
        except Exception as exc:  # a parser's surprise, a path it cannot resolve: still that file's
            problems.append(_unexpected(label, path, exc))
        return None

    resume = read(resume_file, load_resume, "résumé")
    job = read(job_description_file, load_job_description, "job description")
    return Documents(resume, job, tuple(problems))


def _unexpected(label: str, path: str, exc: Exception) -> str:
    """The sentence for a failure the reader did not word itself, in its style."""
    name = Path(path).name or path
    reason = str(exc) or type(exc).__name__
    return (f'The {label} file "{name}" could not be read ({reason}): pick it again in Settings, '
            "or save it as .txt and pick that.")


class CandidateDocuments:
    """The session's reading of the candidate's files, and what is made of it.

    :meth:`read` runs on start-up's thread; :meth:`prompt` also on the answer engine's
    (an ``auto`` session's prompt is rebuilt once its language is settled), so the
    current reading is swapped whole, under a lock.
    """

    def __init__(self, settings: Settings, bus: EventBus, clock: SessionClock, *,
                 compact: Callable[[], bool]) -> None:
        self._settings = settings
        self._bus = bus
        self._clock = clock
        self._compact = compact
        """Whether a prompt is the compact one (the bundled model's), asked per prompt."""
        self._lock = threading.Lock()
        self._documents: Documents | None = None
        """The current start's reading (None until the first)."""
        self._said = False
        """Its problems were said."""

    def read(self) -> Documents:
        """Read the files the settings name now: once per start."""
        prompt = self._settings.prompt
        documents = read_documents(prompt.resume_file, prompt.job_description_file)
        with self._lock:
            self._documents, self._said = documents, False
        return documents

    def recogniser_terms(self, pieces: Pieces, prior: Prior | None = None) -> list[str]:
        """The user's glossary and the names of the résumé and job description the
        recogniser most needs (by its ``prior``: see :func:`app.asr.glossary.pick_terms`), to
        steer it (a file that cannot be read is the prompt's to report)."""
        documents = self._reading()
        return pick_terms([documents.resume, documents.job_description], self._settings.asr.glossary,
                          pieces=pieces, prior=prior)

    def prompt(self, language: str) -> PromptBuilder:
        """The prompt for ``language`` ("auto": English until the session's language is
        known); a file that could not be read is reported (once per reading) and skipped."""
        documents = self._reading()
        for problem in self._to_say(documents):
            self._bus.emit(ErrorEvent(t=self._clock.now(), stage="prompt", message=problem))
        spoken = "en" if language == AUTO else language
        return PromptBuilder(self._settings.prompt.system_prompt, documents.resume, documents.job_description,
                             prompt_language(spoken, self._settings.asr.chinese_script),
                             compact=self._compact())

    def _reading(self) -> Documents:
        """The current reading; the files are read now if there is none yet."""
        with self._lock:
            documents = self._documents
        return documents if documents is not None else self.read()

    def _to_say(self, documents: Documents) -> tuple[str, ...]:
        """The problems of ``documents`` if nobody said them yet (then they are yours)."""
        with self._lock:
            if self._said or self._documents is not documents:
                return ()
            self._said = True
        return documents.problems
