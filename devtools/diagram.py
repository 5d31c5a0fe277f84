"""Render ARCHITECTURE.md's Mermaid diagram to docs/architecture/pipeline.png.

The Markdown keeps the source (GitHub renders it); the PNG is for every other viewer.
Needs Debian's chromium and the npm package mermaid (``npm install mermaid@11`` in a folder
of your choice):

    python -m devtools.diagram --mermaid-js ~/mm/node_modules/mermaid/dist/mermaid.min.js
"""

from __future__ import annotations

import argparse
import html
import re
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "ARCHITECTURE.md"
IMAGE = ROOT / "docs" / "architecture" / "pipeline.png"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--force-device-scale-factor=1.5", "--virtual-time-budget=5000")


def mermaid_source(markdown: str) -> str:
    found = re.search(r"```mermaid\n(.*?)```", markdown, re.S)
    if found is None:
        raise SystemExit(f"{SOURCE.name} has no mermaid block")
    return found.group(1)


def page(diagram: str, mermaid_js: Path) -> str:
    return (f'<!doctype html><meta charset="utf-8"><body style="margin:0;background:white">'
            f'<pre class="mermaid">{html.escape(diagram, quote=False)}</pre>'
            f'<script src="{mermaid_js.resolve().as_uri()}"></script>'
            '<script>mermaid.initialize({startOnLoad: true, theme: "default"});</script>')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mermaid-js", type=Path, required=True, help="mermaid.min.js from npm")
    parser.add_argument("--size", default="1500,440", help="the window, in CSS pixels")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        html_file = Path(folder) / "diagram.html"
        html_file.write_text(page(mermaid_source(SOURCE.read_text(encoding="utf-8")), args.mermaid_js),
                             encoding="utf-8")
        subprocess.run(["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={folder}/profile",
                        f"--window-size={args.size}", f"--screenshot={IMAGE}", html_file.as_uri()],
                       check=True, capture_output=True, timeout=120)
    print(f"wrote {IMAGE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
