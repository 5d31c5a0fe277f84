"""What the command line puts on the terminal: redacted, printable text, and the live transcript.

Half of what a headless run prints was written by someone else: the model's answer, a
server's error message, a relay's echo of the key.  So the process's ``stdout`` and
``stderr`` are wrapped once, in :func:`app.frontends.cli.main`, before any command runs
(``doctor`` and ``self-test`` included): every write passes :func:`app.platform.redact.redact`
and :func:`app.core.terminal.printable`, whoever makes it (``print``, a log record, a
traceback, argparse, the tracer's waterfall, ``--events -``).  The one thing written past
them is the live transcript's own line rewrite on a terminal (``\\r`` and erase-line),
through :meth:`TerminalStream.write_control`. Design notes: decision 0039.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import IO, Any, TextIO, cast

from app.frontends import parent_console
from app.platform.redact import shown

REWRITE_LINE = "\r\033[K"
"""Back to the start of the line and erase it: the partial caption rewrites itself."""


safe = shown
"""``text`` as it may reach a terminal (:func:`app.platform.redact.shown`)."""


class TerminalStream:
    """A text stream that passes only :func:`safe` text to the stream it wraps.

    Everything else (``fileno``, ``isatty``, ``encoding``, ``reconfigure``, ``buffer``) is the
    wrapped stream's, so code that writes to ``sys.stdout`` sees no difference.
    """

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream

    def write(self, text: str) -> int:
        self.wrapped.write(safe(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def write_control(self, sequence: str) -> None:
        """Write one of the app's own terminal sequences as it is (never text from outside)."""
        self.wrapped.write(sequence)

    def flush(self) -> None:
        self.wrapped.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


@contextlib.contextmanager
def terminal_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as UTF-8 :class:`TerminalStream` s for the block,
    then as they were.  A missing stream (a windowed build has none) is the parent's console
    or nowhere for the block (:func:`_present`); one already wrapped is left alone."""
    saved = sys.stdout, sys.stderr
    with contextlib.ExitStack() as cleanup:
        out, err = _present(sys.stdout, sys.stderr, cleanup)
        for stream in [out] if err is out else [out, err]:
            cleanup.enter_context(_utf8(stream))
        sys.stdout, sys.stderr = _wrapped(out), _wrapped(err)
        try:
            yield
        finally:
            sys.stdout, sys.stderr = saved


def _present(out: TextIO | None, err: TextIO | None,
             cleanup: contextlib.ExitStack) -> tuple[TextIO, TextIO]:
    """Both streams, a missing one replaced: by the console of the terminal that started a
    windowed executable, else by the null device (started from the Start menu: the window
    needs no terminal, and a command's exit code still tells).  Closed by ``cleanup``."""
    if out is not None and err is not None:
        return out, err
    stand_in = parent_console.attach_parent_console()
    if stand_in is None:
        stand_in = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - closed by cleanup
    cleanup.callback(stand_in.close)
    return out or stand_in, err or stand_in


@contextlib.contextmanager
def _utf8(stream: TextIO) -> Iterator[None]:
    """``stream`` writes UTF-8 (unencodable text replaced, never raised) for the block, where
    the stream allows it: CI's ``PYTHONUTF8=1`` hid that a file on Windows is cp1252."""
    target = stream.wrapped if isinstance(stream, TerminalStream) else stream
    reconfigure = getattr(target, "reconfigure", None)  # a TextIOWrapper's; a StringIO has none
    before = getattr(target, "encoding", None), getattr(target, "errors", None)
    changed = False
    if reconfigure is not None:
        with contextlib.suppress(ValueError, OSError):  # closed, or cannot change its encoding
            reconfigure(encoding="utf-8", errors="replace")
            changed = True
    try:
        yield
    finally:
        if changed and reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):  # closed meanwhile
                reconfigure(encoding=before[0], errors=before[1])


def _wrapped(stream: TextIO) -> TextIO:
    if isinstance(stream, TerminalStream):
        return cast(TextIO, stream)
    return cast(TextIO, TerminalStream(stream))


def unexpected(exc: BaseException) -> str:
    """A failure nobody foresaw, in one line: its type and its message's first line, made
    :func:`safe` (an exception's text may quote a server, a URL or a key)."""
    lines = str(exc).strip().splitlines()
    return safe(f"unexpected {type(exc).__name__}" + (f": {lines[0]}" if lines else ""))


def install_excepthooks() -> None:
    """Exceptions that end the program or a thread are said in one :func:`unexpected` line
    on whatever ``stderr`` is then (the terminal may be restored already), never as a raw
    traceback with a key or an escape sequence in it; the traceback goes to the debug log,
    whose records are redacted."""
    sys.excepthook = _said_exit
    threading.excepthook = _said_thread


def _said_exit(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    if issubclass(kind, KeyboardInterrupt):
        return
    logging.getLogger(__name__).debug("uncaught", exc_info=(kind, exc, tb))
    _say(f"error: {unexpected(exc)}\n")


def _said_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    logging.getLogger(__name__).debug("uncaught in a thread", exc_info=(args.exc_type, args.exc_value,
                                                                        args.exc_traceback))
    where = args.thread.name if args.thread is not None else "a thread"
    _say(f"error in {safe(where)}: {unexpected(args.exc_value)}\n")


def _say(line: str) -> None:
    with contextlib.suppress(Exception):  # no stream, or a closed one: nothing more to do
        if sys.stderr is not None:
            sys.stderr.write(line)
            sys.stderr.flush()


class LiveTranscript:
    """Readable console output: the partial rewrites one line, finals and answers stay.

    Every piece of text passes :func:`safe` here too, so the transcript is safe on any
    stream it is given, wrapped or not.
    """

    def __init__(self, out: IO[str], *, answers: bool = False) -> None:
        self._out = out
        self._answers = answers
        self._tty = out.isatty()
        self._answer_request: int | None = None

    def __call__(self, event: object) -> None:
        from app.core.events import (
            CutEvent,
            ErrorEvent,
            FinalEvent,
            PartialEvent,
            RetractedEvent,
            StatusEvent,
            TokenEvent,
            WrittenQuestionEvent,
        )

        if isinstance(event, PartialEvent) and self._tty:
            self._write(f"… {event.text}", rewrite=True)
        elif isinstance(event, FinalEvent):
            self._end_answer()
            who = "You" if event.speaker == "candidate" else "Q"
            self._write(f"{who}: {event.text}\n", rewrite=True)
        elif isinstance(event, WrittenQuestionEvent):
            self._end_answer()
            self._write(f"Q (screen, {event.captures} capture{'s' * (event.captures > 1)}):\n"
                        f"{event.text}\n", rewrite=True)
        elif isinstance(event, TokenEvent) and self._answers:
            if self._answer_request != event.request:
                self._end_answer()
                self._answer_request = event.request
                self._write("A: ")
            self._write(event.text)
        elif isinstance(event, CutEvent) and self._answers:
            self._write(" [cut short]")
            self._end_answer()
        elif isinstance(event, RetractedEvent) and self._answers:
            self._end_answer()
            why = "the question went on" if event.reason == "continued" else "withdrawn"
            self._write(f"[answer withdrawn: {why}]\n")
        elif isinstance(event, ErrorEvent):
            self._write(f"\n[{event.stage}] {event.message}\n")
        elif isinstance(event, StatusEvent) and self._tty:
            self._write(f"[{event.stage}] {event.message}\n", rewrite=True)

    def _end_answer(self) -> None:
        if self._answer_request is not None:
            self._write("\n")
            self._answer_request = None

    def _write(self, text: str, *, rewrite: bool = False) -> None:
        """``text``, made safe; ``rewrite`` first clears the line on a terminal (the partial's)."""
        if rewrite and self._tty:
            control = getattr(self._out, "write_control", self._out.write)
            control(REWRITE_LINE)
        self._out.write(safe(text))
        self._out.flush()
