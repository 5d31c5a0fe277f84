"""Document readers run in ``spawn`` children (issue 54, item 3): both entry points must
let a child start without running the app again."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_bundle_entry_hands_children_to_multiprocessing_first() -> None:
    """PyInstaller's bootloader runs the entry script in every child: ``freeze_support``
    must come before the app is imported, or a reader's child would start the app."""
    tree = ast.parse((ROOT / "packaging" / "entry.py").read_text(encoding="utf-8"))
    main = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "_main")
    first = main.body[0]
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Call)
    assert ast.unparse(first.value) == "multiprocessing.freeze_support()"


def test_python_dash_m_app_as_a_spawned_child_runs_nothing() -> None:
    """``spawn`` re-imports ``python -m app``'s main module as ``__mp_main__``."""
    code = "import runpy; runpy.run_module('app.__main__', run_name='__mp_main__'); print('imported')"
    run = subprocess.run([sys.executable, "-c", code, "listen", "--help"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert run.returncode == 0 and run.stdout.strip() == "imported", run.stdout + run.stderr
