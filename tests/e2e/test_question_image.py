"""``listen --headless --question-image IMAGE …``: screenshots read on this machine, asked as
one coding question through the same answer engine, streamed, and kept in the session file."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from app.core.config import APP_NAME
from app.screen.picture import load
from devtools.fake_server import FakeServer, Profile, has_image
from devtools.screen_pages import render
from tests.frontends.test_cli_faults import env_for

ROOT = Path(__file__).resolve().parents[2]


def listen(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", "listen", "--headless", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env_for(home))


def _ask_problem_and_editor(tmp_path: Path, answer_tokens: int) -> tuple[Path, Path, Any, list[Any]]:
    """Two captures (a problem, a dark editor) asked headless: the images, the run, and the
    answer requests the server saw (warm-ups left out)."""
    problem = render("problem").save(tmp_path / "problem.png")
    editor = render("editor", theme="dark").save(tmp_path / "editor.png")
    with FakeServer(Profile(answer_tokens=answer_tokens), api_key="sk-test-1") as server:
        out = listen(["--question-image", str(problem), "--question-image", str(editor), "--base-url",
                      server.start(), "--api-key", "sk-test-1", "--model", "gpt-4o-mini"], tmp_path)
        asked = [r.body for r in server.requests("/v1/chat/completions")
                 if isinstance(r.body, dict) and int(r.body.get("max_tokens") or 0) > 1]
    return problem, editor, out, asked


def test_two_captures_are_one_question_answered_and_saved(tmp_path: Path) -> None:
    _, _, out, asked = _ask_problem_and_editor(tmp_path, answer_tokens=8)
    assert out.returncode == 0, out.stderr
    assert "Q (screen, 2 captures):" in out.stdout and "A: " in out.stdout
    [request] = asked
    question = request["messages"][-1]["content"]
    assert question.index("1. Two Sum") < question.index("class Solution:") < question.index("TypeError")
    assert "Fix the error." in question and not has_image(request["messages"])
    [log] = (tmp_path / "data").rglob("session-*.jsonl")
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    written = [e for e in events if e["event"] == "written"]
    assert len(written) == 1 and written[0]["captures"] == 2 and "two_sum" in written[0]["text"]
    assert [e for e in events if e["event"] == "answer_done" and e["turn"] == written[0]["turn"]]
    assert written[0]["kept"] == [] and "pictures" not in written[0]  # keep_images is off: the text only
    assert not list(log.parent.glob("*.captures"))


def test_keep_images_keeps_the_captures_beside_the_session_file_and_sends_none(tmp_path: Path) -> None:
    settings = tmp_path / "config" / APP_NAME / "settings.toml"
    settings.parent.mkdir(parents=True)
    settings.write_text("[screen]\nkeep_images = true\n", encoding="utf-8")
    problem, editor, out, asked = _ask_problem_and_editor(tmp_path, answer_tokens=4)
    assert out.returncode == 0, out.stderr
    assert len(asked) == 1 and not has_image(asked[0]["messages"])  # kept is not sent: send_image is off
    [log] = (tmp_path / "data").rglob("session-*.jsonl")
    [written] = [e for e in map(json.loads, log.read_text(encoding="utf-8").splitlines())
                 if e["event"] == "written"]
    assert "pictures" not in written and len(written["kept"]) == 2
    kept = [log.parent / name for name in written["kept"]]
    assert [p.parent for p in kept] == [log.with_name(f"{log.stem}.captures")] * 2
    assert np.array_equal(load(kept[0]), load(problem)) and np.array_equal(load(kept[1]), load(editor))
    if sys.platform != "win32":
        assert {stat.S_IMODE(p.stat().st_mode) for p in kept} == {0o600}
        assert stat.S_IMODE(kept[0].parent.stat().st_mode) == 0o700


def test_a_capture_that_is_not_an_image_is_exit_2_before_anything_starts(tmp_path: Path) -> None:
    notes = tmp_path / "notes.png"
    notes.write_text("not a picture")
    out = listen(["--question-image", str(notes), "--base-url", "http://127.0.0.1:9", "--api-key", "k"],
                 tmp_path)
    assert out.returncode == 2 and "not an image" in out.stderr and "Traceback" not in out.stderr


def test_with_the_bundled_135m_model_it_says_plainly_that_coding_needs_a_larger_one(tmp_path: Path) -> None:
    chat = render("chat").save(tmp_path / "chat.png")
    with FakeServer(Profile(answer_tokens=4), api_key="k", models=("SmolLM2-135M-Instruct",)) as server:
        out = listen(["--question-image", str(chat), "--base-url", server.start(), "--api-key", "k",
                      "--model", "SmolLM2-135M-Instruct", "--events", "-"], tmp_path)
    assert out.returncode == 0, out.stderr
    notes = [json.loads(line)["message"] for line in out.stdout.splitlines()
             if line.startswith("{") and '"status"' in line]
    assert any("coding answers need a larger model" in note and "GGUF" in note for note in notes)
