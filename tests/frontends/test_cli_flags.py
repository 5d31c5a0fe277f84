"""Every subcommand rejects a flag it does not know with its usage and exit 2 (README,
"Exit codes": a bad flag is a problem to fix before starting), instead of running without
it.  The subcommands are read from the command line's own parser, nested ones included,
so a new one is checked without anyone listing it here."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.frontends.cli import _parser

ROOT = Path(__file__).resolve().parents[2]


def subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every path of subcommands under ``parser`` (``("bench", "asr")``…), depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name)
                yield from subcommands(sub, (*path, name))


def subparser(path: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = _parser()
    for name in path:
        parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
    return parser


def required_options(parser: argparse.ArgumentParser) -> list[str]:
    """What the subcommand cannot do without (``bench asr --corpus X``, ``read IMAGE``), so
    the only mistake on the command line is the unknown flag."""
    options = [part for a in parser._actions if a.required and a.option_strings
               for part in (a.option_strings[0], "x")]
    positionals = ["x" for a in parser._actions if a.required and not a.option_strings
                   and not isinstance(a, argparse._SubParsersAction)]
    return options + positionals


PATHS = sorted(subcommands(_parser()))


def test_the_parser_lists_the_subcommands() -> None:
    assert {("transcribe",), ("listen",), ("bench", "asr"), ("self-test",), ("doctor",)} <= set(PATHS)


@pytest.mark.parametrize("path", PATHS, ids=" ".join)
def test_an_unknown_flag_is_a_usage_error(path: tuple[str, ...], tmp_path: Path) -> None:
    """Through the real entry point (``python -m app``), in a fresh user's folders."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "INTERVIEW_COPILOT_CONFIG_DIR": str(tmp_path / "config"), "QT_QPA_PLATFORM": "offscreen"}
    parser = subparser(path)
    args = [*path, *required_options(parser), "--bogus"]
    out = subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, env=env)
    assert out.returncode == 2, f"{' '.join(args)}: exit {out.returncode}\n{out.stdout}{out.stderr}"
    assert "usage:" in out.stderr and "Traceback" not in out.stderr, out.stderr
    # "bench --bogus" is refused first for lacking the benchmark's name; the rest name the flag
    nested = any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
    assert nested or "--bogus" in out.stderr, out.stderr


@pytest.mark.parametrize("command", ["doctor", "self-test"])
def test_a_command_with_its_own_options_after_a_global_flag_is_a_usage_error(command: str) -> None:
    """``--config f doctor`` used to open the window, and ``--headless self-test`` to listen."""
    from app.frontends.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--headless", command])
    assert exit_.value.code == 2
