"""Every command and settings example the docs show still works with today's code.

The README and ``docs/`` show ``interview-copilot …`` and ``python -m …`` commands in code
blocks and inline code.  Each one is handed to the real entry point (``app.frontends.cli.main``, or
the module run as ``__main__``) with ``argparse`` stopped right after it has parsed the
command line, so nothing runs, no model loads and the test takes about a second.  A flag
that no longer exists, a wrong subcommand, a bad value, a ``bench turns --modes`` variant
naming a setting that is gone (checked with the benchmark's own ``mode_settings``) and a
``[section] key`` in a TOML example that the settings model refuses all fail, with the
file, the line and the command.  So does a file, folder, module or relative link the docs
name that is no longer there (``app/vad/noise_floor.py``, ``devtools.bench.heldout``).

Parsing is stricter than the app in one place: arguments a parser leaves unrecognised
(``parse_known_args``, as the self-test's does) fail here, since a documented flag that is
silently ignored is as stale as one that is refused.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import re
import runpy
import shlex
import sys
import tomllib
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").rglob("*.md"))]
CLI = "interview-copilot"
OUR_PACKAGES = ("app", "devtools")
"""``python -m`` modules of this project; others (``venv``, ``pytest``) are not ours to check."""
SHELL_BLOCKS = {"", "bash", "sh", "shell", "console"}

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
SEPARATORS = re.compile(r"\s(?:&&|\|\||;|\|)\s")
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Shown:
    """One command as a doc shows it."""

    where: str
    """``file:line``."""
    text: str
    argv: tuple[str, ...]

    @property
    def module(self) -> str | None:
        """``python -m X …`` → ``X``; None for the app's own command."""
        return self.argv[2] if Path(self.argv[0]).name.startswith("python") else None


# --- finding the commands ------------------------------------------------------------------


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _pieces(snippet: str) -> Iterator[str]:
    """The simple commands of one shell line: ``a && b`` → ``a``, ``b``."""
    yield from (part.strip() for part in SEPARATORS.split(snippet) if part.strip())


def _joined_lines(block: str) -> Iterator[str]:
    """The block's lines, a line ending in a backslash joined with the next (the newline
    kept, so that line numbers can still be counted)."""
    pending = ""
    for line in block.splitlines():
        if line.endswith("\\"):
            pending += line[:-1] + "\n"
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def _argv(piece: str) -> tuple[str, ...] | None:
    """The command's argv if it is ours (``interview-copilot …`` or ``python -m app|devtools…``)."""
    try:
        words = shlex.split(piece, comments=True)
    except ValueError:
        return None
    while words and ENV_ASSIGNMENT.match(words[0]):  # CMAKE_ARGS=… .venv/bin/pip …
        words.pop(0)
    if not words or words[0].endswith("/"):  # a folder named like the app
        return None
    program = Path(words[0]).name
    if program == CLI:
        return tuple(words)
    if program.startswith("python") and len(words) >= 3 and words[1] == "-m" \
            and words[2].split(".")[0] in OUR_PACKAGES:
        return tuple(words)
    return None


def shown_commands(path: Path) -> list[Shown]:
    """Our commands in ``path``: in shell code blocks (one per line, continuation lines
    joined) and in inline code spans outside them."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(ROOT).as_posix()
    found: list[Shown] = []
    fenced: list[tuple[int, int]] = []
    for block in FENCE.finditer(text):
        fenced.append(block.span())
        if block.group(1).lower() not in SHELL_BLOCKS:
            continue
        number = _line_of(text, block.start(2))
        for line in _joined_lines(block.group(2)):
            for piece in _pieces(line):
                argv = _argv(piece)
                if argv is not None:
                    found.append(Shown(f"{name}:{number}", piece, argv))
            number += line.count("\n") + 1
    for span in INLINE.finditer(text):
        if any(start <= span.start() < end for start, end in fenced):
            continue
        argv = _argv(span.group(1))
        if argv is not None:
            found.append(Shown(f"{name}:{_line_of(text, span.start())}", span.group(1), argv))
    return found


MODE_VARIANT = re.compile(r"(?<![\w.-])(\w[\w-]*(?:@[a-z_]+\.[a-z0-9_]+=[^\s,`@]+)+)")
"""A ``bench turns`` mode with settings changed (``product@vad.hangover_ms=30``, ``rules@…``), wherever the
docs name one, also outside a whole command (``MODE@SECTION.KEY=VALUE``, in capitals, is
the syntax, not a mode)."""


def mode_variants(path: Path) -> list[tuple[str, str]]:
    """Every ``MODE@SECTION.KEY=VALUE`` in ``path``'s code (blocks and inline): (``file:line``, mode)."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(ROOT).as_posix()
    code = [(m.start(2), m.group(2)) for m in FENCE.finditer(text)]
    code += [(m.start(1), m.group(1)) for m in INLINE.finditer(text)]
    return [(f"{name}:{_line_of(text, start + found.start())}", found.group(1))
            for start, snippet in code for found in MODE_VARIANT.finditer(snippet)]


REPO_PATH = re.compile(r"^(?:app|devtools|tests|packaging|assets|docs)/[\w./-]*$")
DOTTED = re.compile(r"^(?:app|devtools)(?:\.\w+)+$")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def named_places(path: Path) -> list[tuple[str, str]]:
    """Files, folders and modules of this repository the doc names: inline code that is a
    path (``app/vad/noise_floor.py``) or a dotted name (``devtools.bench.heldout``), and
    relative links.  (``file:line``, what is named.)"""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(ROOT).as_posix()
    places = [(f"{name}:{_line_of(text, m.start())}", m.group(1).strip()) for m in INLINE.finditer(text)
              if REPO_PATH.match(m.group(1).strip()) or DOTTED.match(m.group(1).strip())]
    for link in LINK.finditer(text):
        target = link.group(1)
        if "://" not in target and not target.startswith("mailto:"):
            where = (path.parent / target).resolve().relative_to(ROOT).as_posix()
            places.append((f"{name}:{_line_of(text, link.start())}", where))
    return places


def _exists(place: str) -> bool:
    if not DOTTED.match(place):
        return (ROOT / place).exists()
    parts = place.split(".")
    for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
        module = ".".join(parts[:cut])
        try:
            if importlib.util.find_spec(module) is None:
                continue
        except ModuleNotFoundError:
            continue
        obj: object = importlib.import_module(module)
        for attribute in parts[cut:]:
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


def settings_examples(path: Path) -> list[tuple[str, str]]:
    """``toml`` code blocks: (``file:line``, text)."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(ROOT).as_posix()
    return [(f"{name}:{_line_of(text, block.start(2))}", block.group(2))
            for block in FENCE.finditer(text) if block.group(1).lower() == "toml"]


ALL_SHOWN = [shown for path in DOCS for shown in shown_commands(path)]


# --- parsing them with the real parsers ----------------------------------------------------


class _Parsed(BaseException):
    """Raised by the outermost ``parse_known_args`` once the command line is parsed (not an
    ``Exception``: the CLI says any of those in one line and returns, as a user sees it)."""

    def __init__(self, namespace: argparse.Namespace, extras: list[str]) -> None:
        super().__init__()
        self.namespace = namespace
        self.extras = extras


@contextlib.contextmanager
def _stop_after_parsing() -> Iterator[None]:
    """Let the entry point build its parsers and parse, then stop it before it acts.

    Subcommands parse through nested ``parse_known_args`` calls; only the outermost one
    stops the program, with whatever was left unrecognised.
    """
    real = argparse.ArgumentParser.parse_known_args
    depth = 0

    def parse_known_args(self: argparse.ArgumentParser, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        nonlocal depth
        depth += 1
        try:
            parsed, extras = real(self, args, namespace)
        finally:
            depth -= 1
        if depth == 0:
            raise _Parsed(parsed, extras)
        return parsed, extras

    with mock.patch.object(argparse.ArgumentParser, "parse_known_args", parse_known_args):
        yield


def parse_problem(argv: tuple[str, ...]) -> str | None:
    """Why this command would not run as shown, or None when it parses."""
    stderr = io.StringIO()
    try:
        with _stop_after_parsing(), contextlib.redirect_stderr(stderr), \
                contextlib.redirect_stdout(io.StringIO()):
            if Path(argv[0]).name == CLI:
                from app.frontends.cli import main

                main(list(argv[1:]))
            else:
                problem = _run_module(argv[2], list(argv[3:]))
                if problem is not None:
                    return problem
    except _Parsed as parsed:
        if parsed.extras:
            return f"unrecognized arguments: {' '.join(parsed.extras)}"
        return _value_problem(parsed.namespace)
    except SystemExit as exc:
        if exc.code in (0, None):  # --help, --version
            return None
        return stderr.getvalue().strip().splitlines()[-1] if stderr.getvalue().strip() else f"exit {exc.code}"
    return "the command ran past its argument parsing (it has no parser to check)"


def _run_module(module: str, args: list[str]) -> str | None:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return f"no module named {module}"
    origin = Path(spec.origin)
    if spec.submodule_search_locations is not None:  # a package runs its __main__.py
        origin = origin.with_name("__main__.py")
        if not origin.is_file():
            return f"{module} cannot be run with python -m"
    source = origin.read_text(encoding="utf-8")
    if 'if __name__ == "__main__":' not in source:
        return f"{module} cannot be run with python -m"
    if "ArgumentParser(" not in source:
        # No parser (devtools.bench.plots takes file names): it exists and runs as a
        # script; its arguments are files, which the docs name as examples.
        raise _Parsed(argparse.Namespace(), [])
    with mock.patch.object(sys, "argv", [module, *args]), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "found in sys.modules" for a re-run
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    return None


def _value_problem(namespace: argparse.Namespace) -> str | None:
    """Values argparse takes as plain strings but the benchmark validates itself."""
    if getattr(namespace, "bench", None) != "turns":
        return None
    from app.core.config import Settings
    from devtools.bench import candidate
    from devtools.bench.turns import mode_settings

    for mode in (m.strip() for m in namespace.modes.split(",") if m.strip()):
        try:
            mode_settings(Settings(), mode)
        except SystemExit as exc:
            return str(exc)
    unknown = {v.strip() for v in namespace.candidate_track.split(",") if v.strip()} - set(candidate.VARIANTS)
    return f"--candidate-track: unknown {sorted(unknown)}" if unknown else None


# --- the tests -----------------------------------------------------------------------------


@pytest.mark.parametrize("shown", ALL_SHOWN, ids=[s.where for s in ALL_SHOWN])
def test_every_command_the_docs_show_parses(shown: Shown) -> None:
    problem = parse_problem(shown.argv)
    assert problem is None, f"{shown.where}: `{shown.text}` — {problem}"


@pytest.mark.parametrize("where,mode", [v for path in DOCS for v in mode_variants(path)])
def test_every_benchmark_mode_the_docs_name_exists(where: str, mode: str) -> None:
    """Also in prose: a mode measured with a scratch setting that was removed afterwards
    must not be shown as a command to run."""
    from app.core.config import Settings
    from devtools.bench.turns import mode_settings

    try:
        mode_settings(Settings(), mode)
    except SystemExit as exc:
        pytest.fail(f"{where}: `{mode}` — {exc}")


@pytest.mark.parametrize("where,place", [p for path in DOCS for p in named_places(path)])
def test_every_file_module_and_link_the_docs_name_exists(where: str, place: str) -> None:
    """Files move (a module split, a package regrouped): the page that names the old place
    must move with them."""
    assert _exists(place), f"{where}: `{place}` does not exist"


@pytest.mark.parametrize("where,example", [e for path in DOCS for e in settings_examples(path)])
def test_every_settings_example_is_valid(where: str, example: str) -> None:
    from pydantic import ValidationError

    from app.core.config import Settings

    try:
        Settings.model_validate(tomllib.loads(example))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        pytest.fail(f"{where}: the settings example is refused: {exc}")


def test_the_readme_shows_the_two_commands_and_the_everyday_ones() -> None:
    """The first command sets up and runs the app on a fresh machine, the second the tests;
    both must stay in the README exactly (other tools run them as written)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [block.group(2).strip() for block in FENCE.finditer(readme)]
    assert ("python3 -m venv .venv && CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" .venv/bin/pip install -e "
            "'.[local,zh]' && .venv/bin/interview-copilot --audio assets/demo.wav") in blocks
    assert "bash tests/run.sh" in blocks
    assert (ROOT / "assets" / "demo.wav").is_file() and (ROOT / "tests" / "run.sh").is_file()
    readme_commands = [s for s in ALL_SHOWN if s.where.startswith("README.md:")]
    assert len(readme_commands) >= 15, "too few commands found: is the extraction still reading the README?"
    assert any(s.module and s.module.startswith("devtools.bench") for s in ALL_SHOWN)


@pytest.mark.parametrize("argv", [
    "interview-copilot --made-up-flag",
    "interview-copilot listen --headless --mic --made-up-flag",
    "interview-copilot transcribe q.wav --made-up-flag",
    "interview-copilot no-such-command",
    "interview-copilot --trace jaeger",
    "interview-copilot bench turns --corpus dev --made-up-flag",
    "interview-copilot bench turns --corpus dev --modes ours,fastest",
    "interview-copilot bench turns --corpus dev --modes product@vad.no_such_setting=300",
    "interview-copilot bench turns --corpus dev --modes product@vad.hangover_ms=soon",
    "interview-copilot bench turns --corpus dev --candidate-track off,shout",
    "interview-copilot bench asr",
    "interview-copilot doctor --made-up-flag",
    "interview-copilot self-test --made-up-flag",
    "python -m devtools.bench.heldout /tmp/heldout --made-up-flag",
    "python -m devtools.bench.cores --made-up-flag",
    "python -m devtools.bench.no_such_module",
])
def test_a_stale_command_is_caught(argv: str) -> None:
    shown = _argv(argv)
    assert shown is not None
    assert parse_problem(shown) is not None


def test_the_extraction_reads_blocks_lines_and_inline_code(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "Run `interview-copilot --mic` or `pip install x`.\n\n"
        "```bash\n"
        "python3 -m venv .venv && .venv/bin/interview-copilot --audio a.wav   # a comment\n"
        "interview-copilot bench turns \\\n  --corpus dev\n"
        "python -m pytest -q\n"
        "```\n\n"
        "```toml\n[asr]\nlanguage = \"zh\"\n```\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = [(s.where, s.argv) for s in shown_commands(doc)]
    assert found == [
        ("doc.md:4", (".venv/bin/interview-copilot", "--audio", "a.wav")),
        ("doc.md:5", ("interview-copilot", "bench", "turns", "--corpus", "dev")),
        ("doc.md:1", ("interview-copilot", "--mic")),
    ]
    assert settings_examples(doc) == [("doc.md:11", "[asr]\nlanguage = \"zh\"\n")]


@pytest.mark.parametrize("place,exists", [
    ("app/vad/noise_floor.py", True),
    ("app/vad/no_such_file.py", False),
    ("devtools.bench.heldout", True),
    ("app.core.text.question_key", True),
    ("app.core.text.no_such_function", False),
    ("devtools.bench.no_such_module", False),
    ("docs/decisions", True),
])
def test_a_moved_file_or_module_is_caught(place: str, exists: bool) -> None:
    assert _exists(place) is exists
