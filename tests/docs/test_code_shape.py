"""The shape a newcomer can read: bounds over all of ``app/``, checked so they cannot drift.

- No constructor takes more than :data:`MAX_PARAMETERS` parameters: the rest belong in
  the settings objects that exist (``Sources``, ``SessionOptions``, ``ClientTuning``, …).
- No docstring runs past :data:`MAX_DOCSTRING_LINES` lines: it says what a thing is for
  and why, and points to its decision record for the rest.
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
MAX_PARAMETERS = 8
"""The guide's "no constructor over ~8 parameters" (``self`` not counted)."""
MAX_DOCSTRING_LINES = 15
"""Longer, and it is an essay: the reasons go to docs/decisions/."""


def _parameters(init: ast.FunctionDef) -> int:
    """Every parameter but ``self``: positional, keyword-only, ``*args``, ``**kwargs``."""
    a = init.args
    return (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) - 1
            + (a.vararg is not None) + (a.kwarg is not None))


def _constructors() -> list[tuple[str, int]]:
    """(``file:Class``, its ``__init__``'s parameter count) for every class in ``app/``."""
    found = []
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    where = f"{path.relative_to(APP.parent).as_posix()}:{node.name}"
                    found.append((where, _parameters(item)))
    return found


def test_no_constructor_takes_more_than_eight_parameters() -> None:
    over = [(where, count) for where, count in _constructors() if count > MAX_PARAMETERS]
    assert not over, f"group the rest into a settings object: {over}"


def test_the_count_sees_every_kind_of_parameter() -> None:
    """The bound can fail: positional, keyword-only, ``*args`` and ``**kwargs`` all count."""
    tree = ast.parse("class C:\n    def __init__(self, a, /, b, *c, d, **e): pass\n")
    init = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    assert _parameters(init) == 5
    assert dict(_constructors())["app/session/session.py:Session"] >= 1  # it finds app's classes


def _docstring_lines(source: str) -> list[tuple[str, int]]:
    """(name, lines) of every docstring in ``source``: the module's, classes', functions'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((getattr(node, "name", "<module>"), len(doc.strip("\n").splitlines())))
    return found


def test_no_docstring_runs_past_fifteen_lines() -> None:
    over = [(f"{path.relative_to(APP.parent).as_posix()}:{name}", lines)
            for path in sorted(APP.rglob("*.py"))
            for name, lines in _docstring_lines(path.read_text(encoding="utf-8"))
            if lines > MAX_DOCSTRING_LINES]
    assert not over, f"say what and why in a few lines, the rest in docs/decisions/: {over}"


def test_the_docstring_count_sees_modules_classes_and_functions() -> None:
    sixteen = "\n".join(["line"] * 16)
    source = f'"""{sixteen}"""\nclass C:\n    """one"""\n    def f(self):\n        """{sixteen}"""\n'
    assert _docstring_lines(source) == [("<module>", 16), ("C", 1), ("f", 16)]
