"""``interview-copilot read IMAGE``: the text as read, or exit 2 with one clear line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from devtools.screen_pages import render

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", "read", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=240, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                                       "HOME": str(home)})


def test_a_screenshot_prints_its_code_indented(tmp_path: Path) -> None:
    done = run(str(render("editor").save(tmp_path / "editor.png")), home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "            if target - n in seen:" in done.stdout.splitlines()


def test_chinese_keeps_its_punctuation(tmp_path: Path) -> None:
    done = run(str(render("chat", language="zh", text_px=14).save(tmp_path / "chat.png")), "--language", "zh",
               home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "，" in done.stdout


def test_not_an_image_nothing_readable_and_all_black_exit_2_with_one_line(tmp_path: Path) -> None:
    notes = tmp_path / "notes.png"
    notes.write_text("hello")
    black = tmp_path / "black.png"
    Image.fromarray(np.zeros((1080, 1920, 3), np.uint8)).save(black)
    noise = tmp_path / "gradient.png"
    Image.fromarray(np.tile(np.linspace(0, 255, 640, dtype=np.uint8)[None, :, None], (360, 1, 3))).save(noise)
    for path, words in ((notes, "not an image"), (black, "all black"), (noise, "no text")):
        done = run(str(path), home=tmp_path)
        assert done.returncode == 2, (path, done.stdout, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and words in lines[0] and "Traceback" not in done.stderr, done.stderr


def test_output_piped_into_a_reader_that_leaves_is_not_an_error(tmp_path: Path) -> None:
    """``read shot.png | head -1``: the pipe closes under us; nothing is said, the shell's
    code for it is the exit code."""
    page = str(render("problem").save(tmp_path / "problem.png"))
    child = subprocess.Popen([sys.executable, "-m", "app", "read", page], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                                          "HOME": str(tmp_path)})
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the reader leaves before the text is printed
    assert child.wait(timeout=240) == 141
    assert child.stderr.read() == b""
