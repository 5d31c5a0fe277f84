"""Session logs: every event of a session as JSON lines, readable after a crash.

The log is a bus listener that only queues: one writer thread (:class:`EventLog`)
writes and flushes every 200 ms, so no stage waits on the disk and a crash (even
SIGKILL) loses at most the last fraction of a second; :func:`load_session` skips a torn
last line.  No Qt here: the CLI and tests use it headless.

Logs and exports hold the interview word for word: they are the user's alone
(:mod:`app.core.private`: files 0600, folders 0700 on Linux and macOS).
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from pydantic import TypeAdapter, ValidationError

from app.core import events as ev
from app.core.config import data_dir
from app.core.events import Event, EventBus
from app.core.private import make_dirs, open_private, private_dir, private_fd, write_private_text
from app.observing.eventlog import EventLog
from app.observing.timeline import Timeline

SKIP = ("level",)
"""Meter readings: dozens a second, worthless after the fact."""

_EVENT_TYPES: dict[str, type[Event]] = {
    cls.name: cls
    for cls in vars(ev).values()
    if isinstance(cls, type) and issubclass(cls, Event) and cls is not Event
}


def sessions_dir() -> Path:
    """``<user data dir>/sessions`` (XDG_DATA_HOME on Linux, via platformdirs)."""
    return data_dir() / "sessions"


class SessionLog:
    """Appends each event (minus ``level``) to ``path`` as one flushed JSON line; a written
    question's images, when the session keeps them (``[screen] keep_images``), go to PNG
    files in ``<name>.captures/`` beside it, named in the event's ``kept``."""

    def __init__(self, path: Path | None = None, *, on_error: Callable[[str], None] | None = None) -> None:
        if path is None:
            private_dir(data_dir())
            path, stream = _new_session_file(private_dir(sessions_dir()))
        else:
            make_dirs(path.parent)  # a folder the caller chose keeps its mode
            stream = open_private(path, "a")
        self.path = path
        self._on_error = on_error
        self._writer = EventLog(stream, skip=SKIP, name="session log", on_error=on_error, sync=True)
        self._unsubscribe: Callable[[], None] | None = None
        self._bus: EventBus | None = None

    def attach(self, bus: EventBus) -> None:
        """Subscribe to ``bus``; attaching twice to the same bus is a no-op."""
        if self._bus is bus:
            return
        self.detach()
        self._bus = bus
        self._unsubscribe = bus.subscribe(self)

    def detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._unsubscribe = None
        self._bus = None

    def __call__(self, event: Event) -> None:
        if isinstance(event, ev.WrittenQuestionEvent) and event.pictures:
            event = dataclasses.replace(event, pictures=(), kept=self._keep(event.turn, event.pictures))
        self._writer(event)

    @property
    def captures_dir(self) -> Path:
        """Where the captures' images are kept (``[screen] keep_images``): beside the file."""
        return self.path.with_name(f"{self.path.stem}.captures")

    def _keep(self, turn: int, pictures: tuple[bytes, ...]) -> tuple[str, ...]:
        """Write a written question's captures as PNG files of the user's alone; the names
        of those written, relative to the session file's folder (a failed write is said)."""
        try:
            names = keep_pictures(private_dir(self.captures_dir), f"q{turn}", pictures)
        except OSError as exc:
            if self._on_error is not None:
                self._on_error(f"the images of question {turn} were not kept: {exc.strerror or exc}")
            return ()
        return tuple(f"{self.captures_dir.name}/{name}" for name in names)

    def flush(self) -> None:
        """Everything emitted so far is on disk (before the file is read back)."""
        self._writer.flush()

    def close(self) -> None:
        """Write what is queued, fsync the file, close it."""
        self.detach()
        self._writer.close()

    @property
    def lost(self) -> bool:
        """Part of the session is not in the file (a write failed, or the disk fell behind)."""
        return self._writer.lost


def keep_pictures(folder: Path, prefix: str, pictures: Iterable[bytes]) -> list[str]:
    """``prefix-1.png``, ``prefix-2.png``… in ``folder``, each created new (never over a
    file already there: the next free name) and readable by the user alone."""
    names = []
    for number, picture in enumerate(pictures, 1):
        for attempt in range(1, 100):
            name = f"{prefix}-{number}.png" if attempt == 1 else f"{prefix}-{number}-{attempt}.png"
            try:
                fd = private_fd(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                continue
            with open(fd, "wb") as out:
                out.write(picture)
            names.append(name)
            break
    return names


def _new_session_file(folder: Path) -> tuple[Path, IO[str]]:
    """A new file named for this moment, created exclusively: a second window started in
    the same millisecond takes the next name, never the first one's file."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")[:-3]
    for attempt in range(1, 100):
        path = folder / (f"session-{stamp}.jsonl" if attempt == 1 else f"session-{stamp}-{attempt}.jsonl")
        try:
            return path, open_private(path, "x")
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "too many sessions started at once", str(folder))


@dataclass(frozen=True)
class SessionInfo:
    path: Path
    started: datetime
    size: int


def list_sessions(folder: Path | None = None) -> list[SessionInfo]:
    """Past sessions, newest first (only a ``stat`` each: cheap enough for a menu)."""
    folder = folder or sessions_dir()
    if not folder.is_dir():
        return []
    out: list[SessionInfo] = []
    for path in folder.glob("session-*.jsonl"):
        try:
            st = path.stat()
        except OSError:
            continue
        out.append(SessionInfo(path, _started(path, st.st_mtime), st.st_size))
    return sorted(out, key=lambda s: s.started, reverse=True)


def _started(path: Path, mtime: float) -> datetime:
    stem = path.stem.removeprefix("session-")
    for fmt, width in (("%Y%m%d-%H%M%S-%f", 19), ("%Y%m%d-%H%M%S", 15)):
        try:
            return datetime.strptime(stem[:width], fmt)
        except ValueError:
            continue
    return datetime.fromtimestamp(mtime)


@dataclass(frozen=True)
class Session:
    path: Path
    events: list[Event]
    skipped: int
    """Lines that could not be read (a torn last line after a crash, unknown events)."""


def event_from_dict(data: dict[str, Any]) -> Event | None:
    """The event a wire-form dict describes, or None for unknown or malformed ones.

    Each field is checked against its type (pydantic, on the event's own dataclass), so a
    line of valid JSON with the wrong shape (a number for a text, a list for a turn) is
    malformed like a torn one, and nothing that reads the events meets a wrong type.
    Fields the event does not have (a newer version's) are ignored.
    """
    cls = _EVENT_TYPES.get(str(data.get("event")))
    if cls is None:
        return None
    fields = {k: v for k, v in data.items() if k != "event"}
    try:
        event: Event = _adapter(cls).validate_python(fields)
    except ValidationError:
        return None
    return event


def _adapter(cls: type[Event]) -> TypeAdapter[Event]:
    """One validator per event type, built when its first line is read."""
    adapter = _ADAPTERS.get(cls.name)
    if adapter is None:
        adapter = _ADAPTERS[cls.name] = TypeAdapter(cls)
    return adapter


_ADAPTERS: dict[str, TypeAdapter[Event]] = {}


def parse_lines(lines: Iterable[str]) -> tuple[list[Event], int]:
    events: list[Event] = []
    skipped = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except (json.JSONDecodeError, RecursionError):  # torn, garbage, or nested past the stack
            skipped += 1
            continue
        event = event_from_dict(data) if isinstance(data, dict) else None
        if event is None:
            skipped += 1
        else:
            events.append(event)
    return events, skipped


def load_session(path: Path) -> Session:
    """Read a session log; torn or unknown lines are counted, never fatal."""
    text = path.read_text(encoding="utf-8", errors="replace")
    events, skipped = parse_lines(text.splitlines())
    return Session(path, events, skipped)


# --- Markdown --------------------------------------------------------------------------


@dataclass
class Answer:
    request: int
    text: str
    regenerated: bool = False
    cut: bool = False
    """Ended because a newer answer took its place."""
    retracted: str | None = None
    """Why it was taken back ("continued", "user"), or None."""


@dataclass
class Exchange:
    """One interviewer turn: its question and the answers shown for it."""

    question: str
    turn: int | None = None
    answers: list[Answer] = dataclasses.field(default_factory=list)
    asked_at: float | None = None
    said: list[str] = dataclasses.field(default_factory=list)
    """What the candidate said after the question (before the next one)."""
    captures: int = 0
    """Read from the screen: from this many captures (0: a spoken question)."""
    kept: tuple[str, ...] = ()
    """The captures' images kept beside the session file, if the candidate keeps them."""


def exchanges(events: Iterable[Event] | Timeline) -> list[Exchange]:
    """One exchange per interviewer turn, in the order they were asked.

    The question is the turn's last final (a question that went on after a pause is one
    turn whose final grew); its answers are the requests that showed tokens, in order (a
    regeneration is a second request of the same turn).  The candidate's words are not
    questions: each goes with the question asked before it (turn ids come from one counter
    for both voices, in the order speech began); words before the first question make an
    exchange with no question.
    """
    timeline = events if isinstance(events, Timeline) else Timeline.of(events)
    out: list[Exchange] = []
    for stages in timeline.stages():
        asked = [f.text.strip() for f in stages.finals]
        shown = timeline.answers(stages.number)
        written = stages.written
        if written is not None:
            ex = Exchange(written.text.strip(), stages.number, asked_at=written.t,
                          captures=max(1, written.captures), kept=written.kept)
        elif asked or stages.endpoints or shown:
            ex = Exchange(asked[-1] if asked else "", stages.number,
                          asked_at=stages.endpoint.t if stages.endpoint is not None else None)
        else:
            continue
        ex.answers = [Answer(a.request, a.text, a.regenerated, a.cut, a.retracted) for a in shown]
        out.append(ex)
    opening = Exchange("", None)
    for final in timeline.said:
        owner = next((ex for ex in reversed(out) if ex.turn is not None and ex.turn < final.turn), opening)
        owner.said.append(final.text.strip())
    return [opening, *out] if opening.said else out


def export_markdown(path: Path) -> str:
    """The session as a Markdown transcript: each question, its answer(s) and timings."""
    session = load_session(path)
    timeline = Timeline.of(session.events)
    recalled = {e.turn: e.lines for e in session.events if isinstance(e, ev.RecallEvent)}  # the last
    title = _started(path, path.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
    lines = [f"# Interview Copilot session — {title}", ""]
    if session.skipped:
        lines += [f"_{session.skipped} unreadable line(s) skipped (crash or newer version)._", ""]
    number = 0
    for ex in exchanges(timeline):
        if ex.turn is None:  # the candidate spoke before any question
            lines += [*(f"**You:** {line}" for line in ex.said), ""]
            continue
        number += 1
        when = f" _(at {_clock(ex.asked_at)})_" if ex.asked_at is not None else ""
        lines.append(f"## Q{number}{when}")
        lines.append("")
        lines += _written(ex) if ex.captures else [
            f"> {ex.question}" if ex.question else "> _(question not captured)_", ""]
        touched = recalled.get(ex.turn, ()) if ex.turn is not None else ()
        if touched:
            lines += ["_From your documents:_", ""]
            lines += [f"- {line.text} _({_SOURCE.get(line.source, line.source)})_" for line in touched]
            lines.append("")
        if not ex.answers:
            lines += ["_No answer was shown._", ""]
        for answer in ex.answers:
            if answer.retracted is not None:
                why = "the question went on" if answer.retracted == "continued" else "withdrawn by the user"
                lines += [f"_Answer taken back ({why}):_ ~~{' '.join(answer.text.split())}~~", ""]
                continue
            label = "Answer (regenerated)" if answer.regenerated else "Answer"
            lines.append(f"**{label}:**")
            lines.append("")
            lines.append(answer.text.strip() or "_(empty)_")
            lines.append("")
            if answer.cut:
                lines += ["_(cut short: a newer answer took its place)_", ""]
        for line in ex.said:
            lines += [f"**You:** {line}", ""]
        lat = timeline.turn(ex.turn) if ex.turn is not None and ex.answers else None
        if lat is not None and lat.response is not None:
            lines.append(f"<sub>{lat.describe().replace('Last turn', 'Latency')}</sub>")
            lines.append("")
    t = timeline.totals
    if t.prompt_tokens or t.completion_tokens or t.cost:
        lines.append("---")
        lines.append("")
        lines.append(f"Session usage: {t.describe()}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def write_markdown(path: Path, target: Path) -> Path:
    """The session at ``path`` exported to ``target``, readable by the user alone and
    replaced whole (an export over an older one is never half written)."""
    return write_private_text(target, export_markdown(path))


def _written(ex: Exchange) -> list[str]:
    """A question read from the screen: marked so, its text as asked in a fence long enough
    that no backticks in it (code) can close it, and its kept images named."""
    plural = "s" if ex.captures != 1 else ""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", ex.question)), default=0))
    lines = [f"_Read from the screen ({ex.captures} capture{plural}):_", "", f"{fence}text", ex.question,
             fence, ""]
    if ex.kept:
        lines += [f"_Images kept beside the session file:_ {', '.join(f'`{name}`' for name in ex.kept)}", ""]
    return lines


_SOURCE = {"resume": "résumé", "job": "job description"}


def _clock(t: float) -> str:
    minutes, seconds = divmod(max(t, 0.0), 60)
    return f"{int(minutes):02d}:{seconds:04.1f}"
