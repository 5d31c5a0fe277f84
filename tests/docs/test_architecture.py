"""ARCHITECTURE.md's folder table is the import rule, and the test tree mirrors ``app/``.

The table's last column names what each folder may import; every ``import`` in ``app/``,
lazy ones inside functions included, is checked against it, so the map cannot drift from
the code.  The test tree is checked the same way: a changed file's tests are found by its
path (``app/asr/x.py`` → ``tests/asr/``).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
TESTS = ROOT / "tests"
TEST_ONLY_FOLDERS = {"e2e", "devtools", "packaging", "docs", "data"}
"""Test folders that mirror no package of ``app/``: whole-pipeline runs, the tools beside the
product, the installers and the docs (``data`` holds recorded clips)."""
QT_FOLDERS = {"ui", "frontends"}
"""Where ``PySide6`` may be imported: the window, and the self-test's Qt check."""

ROW = re.compile(r"^\| `app/(?P<folder>[\w.]+)/?` \|.*\| (?P<imports>[^|]+) \|$", re.M)


def table() -> dict[str, set[str]]:
    """``{"asr": {"core", "platform", "audio"}, …}`` as ARCHITECTURE.md's folder table says."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    rows = {m["folder"]: m["imports"].strip() for m in ROW.finditer(text)}
    assert rows, "ARCHITECTURE.md has no folder table"
    allowed: dict[str, set[str]] = {}
    for folder, imports in rows.items():
        if imports == "every folder above":
            allowed[folder] = set().union(*allowed.values()) | set(allowed)
        elif imports == "—":
            allowed[folder] = set()
        else:
            allowed[folder] = set(re.findall(r"`(\w+)`", imports))
    return allowed


def owner(path: Path) -> str:
    """The folder of ``app/`` a module belongs to (``__main__.py`` for the entry point)."""
    return path.relative_to(APP).parts[0]


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, module)`` for every absolute import in a file, at any depth."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


def app_modules() -> list[Path]:
    return sorted(APP.rglob("*.py"))


def test_every_folder_of_app_has_a_row() -> None:
    folders = {owner(p) for p in app_modules()} - {"__init__.py"}
    assert folders - set(table()) == set(), "add these folders to ARCHITECTURE.md's table"
    assert set(table()) - folders == set(), "ARCHITECTURE.md names folders that are gone"


def test_the_table_flows_one_way() -> None:
    allowed = table()
    for folder, names in allowed.items():
        for name in names:
            assert folder not in allowed[name], f"{folder} and {name} may import each other"


def test_every_import_in_app_is_allowed_by_the_table() -> None:
    allowed = table()
    wrong = []
    for path in app_modules():
        folder = owner(path)
        if folder == "__init__.py":
            continue
        for line, module in imports(path):
            top, _, rest = module.partition(".")
            if top == "devtools":
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {module}: app never imports devtools")
            if top == "PySide6" and folder not in QT_FOLDERS:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports Qt outside app/ui")
            if top != "app" or not rest:
                continue
            target = rest.split(".")[0]
            if target != folder and target not in allowed[folder]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports app.{target}, "
                             f"which ARCHITECTURE.md does not allow for app/{folder}")
    assert wrong == []


def test_the_checker_sees_lazy_imports(tmp_path: Path) -> None:
    """A lazy import inside a function counts like one at the top of the file."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from app.ui.window import MainWindow\n", encoding="utf-8")
    assert list(imports(module)) == [(2, "app.ui.window")]


def test_the_test_tree_mirrors_app() -> None:
    packages = {p.name for p in APP.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    assert folders - packages - TEST_ONLY_FOLDERS == set(), "a test folder that mirrors nothing"
    assert list(TESTS.glob("test_*.py")) == [], "tests live in the folder of the code they test"
    for folder in folders - {"data"}:
        assert (TESTS / folder / "__init__.py").exists(), f"tests/{folder} needs an __init__.py"


def test_no_two_test_files_differ_by_a_suffix() -> None:
    """``test_listen`` / ``test_listener`` say nothing about which is which."""
    stems = sorted({p.stem for p in TESTS.rglob("test_*.py")})
    clashes = [(a, b) for a in stems for b in stems if a != b and b.startswith(a)]
    assert clashes == []


def test_test_file_names_are_unique_across_folders() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
