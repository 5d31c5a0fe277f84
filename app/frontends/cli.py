"""Command line: the window, headless listening, transcription and the benchmarks.

``interview-copilot``                      the window on the embedded defaults
``interview-copilot --audio demo.wav``     the window replaying a file (the demo)
``interview-copilot listen --headless …``  the whole pipeline, answers on stdout
``interview-copilot transcribe a.wav``     live transcription only
``interview-copilot read shot.png``        the text on a screenshot, as the window reads it
``interview-copilot bench asr|turns|signals …``  the benchmarks

Exit codes: 0 done; 1 a failure while running (the audio device died); 2 a problem to
fix before starting (a bad flag, an unknown device, a missing file, a folder that cannot
be written, a library that does not load, anything a start-up step raised); 3 a
question got no answer because the LLM endpoint failed; 130 interrupted (Ctrl+C); 143
terminated (SIGTERM).  Whatever was produced is saved in every case.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import math
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, NoReturn

from app import __version__
from app.core.config import ConfigProblem, Settings, load_settings
from app.frontends.key_flags import KeyFlagError, add_key_flags, key_from_flags

if TYPE_CHECKING:
    from app.observing.tracing import TurnTracer
    from app.session.session import Session

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_UNANSWERED = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
EXIT_PIPE_CLOSED = 141
"""128 + SIGPIPE: what a shell reports for a command whose output's reader left (``| head``)."""

TRACE_TEXT_WARNING = {
    "otlp": "--trace-text: what the interviewer and you say, and the answers, are sent with the traces "
            "to the OTLP collector (OTEL_EXPORTER_OTLP_ENDPOINT): this text leaves this machine",
    "console": "--trace-text: what the interviewer and you say, and the answers, are printed with the "
               "traces here; with --trace otlp this text would leave this machine",
    None: "--trace-text does nothing without --trace",
}
"""Said once per run when ``--trace-text`` is given: an interview is private."""


def exit_process(code: int) -> NoReturn:
    """End the process once :func:`main` has returned: everything is saved by then.

    The interpreter's own teardown is skipped on purpose: it would terminate PortAudio,
    which waits forever on a stream wedged by a dead sound server, and free the speech and
    words models, which takes seconds on a busy machine: a run whose device died must end
    within a few seconds of the loss, not whenever the native libraries let go.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # what was left to print had no reader (``| head``)
            code = code or EXIT_PIPE_CLOSED
        except Exception:  # a stream that cannot flush now has nowhere to say so
            pass
    logging.shutdown()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """Run one command.  Before any command (``doctor`` and ``self-test`` included), what
    reaches the terminal is made safe (:mod:`app.frontends.console`: secrets masked, control
    characters stripped) and log records are redacted."""
    from app.frontends.console import install_excepthooks, terminal_output, unexpected

    install_excepthooks()  # an exception that escapes even this, or a thread's, is said safely too
    with terminal_output():
        _install_redaction()
        try:
            return _command(sys.argv[1:] if argv is None else argv)
        except BrokenPipeError:  # the reader of our output left: nothing to say, nowhere to say it
            return EXIT_PIPE_CLOSED
        except Exception as exc:  # a defect: one redacted line; the traceback to the debug log
            logging.getLogger(__name__).debug("the command failed", exc_info=exc)
            print(f"error: {unexpected(exc)}", file=sys.stderr)
            return EXIT_FAILED


def _install_redaction() -> None:
    """Redact log records, and know the secrets of the environment before anything runs:
    the self-test and ``doctor`` print what they find, keys in error messages included."""
    from app.platform.redact import install_redaction, register_secret, register_url

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    install_redaction()
    register_secret(os.environ.get("OPENAI_API_KEY"))
    register_url(os.environ.get("OPENAI_BASE_URL"))


def _command(argv: list[str]) -> int:
    if argv[:1] == ["self-test"]:  # its own options (--json, --only) are the self-test's
        from app.frontends.selftest import run_self_test

        return run_self_test(argv[1:])
    if argv[:1] == ["doctor"]:  # likewise: doctor has its own parser
        from app.frontends.doctor import run_doctor

        return run_doctor(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command in ("self-test", "doctor"):  # after a global flag: their options are their own
        parser.error(f"{args.command} takes its own options: put it first "
                     f"(interview-copilot {args.command} --help)")
    from app.platform.cores import limit_numpy_threads
    from app.platform.priority import raise_process

    try:
        args.api_key = key_from_flags(args)
    except KeyFlagError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    limit_numpy_threads()
    raise_process()  # ahead of a video call on the same cores (Windows; see the module)
    if getattr(args, "trace_text", False):
        _say(TRACE_TEXT_WARNING[getattr(args, "trace", None)])
    if getattr(args, "list_devices", False):
        from app.audio import AudioError, format_device_list

        try:
            print(format_device_list())
        except AudioError as exc:  # no PortAudio: what to install
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_CONFIG
        return 0
    settings, problems = load_settings(Path(args.config) if args.config else None)
    for problem in problems:
        print(f"settings: {problem}", file=sys.stderr)
    _apply_flags(settings, args)
    try:
        if args.command == "transcribe":
            return _transcribe(settings, args)
        if args.command == "read":
            return _read(args)
        if args.command == "bench":
            from app.frontends.checkout import run_bench  # devtools/, in a source checkout only

            return run_bench(settings, args)
        if args.headless:
            return _listen(settings, args)
        return _window(settings, args, problems)
    except FatalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:  # before the session was up: nothing to save yet
        return EXIT_INTERRUPTED


class FatalError(Exception):
    """A configuration problem the session cannot start with; the message says the fix."""


class Terminated(Exception):
    """SIGTERM, raised on the main thread so that the session is shut down and saved."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated


# --- commands ------------------------------------------------------------------------------


def _transcribe(settings: Settings, args: argparse.Namespace) -> int:
    from app.frontends.console import LiveTranscript

    session = _build(settings, args, answers=False)
    with _event_output(session, args.events) as writing:
        if not writing:
            session.bus.subscribe(LiveTranscript(sys.stdout))
        return _run(session, args)


def _read(args: argparse.Namespace) -> int:
    """``read IMAGE``: the text on a screenshot as read, code indented; 2 when there is none."""
    from app.screen.errors import ScreenError
    from app.screen.ocr import Reader
    from app.screen.picture import load

    try:
        text = Reader().read(load(Path(args.image)), args.language or "en").text
    except ScreenError as exc:
        raise FatalError(str(exc)) from exc
    print(text)
    return EXIT_OK


def _listen(settings: Settings, args: argparse.Namespace) -> int:
    from app.frontends.console import LiveTranscript
    from app.observing.session_files import SessionLog

    written = _read_question_images(settings, args)  # before anything starts: a bad image is exit 2
    session = _build(settings, args, answers=True, audio_needed=written is None)
    try:
        log = SessionLog(on_error=_say)  # every question and answer is on disk as it happens
    except OSError as exc:
        raise FatalError(f"cannot save the session in {exc.filename or 'the data folder'}: "
                         f"{exc.strerror or exc} (set XDG_DATA_HOME to a writable folder)") from exc
    log.attach(session.bus)
    unanswered = _Unanswered()
    session.bus.subscribe(unanswered)
    try:
        with _event_output(session, args.events) as writing:
            if writing != "stdout":
                session.bus.subscribe(LiveTranscript(sys.stdout, answers=True))
            if written is not None:
                session.ask_written(written.text, written.images, captures=written.captures)
            code = _run(session, args) if written is None or _has_audio(args) else _run_written(session)
    finally:
        log.close()
        print(f"session saved: {log.path}", file=sys.stderr)
    if code == EXIT_OK and log.lost:
        print(f"error: the session file {log.path} is incomplete: part of what the session said "
              "is not in it (see the warning above)", file=sys.stderr)
        return EXIT_FAILED
    if code == EXIT_OK and unanswered.turns:
        print(f"error: {len(unanswered.turns)} question(s) got no answer: the LLM endpoint failed",
              file=sys.stderr)
        return EXIT_UNANSWERED
    return code


@dataclasses.dataclass(frozen=True)
class _Written:
    text: str
    images: tuple[bytes, ...]
    captures: int


def _read_question_images(settings: Settings, args: argparse.Namespace) -> _Written | None:
    """``--question-image`` (each one a capture of the queue): read here, asked as one question."""
    paths = getattr(args, "question_image", None) or []
    if not paths:
        return None
    if len(paths) > settings.screen.max_captures:
        raise FatalError(f"--question-image: at most {settings.screen.max_captures} captures make one "
                         "question")
    from app.screen.errors import ScreenError
    from app.screen.ocr import Reader
    from app.screen.picture import load, png_bytes

    reader, texts, images = Reader(), [], []
    for path in paths:
        try:
            image = load(Path(path))
            texts.append(reader.read(image, settings.screen.language).text)
        except ScreenError as exc:
            raise FatalError(str(exc)) from exc
        if settings.screen.send_image or settings.screen.keep_images:  # sent, or kept in the session
            images.append(png_bytes(image))
    return _Written("\n\n".join(texts), tuple(images), len(paths))


def _has_audio(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "audio", None) or getattr(args, "mic", False) or getattr(args, "device", None))


def _run_written(session: Session) -> int:
    """Only written questions: wait for their answers, then shut down (saved)."""
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        session.wait()  # the question is asked (the engine is up)
        engine = session.engine
        if engine is not None:
            engine.wait_idle(600.0)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Terminated:
        return EXIT_TERMINATED
    finally:
        signal.signal(signal.SIGTERM, previous)
        session.shutdown()
    return _exit_code(session)


class _Unanswered:
    """Turns whose answer never came because the endpoint failed (for the exit code)."""

    def __init__(self) -> None:
        self.turns: set[int] = set()

    def __call__(self, event: object) -> None:
        from app.core.events import AnswerDoneEvent

        if isinstance(event, AnswerDoneEvent):
            if event.error is not None and not event.text.strip():
                self.turns.add(event.turn)
            else:
                self.turns.discard(event.turn)


def _window(settings: Settings, args: argparse.Namespace, problems: list[ConfigProblem]) -> int:
    from app.ui.platform_check import missing_packages, uses_xcb

    missing = missing_packages() if _has_display() and uses_xcb() else []
    if missing:
        print("The window cannot open: Qt needs system libraries that are missing. Install them "
              f"with\n  sudo apt install {' '.join(missing)}\nRunning headless meanwhile.", file=sys.stderr)
    if missing or not _has_display():
        if not missing:
            print("No display found: running headless (pass --headless to silence this note).",
                  file=sys.stderr)
        args.headless = True
        if not (getattr(args, "audio", None) or getattr(args, "mic", False) or getattr(args, "device", None)):
            args.audio = str(_demo_audio())
        return _listen(settings, args)
    from app.ui.app import run_window

    return run_window(_build(settings, args, answers=True, window=True), settings,
                      settings_path=Path(args.config) if args.config else None, problems=problems)


# --- helpers -----------------------------------------------------------------------------------


def _build(settings: Settings, args: argparse.Namespace, *, answers: bool, window: bool = False,
           audio_needed: bool = True) -> Session:
    """The session; a lost device ends a headless run, the window waits for it to come back."""
    from app.asr.errors import ModelError
    from app.llm.endpoint import resolve_llm_endpoint
    from app.platform.redact import register_secret, register_url
    from app.session.session import Session, SessionOptions, Sources

    audio = getattr(args, "audio", None)
    if audio_needed and audio is None and not (getattr(args, "mic", False) or getattr(args, "device", None)) \
            and settings.audio.source == "file":
        raise FatalError("no audio: pass --audio FILE.wav, --mic or --device NAME")
    llm = resolve_llm_endpoint(settings, base_url=getattr(args, "base_url", None),
                               api_key=getattr(args, "api_key", None), model=getattr(args, "model", None)) \
        if answers else None
    if llm is not None:  # before the session says anything: its first status names the endpoint
        register_secret(llm.api_key)
        register_url(llm.base_url)
    try:
        sources = Sources(audio, candidate_file=getattr(args, "candidate_audio", None),
                          channels=getattr(args, "audio_channels", None), speed=getattr(args, "speed", 1.0))
        return Session(settings, sources=sources, llm=llm,
                       options=SessionOptions(answers=answers, stop_on_audio_error=not window))
    except ModelError as exc:
        raise FatalError(str(exc)) from exc


def _run(session: Session, args: argparse.Namespace) -> int:
    """Run until the file is played or the user stops it; always shut down; the exit code."""
    from app.audio import AudioError

    tracer = _tracer(session, args)
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        if getattr(args, "audio", None):
            session.run_file()
        else:
            session.start()
            session.wait()
    except AudioError as exc:
        raise FatalError(str(exc)) from exc
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Terminated:
        return EXIT_TERMINATED
    except Exception:
        if session.failure is None:  # not a replay's start-up, which failed and said why
            raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        session.shutdown()
        if tracer is not None:
            tracer.shutdown()
    return _exit_code(session)


def _exit_code(session: Session) -> int:
    if session.failure is None:
        return EXIT_OK
    kind, message = session.failure
    print(f"error: {message}", file=sys.stderr)
    return EXIT_FAILED if kind == "runtime" else EXIT_CONFIG


def _demo_audio() -> Path:
    """The bundled demo clip, found where the checkout or the installed bundle keeps it."""
    from app.frontends.checks import CheckFailed, demo_audio

    try:
        return demo_audio()
    except CheckFailed as exc:
        raise FatalError(f"{exc} ({exc.fix})") from exc


def _tracer(session: Session, args: argparse.Namespace) -> TurnTracer | None:
    if not getattr(args, "trace", None):
        return None
    from app.observing.tracing import Traced, TracingUnavailable, maybe_tracer

    llm = session.llm
    about = Traced(llm.model if llm else None, llm.base_url if llm else None, session.session_id)
    try:
        tracer = maybe_tracer(args.trace, include_text=args.trace_text, clock=session.clock, about=about)
    except TracingUnavailable as exc:
        raise FatalError(str(exc)) from exc
    if tracer is not None:
        session.bus.subscribe(tracer)
    return tracer


def _open_exclusively(target: str) -> IO[str]:
    """The ``--events`` file, locked for this run, then truncated: two runs never interleave."""
    from app.observing.eventlog import FileBusy, open_exclusive

    try:
        return open_exclusive(target)
    except FileBusy:
        raise FatalError(f"another interview-copilot is writing its events to {target}: "
                         "give each run its own --events file") from None
    except OSError as exc:
        raise FatalError(f"cannot write the events to {target}: {exc.strerror or exc}") from exc


def _say(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


@contextlib.contextmanager
def _event_output(session: Session, target: str | None) -> Iterator[str | None]:
    """``--events``: every event as a JSON line, to stdout (``-``) or a file.

    Yields where they go (``"stdout"``, ``"file"`` or None), so the live transcript
    stays off stdout when the events use it.
    """
    from app.observing.eventlog import EventLog

    if target is None:
        yield None
        return
    if target == "-":
        stream: IO[str] = sys.stdout
    else:
        stream = _open_exclusively(target)
    writer = EventLog(stream, name="events output", on_error=_say, close_stream=stream is not sys.stdout)
    unsubscribe = session.bus.subscribe(writer)
    try:
        yield "stdout" if stream is sys.stdout else "file"
    finally:
        unsubscribe()
        writer.close()


def _has_display() -> bool:
    if sys.platform in ("win32", "darwin"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) \
        or os.environ.get("QT_QPA_PLATFORM") == "offscreen"


def _apply_flags(settings: Settings, args: argparse.Namespace) -> None:
    if getattr(args, "asr_model", None):
        settings.asr.model = args.asr_model
    if getattr(args, "language", None):
        settings.asr.language = args.language
    if getattr(args, "low_latency", None) is not None:
        settings.answer.low_latency = args.low_latency
    if getattr(args, "mic", False):
        settings.audio.source, settings.audio.device = "mic", None
    if getattr(args, "device", None):
        settings.audio.source, settings.audio.device = "mic", args.device
    if getattr(args, "candidate_device", None):
        off = args.candidate_device == "off"
        settings.audio.candidate = "off" if off else "mic"
        settings.audio.candidate_device = None if off else args.candidate_device
    if getattr(args, "http2", False):
        settings.llm.http2 = True
    if getattr(args, "resume", None):
        settings.prompt.resume_file = args.resume
    if getattr(args, "job", None):
        settings.prompt.job_description_file = args.job


def _add_audio_flags(p: argparse.ArgumentParser, *, positional: bool = False) -> None:
    if positional:
        p.add_argument("audio", nargs="?", help="WAV file to replay (omit with --mic/--device)")
    else:
        p.add_argument("--audio", metavar="FILE", help="replay this audio file instead of a device")
    p.add_argument("--mic", action="store_true", help="listen to the default microphone")
    p.add_argument("--device", metavar="NAME|INDEX", help="listen to this input device (see --list-devices)")
    p.add_argument("--candidate-audio", metavar="FILE",
                   help="replay your side of the call from this file, on the same clock as --audio")
    p.add_argument("--audio-channels", metavar="THEIRS,YOURS", type=_channels,
                   help="a two-channel call recording: the interviewer's channel and yours (e.g. 1,2)")
    p.add_argument("--candidate-device", metavar="NAME|INDEX|off",
                   help="your microphone (default: the system's; off: only the interviewer is heard)")
    p.add_argument("--speed", type=_speed, default=1.0, help="file replay speed (1 = real time)")
    p.add_argument("--asr-model", help='"bundled" (tiny.en), a model folder, or a Whisper size downloaded '
                   'at a pinned commit (small.en, medium.en, or SIZE@COMMIT)')
    p.add_argument("--language", help="Whisper language code (default: en)")
    p.add_argument("--events", metavar="FILE|-", help="write every event as a JSON line")
    p.add_argument("--trace", choices=("console", "otlp"),
                   help="per-turn OpenTelemetry traces (otlp: OTEL_EXPORTER_OTLP_ENDPOINT)")
    p.add_argument("--trace-text", action="store_true",
                   help="include transcript text in spans (with --trace otlp it leaves this machine)")


def _channels(text: str) -> tuple[int, int]:
    """"1,2" (1-based, as audio editors number them) → (0, 1)."""
    parts = [p.strip() for p in text.split(",")]
    numbers = [int(p) for p in parts if p.isdigit() and int(p) >= 1]
    if len(parts) != 2 or len(numbers) != 2 or numbers[0] == numbers[1]:
        raise argparse.ArgumentTypeError(f"{text!r} is not two channels: give the interviewer's and yours, "
                                         "e.g. 1,2")
    return numbers[0] - 1, numbers[1] - 1


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 100):
        raise argparse.ArgumentTypeError(f"{text!r} is not a replay speed: give a number above 0 and at "
                                         "most 100 (1 = real time)")
    return value


def _add_llm_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")
    add_key_flags(p)
    p.add_argument("--model", help="model name (env COPILOT_MODEL)")
    p.add_argument("--low-latency", dest="low_latency", action="store_true", default=None,
                   help="speculative requests on (default from settings)")
    p.add_argument("--no-low-latency", dest="low_latency", action="store_false")
    p.add_argument("--http2", action="store_true", help="use HTTP/2 to the endpoint")
    p.add_argument("--resume", metavar="FILE", help="your résumé (.docx, .pdf, .txt or .md) for the answers")
    p.add_argument("--job", metavar="FILE", help="the job description (.docx, .pdf, .txt or .md)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="interview-copilot", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"interview-copilot {__version__}")
    p.add_argument("--list-devices", action="store_true", help="list audio input devices and exit")
    p.add_argument("--config", metavar="FILE", help="settings file (default: the platform config folder)")
    p.add_argument("--headless", action="store_true", help="no window: print to the terminal")
    _add_audio_flags(p)
    _add_llm_flags(p)
    sub = p.add_subparsers(dest="command")

    t = sub.add_parser("transcribe", help="live transcription of a file or device")
    _add_audio_flags(t, positional=True)

    read = sub.add_parser("read", help="print the text on a screenshot as read (code indented)")
    read.add_argument("image", help="a screenshot (PNG, JPEG, …)")
    read.add_argument("--language", help="zh: keep Chinese punctuation (default: en)")

    listen = sub.add_parser("listen", help="the whole pipeline (window, or --headless)")
    listen.add_argument("--headless", action="store_true", help="no window: print to the terminal")
    listen.add_argument("--question-image", action="append", metavar="IMAGE",
                        help="a screenshot of the question, read on this machine and answered as a coding "
                             "question (repeat it for a queue of up to 5 captures: one question)")
    _add_audio_flags(listen)
    _add_llm_flags(listen)

    bench = sub.add_parser("bench", help="benchmarks (speed is measured here, not in tests)")
    bench_sub = bench.add_subparsers(dest="bench", required=True)
    for name, helptext in (("asr", "streaming ASR on a corpus"), ("turns", "response latency per mode"),
                           ("signals", "end-of-turn signals: CPU per call, complete vs cut separation"),
                           ("glossary", "names heard with and without the résumé's terms; pass time")):
        b = bench_sub.add_parser(name, help=helptext)
        b.add_argument("--corpus", required=True, help="folder with WAVs and manifest.json")
        b.add_argument("--out", default="bench-out", help="folder for the JSON summary")
        b.add_argument("--limit", type=int, help="only the first N clips")
        if name == "turns":
            b.add_argument("--base-url", help="benchmark against this endpoint instead of the test server")
            add_key_flags(b, "else the test server's")
            b.add_argument("--model")
            b.add_argument("--profile", default="relay", help="test server profile (relay, instant, local)")
            b.add_argument("--modes", default="naive,user-fixes,rules,product",
                           help="naive (a new client per request, no guess, no shorter wait after a "
                                "question), user-fixes (one warm client, unbuffered tokens, guesses "
                                "reused at a 0.92 ratio), rules (the text-rules endpointer, no "
                                "end-of-turn model), pluely / glass (the turn ends after a fixed "
                                "0.4 s / 2 s of silence, no guess), smart-turn (Smart Turn v3.2 alone: "
                                "the smart-turn extra), product (the defaults); "
                                "MODE@SECTION.KEY=VALUE changes a setting (product@vad.hangover_ms=30; "
                                "a list's items joined by +: product@turns.words_languages=en+zh)")
            b.add_argument("--against", metavar="REV",
                           help="also replay every clip with another tree's code (a commit, or a "
                                "folder holding a checkout), in ABBA order, each mode reported as "
                                "MODE and MODE^REV with the ratios of their medians and p95s")
            b.add_argument("--candidate-track", default="off", metavar="off,reply,echo,overlap",
                           help="the candidate's side of the call, one run per variant")
            b.add_argument("--load", metavar="SET[,SET]",
                           help="also replay every clip under each load SET, in the same sitting (ABBA "
                                "order, each mode reported as MODE~SET with its ratio to MODE unloaded): "
                                "N = N processes spinning on a core each; call (or callN) = one (N) "
                                "video-call-like process, 60%% of a core in 20 ms bursts")
            b.add_argument("--screen-load", action="store_true",
                           help="also replay every clip with a screen read in flight (the product's "
                                "reader on a 1920x1080 page, again and again), ABBA, each mode reported "
                                "as MODE~screen with its ratio to MODE")
            b.add_argument("--local", action="store_true", help="against the embedded local LLM")
            b.add_argument("--clips", metavar="q01,q07", help="only these clips (a subset across kinds)")
            b.add_argument("--pauses", action="store_true",
                           help="score the mid-turn pauses the manifest lists (false cut-offs against "
                                "the delay, eot-bench's curve) and draw eot-curve.png beside the JSON")
        if name == "glossary":
            b.add_argument("--repeats", type=int, default=3, help="passes per clip, with and without")
            b.add_argument("--budgets", help="comma-separated token budgets for the terms, interleaved "
                                             "with no steering (default: the glossary's MAX_PIECES)")
            b.add_argument("--glossary", help="comma-separated terms ahead of the documents' "
                                              "(default: [asr] glossary)")
            b.add_argument("--beams", help="comma-separated beam widths of the final, each with every "
                                           "budget (default: [asr] pause_beam; 1 is greedy)")
    for name, helptext in (("recall", "résumé recall: is the right line first (devtools/bench/know)"),
                           ("answers", "the bundled model's answers: invented specifics, words, 1st token")):
        b = bench_sub.add_parser(name, help=helptext)
        b.add_argument("--out", default="bench-out", help="folder for the JSON summary")
        b.add_argument("--limit", type=int, help="only the first N questions (of each set)")
    screen = bench_sub.add_parser("screen", help="reading the screen: error rate, hotkey→text, text→token")
    screen.add_argument("--out", default="bench-out", help="folder for the JSON summary")
    screen.add_argument("--limit", type=int, help="only the first N pages")
    screen.add_argument("--repeats", type=int, default=3, help="reads per page (ours, then the baseline)")
    screen.add_argument("--threads", type=int, help="reading threads (default: every core, at most 4)")
    screen.add_argument("--against", metavar="REV",
                        help="also read every page with another tree's reader (a commit, or a folder "
                             "holding a checkout), ABBA, with the ratio of hotkey → text")
    soak = bench_sub.add_parser("soak", help="an hour in one process: memory, threads, files, CPU, latency")
    soak.add_argument("--corpus", help="folder with session.wav and manifest.json (none with --room-only)")
    soak.add_argument("--minutes", type=float, default=45.0, help="length of the replay (real time)")
    soak.add_argument("--silence-minutes", type=float, default=3.0,
                      help="each of the two room-tone stretches")
    soak.add_argument("--room-db", type=float, default=-42.0, help="room tone level, dBFS")
    soak.add_argument("--room-only", action="store_true", help="nothing but room tone (the empty room)")
    soak.add_argument("--sample-s", type=float, default=5.0, help="seconds between samples")
    soak.add_argument("--profile", default="relay", help="test server profile (relay, instant, local)")
    soak.add_argument("--out", default="bench-out", help="folder for the JSON summary")
    paint = bench_sub.add_parser("paint", help="the answer pane: a token of answer 100 against answer 1")
    paint.add_argument("--answers", type=int, default=100, help="answers streamed into the pane")
    paint.add_argument("--keep", type=int, help="answers the paged pane keeps live (default: the pane's)")
    paint.add_argument("--out", default="bench-out", help="folder for the JSON summary")
    sub.add_parser("self-test", help="check the installed app works (--json, --only NAME[,NAME])")
    sub.add_parser("doctor", help="check audio, ASR and the LLM endpoint, and say what to fix (--help)",
                   add_help=False)
    return p
