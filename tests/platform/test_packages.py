"""A package's folders are found without running its ``__init__``, and a bare data folder
(what the installers carry for a model package) is found the same way."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from app.platform.packages import package_folders


def test_a_package_is_found_without_running_its_init(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "ic_heavy_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert package_folders("ic_heavy_pkg") == [package]
    assert "ic_heavy_pkg" not in sys.modules


def test_a_bare_data_folder_is_found_as_a_namespace_package(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ic_models_only" / "models").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert package_folders("ic_models_only") == [tmp_path / "ic_models_only"]


def test_a_missing_package_or_a_module_has_no_folders() -> None:
    assert package_folders("ic_no_such_package") == []
    assert package_folders("json.decoder") == []  # a module, not a package
