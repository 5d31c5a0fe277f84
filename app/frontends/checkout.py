"""Finding the developer tools (``devtools/``) that sit beside ``app/`` in a source checkout.

The benchmarks, the OpenAI-compatible test server and the scripted interview are not
part of the product: the wheel and the desktop bundle leave them out.  From a checkout
(``pip install -e .`` maps only ``app``, so the folder is found next to it) the
``interview-copilot bench …`` command still works; an installed app says where to get
them instead of failing with an ImportError.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

from app.core.config import Settings

MISSING = (
    "bench: the benchmarks are developer tools (devtools/) that come with the source, not "
    "with the installed app. Run them from a source checkout of Interview Copilot:\n"
    "  python3 -m venv .venv && .venv/bin/pip install -e '.[dev]'\n"
    "  .venv/bin/interview-copilot bench …"
)


class DevtoolsMissing(RuntimeError):
    """No ``devtools`` package: an installed app or bundle; the message says what to do."""


def checkout_root() -> Path | None:
    """The source checkout ``app`` was imported from, if ``devtools/`` sits beside it."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "devtools" / "__init__.py").is_file() else None


def import_devtools(module: str) -> ModuleType:
    """``devtools.<module>``, from the path or else from the checkout beside ``app``."""
    name = f"devtools.{module}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name not in ("devtools", name):
            raise  # devtools is there, but something it needs is not
    root = checkout_root()
    if root is None:
        raise DevtoolsMissing(MISSING)
    sys.path.append(str(root))
    return importlib.import_module(name)


def run_bench(settings: Settings, args: argparse.Namespace) -> int:
    """``interview-copilot bench …``: the benchmarks, or what to install when they are missing."""
    try:
        bench = import_devtools("bench")
    except DevtoolsMissing as exc:
        print(exc, file=sys.stderr)
        return 2
    code: int = bench.run_bench(settings, args)
    return code
