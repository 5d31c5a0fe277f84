"""``interview-copilot bench``: found beside ``app/`` in a checkout, explained when missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.frontends import checkout
from app.frontends.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_devtools_found_beside_app_when_only_app_is_on_the_path(tmp_path: Path) -> None:
    """What an editable install gives: ``app`` importable from anywhere, ``devtools`` not."""
    (tmp_path / "app").symlink_to(ROOT / "app", target_is_directory=True)
    script = ("import importlib.util, sys\n"
              "print(importlib.util.find_spec('devtools'))\n"
              "from app.frontends.checkout import import_devtools\n"
              "print(import_devtools('bench.corpus').__file__)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    spec, found = out.stdout.split()
    assert spec == "None"  # not importable by itself …
    assert Path(found) == ROOT / "devtools" / "bench" / "corpus.py"  # … but found in the checkout


def test_bench_without_devtools_says_where_to_get_them(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An installed app or bundle: no devtools package and no checkout around ``app``."""
    for name in [m for m in sys.modules if m == "devtools" or m.startswith("devtools.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "devtools", None)  # type: ignore[arg-type]
    monkeypatch.setattr(checkout, "checkout_root", lambda: None)
    code = main(["bench", "asr", "--corpus", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "source checkout" in err and "pip install -e" in err and "Traceback" not in err
