"""The end-of-turn head ships with the code: in the wheel (package data) and in the
PyInstaller bundle, beside the module that loads it; its licence is stated."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from app.turns.head import HEAD_PATH

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_the_head_as_package_data() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["app"]
    relative = HEAD_PATH.relative_to(REPO / "app").as_posix()
    assert any(fnmatch.fnmatch(relative, p) for p in patterns), patterns


def test_the_bundle_puts_the_head_where_its_module_looks() -> None:
    spec = (REPO / "packaging" / "interview-copilot.spec").read_text(encoding="utf-8")
    assert '(str(ROOT / "app" / "turns" / "end_of_turn_head.json"), "app/turns")' in spec
    assert HEAD_PATH.parent == REPO / "app" / "turns"


def test_the_licences_say_the_head_is_ours_and_derived_from_smollm2() -> None:
    notes = (REPO / "packaging" / "licenses" / "README.txt").read_text(encoding="utf-8")
    assert "end_of_turn_head.json" in notes and "derivative of SmolLM2" in notes


def test_the_about_box_lists_the_head_with_its_licence() -> None:
    from app.session.about import MODEL_LICENCES

    assert [(a, lic) for model, a, lic in MODEL_LICENCES if model.startswith("End-of-turn head")] == [
        ("Interview Copilot", "Apache-2.0")]
