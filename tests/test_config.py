"""Settings files: what a user types survives a save and a load, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import Settings, load_settings, save_settings
from app.cores import pass_threads

TYPED = [
    'Say "hello" first',
    r"C:\Users\me\résumé.pdf",
    "line one\r\nline two\nline three\r",
    "a\ttab and a trailing backslash \\",
    "中文的系统提示：请用普通话回答。",
    "emoji 🎤🧠 and 'single' quotes",
    "''' triple quotes \"\"\" too",
    "",
]


@pytest.mark.parametrize("text", TYPED)
def test_every_kind_of_string_round_trips(tmp_path: Path, text: str) -> None:
    settings = Settings()
    settings.prompt.system_prompt = text
    settings.prompt.resume_file = text or None
    settings.turns.end_words["zh"] = [text, "对吧"]
    path = save_settings(settings, tmp_path / "settings.toml")
    loaded, problems = load_settings(path)
    assert problems == []
    assert loaded == settings


def test_a_bad_value_falls_back_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("[vad]\naggressiveness = 9\n\n[llm]\nmodel = \"gpt-4o\"\n", encoding="utf-8")
    settings, problems = load_settings(path)
    assert settings.vad.aggressiveness == Settings().vad.aggressiveness
    assert settings.llm.model == "gpt-4o"
    assert [(p.key, p.line) for p in problems] == [("vad.aggressiveness", 2)]


def test_recognition_threads_leave_a_core_and_stay_unset_in_the_file(tmp_path: Path) -> None:
    """Unset, a pass takes every core but one (at most 4); the saved file keeps it unset, so
    settings carried to another machine use that machine's cores."""
    assert [pass_threads(n) for n in (1, 2, 3, 4, 8, 32)] == [1, 1, 2, 3, 4, 4]
    path = save_settings(Settings(), tmp_path / "settings.toml")
    assert "cpu_threads" not in path.read_text(encoding="utf-8")
    assert load_settings(path)[0].asr.cpu_threads is None
    pinned = Settings()
    pinned.asr.cpu_threads = 2
    assert load_settings(save_settings(pinned, tmp_path / "pinned.toml"))[0].asr.cpu_threads == 2
