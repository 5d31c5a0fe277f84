"""Refuse to release a tag that is not ``v{__version__}``.

    python packaging/check_tag.py [TAG]        (default: $GITHUB_REF_NAME)

The release workflow runs this before building anything: a tag ``v0.2.0`` pushed while
``app/__init__.py`` still says ``0.1.0`` would otherwise publish installers whose About box,
file names and ``--version`` disagree with the release they hang under.  pyproject.toml's
version must agree too (it names the wheel).  The version is read as text, not imported:
this runs before the app's dependencies are installed.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def app_version(root: Path = ROOT) -> str:
    text = (root / "app" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__\s*=\s*"([^"]+)"', text, re.MULTILINE)
    if match is None:
        raise SystemExit(f"error: no __version__ = \"…\" in {root / 'app' / '__init__.py'}")
    return match.group(1)


def project_version(root: Path = ROOT) -> str:
    with open(root / "pyproject.toml", "rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def problem(tag: str, root: Path = ROOT) -> str | None:
    """None when ``tag`` may be released; else one sentence saying why not."""
    version = app_version(root)
    if tag != f"v{version}":
        return (f"tag {tag!r} does not match the app's version: app/__init__.py says {version}, "
                f"so the tag must be 'v{version}' (or change __version__ and pyproject.toml first)")
    project = project_version(root)
    if project != version:
        return f"pyproject.toml says {project} but app/__init__.py says {version}: make them equal"
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    tag = args[0] if args else os.environ.get("GITHUB_REF_NAME", "")
    if not tag:
        print("error: no tag given (argument or GITHUB_REF_NAME)", file=sys.stderr)
        return 2
    why = problem(tag)
    if why is not None:
        print(f"error: {why}", file=sys.stderr)
        return 1
    print(f"tag {tag} matches version {app_version()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
