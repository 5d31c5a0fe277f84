"""Settings files: what a user types survives a save and a load, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import Settings, load_settings, save_settings

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
