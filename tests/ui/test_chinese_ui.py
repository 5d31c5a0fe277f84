"""The window in Chinese: provider presets and language in the settings, the CJK font."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtGui import QFont, QFontMetrics
from pytestqt.qtbot import QtBot

from app.core.config import PROVIDER_PRESETS, Settings, load_settings
from app.ui.settings import SettingsDialog
from app.ui.theme import cjk_families, pane_font, with_cjk_fallback
from tests.memory_keyring import MemoryKeyring


@pytest.fixture(autouse=True)
def _keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryKeyring]:
    import keyring

    monkeypatch.setenv("INTERVIEW_COPILOT_CONFIG_DIR", str(tmp_path / "config"))
    for var in ("INTERVIEW_COPILOT_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    ring = MemoryKeyring()
    previous = keyring.get_keyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(previous)


def test_a_provider_preset_fills_the_endpoint_and_its_options(qtbot: QtBot, tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    dialog = SettingsDialog(Settings(), path)
    qtbot.addWidget(dialog)
    dialog.provider.setCurrentIndex(dialog.provider.findData("ollama"))
    dialog.provider.activated.emit(dialog.provider.currentIndex())
    assert dialog.base_url.text() == "http://localhost:11434/v1"
    assert not dialog.send_cache_key.isChecked()
    dialog.provider.setCurrentIndex(dialog.provider.findData("qwen"))
    dialog.provider.activated.emit(dialog.provider.currentIndex())
    assert dialog.base_url.text() == PROVIDER_PRESETS["qwen"].base_url
    assert dialog.model.text() == "qwen-plus"
    assert "dashscope-intl" in dialog.provider_note.text()
    dialog.send_usage.setChecked(False)  # presets are a starting point, still editable
    dialog.language.setCurrentIndex(dialog.language.findData("zh"))
    dialog.chinese_script.setCurrentIndex(dialog.chinese_script.findData("traditional"))
    dialog.accept()
    assert dialog.result_settings is not None, dialog.error_label.text()
    loaded, problems = load_settings(path)
    assert problems == []
    assert loaded.llm.provider == "qwen" and loaded.llm.base_url == PROVIDER_PRESETS["qwen"].base_url
    assert loaded.llm.send_prompt_cache_key is False and loaded.llm.send_include_usage is False
    assert (loaded.asr.language, loaded.asr.chinese_script) == ("zh", "traditional")


def test_a_typed_language_code_is_kept(qtbot: QtBot, tmp_path: Path) -> None:
    dialog = SettingsDialog(Settings(), tmp_path / "s.toml")
    qtbot.addWidget(dialog)
    dialog.language.setCurrentText("ja")
    assert dialog.language_code() == "ja"
    dialog.language.setCurrentText("english please")
    dialog.accept()
    assert dialog.result_settings is None
    assert "Language" in dialog.error_label.text()


def test_panes_draw_chinese_with_a_chinese_font(qtbot: QtBot) -> None:
    families = cjk_families()
    assert families, "no Chinese font installed: apt-get install fonts-noto-cjk (tests/run.sh does)"
    font = pane_font(QFont("DejaVu Sans", 10), large=False)
    assert font.families()[0] == "DejaVu Sans"  # Latin text keeps the UI font
    assert families[0] in font.families()
    metrics = QFontMetrics(QFont(families[0]))
    assert all(metrics.inFontUcs4(ord(ch)) for ch in "进程和线程有什么区别")
    traditional = with_cjk_fallback(QFont("DejaVu Sans"), "traditional").families()
    simplified = with_cjk_fallback(QFont("DejaVu Sans"), "simplified").families()
    if "Noto Sans CJK TC" in traditional and "Noto Sans CJK SC" in simplified:
        assert traditional.index("Noto Sans CJK TC") < traditional.index("Noto Sans CJK SC")
        assert simplified.index("Noto Sans CJK SC") < simplified.index("Noto Sans CJK TC")
