"""uv.lock is what every install uses (packaging/install_locked.sh): it must say what
pyproject.toml asks for, on the three systems the installers ship for."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _lock() -> dict[str, Any]:
    return tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))


def _asked(pyproject: dict[str, Any]) -> set[tuple[str, str, frozenset[str], str]]:
    """(name, specifier, extras, marker) for every requirement, extras' markers included."""
    project = pyproject["project"]
    rows = [(Requirement(r), None) for r in project["dependencies"]]
    for extra, reqs in project["optional-dependencies"].items():
        rows += [(Requirement(r), extra) for r in reqs]
    out = set()
    for req, extra in rows:
        markers = [str(req.marker)] if req.marker else []
        if extra is not None:
            markers.append(f"extra == '{extra}'")
        out.add((canonicalize_name(req.name), str(req.specifier), frozenset(req.extras), _quotes(markers)))
    return out


def _quotes(markers: list[str]) -> str:
    """Markers joined, in one quoting style (packaging writes double quotes, uv single)."""
    return " and ".join(markers).replace("'", '"')


def _locked(lock: dict[str, Any]) -> set[tuple[str, str, frozenset[str], str]]:
    project = next(p for p in lock["package"] if p["name"] == "interview-copilot")
    out = set()
    for row in project["metadata"]["requires-dist"]:
        marker = row.get("marker", "")
        # uv writes the extra's clause first; pyproject's own marker comes before it here
        parts = [m.strip() for m in marker.split(" and ")] if marker else []
        parts.sort(key=lambda m: m.startswith("extra =="))
        out.add((canonicalize_name(row["name"]), str(Requirement(f"x{row.get('specifier', '')}").specifier),
                 frozenset(row.get("extras", [])), _quotes(parts)))
    return out


def test_the_lock_says_what_pyproject_asks_for() -> None:
    """Fails when a dependency is added, dropped or changed without running `python -m uv lock`."""
    asked, locked = _asked(_pyproject()), _locked(_lock())
    assert asked == locked, (f"pyproject.toml only: {sorted(asked - locked)}; "
                             f"uv.lock only: {sorted(locked - asked)}: run .venv/bin/python -m uv lock")


def test_every_locked_file_has_a_hash() -> None:
    for package in _lock()["package"]:
        if package["name"] == "interview-copilot":
            continue
        files = list(package.get("wheels", [])) + ([package["sdist"]] if "sdist" in package else [])
        assert files, package["name"]
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", f.get("hash", "")) for f in files), package["name"]


def test_the_native_libraries_have_wheels_for_the_three_systems() -> None:
    """The installers build on Windows x64, macOS arm64 and Linux x86-64 from this lock."""
    tags = {"win_amd64": "Windows", "macosx_": "macOS", "manylinux": "Linux"}
    packages = _lock()["package"]
    for name in ("numpy", "ctranslate2", "onnxruntime", "pyside6-essentials", "webrtcvad-wheels"):
        urls = [w["url"] for p in packages if p["name"] == name for w in p["wheels"]]
        for tag, system in tags.items():
            fits = [u for u in urls if tag in u and any(t in u for t in ("cp311", "abi3", "py3-none"))]
            assert fits, f"{name} has no Python 3.11 wheel for {system} in uv.lock"


def test_llama_cpp_is_compiled_at_the_locked_version() -> None:
    """CI caches the compiled wheel by packaging/llama-cpp-python.txt: it must name the lock's version."""
    pin = (ROOT / "packaging" / "llama-cpp-python.txt").read_text(encoding="utf-8")
    match = re.search(r"^llama-cpp-python==(\S+)$", pin, re.MULTILINE)
    assert match is not None
    locked = next(p for p in _lock()["package"] if p["name"] == "llama-cpp-python")
    assert locked["version"] == match.group(1) and "sdist" in locked


MACOS_MINIMUM = (14, 0)
"""The oldest macOS the dmg supports (README, Install)."""
MAC_ARM_WHEEL = re.compile(r"-macosx_(\d+)_(\d+)_(?:arm64|universal2)\.whl$")


def test_every_locked_native_wheel_installs_on_the_oldest_supported_macos() -> None:
    """A package whose macOS wheels all need a newer system (opencv-python-headless 5.1:
    macOS 15) would leave the dmg's build, or a user's pip, with an sdist to compile."""
    too_new = []
    for package in _lock()["package"]:
        versions = [tuple(map(int, m.groups())) for wheel in package.get("wheels", [])
                    if (m := MAC_ARM_WHEEL.search(wheel["url"]))]
        if versions and min(versions) > MACOS_MINIMUM:
            too_new.append((package["name"], package["version"], min(versions)))
    assert too_new == []
