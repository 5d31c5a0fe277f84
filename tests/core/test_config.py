"""Settings files: what a user types survives a save and a load, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.config import ConfigProblem, Settings, load_settings, save_settings
from app.platform.cores import pass_threads

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
    settings.turns.words["zh"].end_words = [text, "对吧"]
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


OLD_FILE = """\
[turns]
policy = "signals"
speculate_min_question_chars = 30
endpoint_silence_ms = 700
end_words = { en = ["right?", "you see"] }
thinking_words = { en = ["and"], zh = ["然后"] }

[answer]
reuse_rule = "exact"
fuzzy_threshold = 0.92
filler_words = { en = ["um"], zh = ["嗯"] }
"""


def test_a_file_with_the_old_word_lists_loads_into_the_lists_per_language(tmp_path: Path) -> None:
    """Files saved before ``[turns.words.LANG]`` held one table per list, and the settings
    dialog wrote the baselines' switches too: they load, with the same lists as before
    (a list's table replaced all its languages: zh had no end words here)."""
    path = tmp_path / "settings.toml"
    path.write_text(OLD_FILE, encoding="utf-8")
    settings, problems = load_settings(path)
    assert problems == []
    assert settings.turns.endpoint_silence_ms == 700
    en, zh = settings.turns.words_of("en"), settings.turns.words_of("zh-CN")
    assert (en.end_words, en.thinking_words, en.fillers) == (["right?", "you see"], ["and"], ["um"])
    assert (zh.end_words, zh.thinking_words, zh.fillers) == ([], ["然后"], ["嗯"])
    assert zh.final_particles == ["吗", "呢", "吧"]  # not in the file: the default
    assert load_settings(save_settings(settings, tmp_path / "again.toml")) == (settings, [])


def test_a_baseline_switch_set_by_hand_is_ignored_with_a_message(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('[turns]\npolicy = "rules"\n\n[answer]\nreuse_rule = "fuzzy"\n', encoding="utf-8")
    settings, problems = load_settings(path)
    assert settings == Settings()
    assert [(p.key, p.line) for p in problems] == [("turns.policy", 2), ("answer.reuse_rule", 5)]
    assert all("no longer a setting" in p.message for p in problems)


def test_a_language_table_replaces_only_the_lists_it_names(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('[turns.words.zh]\nend_words = ["对不对"]\n\n[turns.words.ja]\nfillers = ["えと"]\n',
                    encoding="utf-8")
    settings, problems = load_settings(path)
    assert problems == []
    zh = settings.turns.words_of("zh")
    assert zh.end_words == ["对不对"] and zh.thinking_words == Settings().turns.words_of("zh").thinking_words
    assert settings.turns.words_of("ja").fillers == ["えと"]
    assert settings.turns.words_of("en") == Settings().turns.words_of("en")
    assert "えと" in settings.turns.all_words("fillers")


def _load(tmp_path: Path, text: str) -> tuple[Settings, list[ConfigProblem]]:
    path = tmp_path / "settings.toml"
    path.write_text(text, encoding="utf-8")
    return load_settings(path)


ISSUE_42 = """\
[asr]
glossary = ["ok", 2]

[llm]
base_url = "http://localhost:8080/v1"
model = "gpt-4o"
"""


def test_a_bad_list_item_is_left_out_and_every_other_setting_stays(tmp_path: Path) -> None:
    """Issue 42: one bad item used to reset every setting (the endpoint and model with
    them) and say so 64 times."""
    settings, problems = _load(tmp_path, ISSUE_42)
    assert settings.asr.glossary == ["ok"]
    assert (settings.llm.base_url, settings.llm.model) == ("http://localhost:8080/v1", "gpt-4o")
    assert [(p.key, p.line, p.outcome) for p in problems] == [("asr.glossary[1]", 2, "left out")]
    assert str(problems[0]).startswith(f"{tmp_path / 'settings.toml'}:2: asr.glossary[1]: ")


def test_bad_values_deep_down_fall_back_alone_each_said_once_at_its_line(tmp_path: Path) -> None:
    settings, problems = _load(tmp_path, """\
[turns]
endpoint_silence_ms = 700

[turns.words.en]
end_words = ["right?"]

[turns.words.zh]
end_words = ["对吧", 3, "是不是", 4.5]
fillers = 7
thinking_words = ["然后"]

[prices.mine]
input_per_mtok = -1
output_per_mtok = 2.0

[prices.theirs]
input_per_mtok = 1.0
cached_input_per_mtok = 0.5
output_per_mtok = 4.0
""")
    zh = settings.turns.words_of("zh")
    assert zh.end_words == ["对吧", "是不是"] and zh.thinking_words == ["然后"]
    assert zh.fillers == Settings().turns.words_of("zh").fillers  # the default list
    assert settings.turns.words_of("en").end_words == ["right?"] and settings.turns.endpoint_silence_ms == 700
    assert list(settings.prices) == ["theirs"] and settings.prices["theirs"].output_per_mtok == 4.0
    assert [(p.key, p.line, p.outcome) for p in problems] == [
        ("turns.words.zh.end_words[1]", 8, "left out"), ("turns.words.zh.end_words[3]", 8, "left out"),
        ("turns.words.zh.fillers", 9, "using the default instead"),
        ("prices.mine", 12, "left out")]
    # the price with no default for the field it got wrong goes whole, in one problem
    assert "input_per_mtok: Input should be greater than or equal to 0" in problems[-1].message
    assert "cached_input_per_mtok: Field required" in problems[-1].message


def test_a_section_of_the_wrong_type_falls_back_whole_and_alone(tmp_path: Path) -> None:
    settings, problems = _load(tmp_path, 'asr = "tiny"\n\n[vad]\naggressiveness = 3\n\n[ui]\ntheme = "dark"\n'
                                         'unknown = 1\n')
    assert settings.asr == Settings().asr
    assert (settings.vad.aggressiveness, settings.ui.theme) == (3, "dark")
    assert [(p.key, p.line, p.outcome) for p in problems] == [
        ("asr", 1, "using the default instead"), ("ui.unknown", 8, "ignored")]


def test_a_file_that_is_not_toml_is_all_defaults_and_one_problem(tmp_path: Path) -> None:
    settings, problems = _load(tmp_path, "[asr]\nglossary = [\"ok\"\nmodel = tiny\n")
    assert settings == Settings()
    assert [(p.key, p.line) for p in problems] == [("(file)", 3)] and "not valid TOML" in problems[0].message
    settings, problems = _load(tmp_path, "x = " + "[" * 100_000)  # deeper than the parser's stack
    assert settings == Settings() and [p.key for p in problems] == ["(file)"]


def test_a_settings_path_that_cannot_be_read_is_one_problem(tmp_path: Path) -> None:
    folder = tmp_path / "settings.toml"
    folder.mkdir()
    settings, problems = load_settings(folder)
    assert settings == Settings() and [p.key for p in problems] == ["(file)"]


def test_the_captures_images_are_not_kept_unless_the_candidate_turns_it_on(tmp_path: Path) -> None:
    assert Settings().screen.keep_images is False  # they may show other people's data
    path = tmp_path / "settings.toml"
    path.write_text("[screen]\nkeep_images = true\n", encoding="utf-8")
    settings, problems = load_settings(path)
    assert problems == [] and settings.screen.keep_images and not settings.screen.send_image
