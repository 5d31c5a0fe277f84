"""The self-test and the About text, run from the source tree.

The built bundle's self-test is in tests/packaging/test_pyinstaller_bundle.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app import __version__
from app.frontends import selftest
from app.frontends.selftest import CheckFailed, Skipped, find_asset, format_line, run_check, run_self_test
from app.llm import bundle_server
from app.session.about import about_text, component_versions
from app.turns.sound import find_model

REPO = Path(__file__).resolve().parents[2]


def _pass() -> str:
    return "fine"


def _fail() -> str:
    raise CheckFailed("broken", "do this")


def _skip() -> str:
    raise Skipped("not bundled")


def _crash() -> str:
    raise RuntimeError("boom")


def test_run_check_maps_outcomes() -> None:
    assert run_check("a", _pass).status == "pass"
    failed = run_check("b", _fail)
    assert (failed.status, failed.detail, failed.fix, failed.ok) == ("fail", "broken", "do this", False)
    skipped = run_check("c", _skip)
    assert (skipped.status, skipped.ok) == ("skip", True)
    crashed = run_check("d", _crash)
    assert crashed.status == "fail" and "RuntimeError: boom" in crashed.detail and crashed.fix
    assert "fix: do this" in format_line(failed) and format_line(failed).startswith("FAIL b ")


def test_doctor_and_self_test_share_one_result_type_and_one_asr_check() -> None:
    from app.frontends import checks, doctor

    assert selftest.CheckResult is checks.CheckResult is doctor.CheckResult
    assert selftest.check_asr().name == doctor.check_asr().name == "asr"


def test_doctor_no_longer_imports_the_cli() -> None:
    code = ("import sys, app.frontends.doctor, app.frontends.selftest; "
            "print('app.frontends.cli' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.stdout.strip() == "False", out.stderr


def test_exit_code_and_lines(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(selftest, "CHECKS", [("one", _pass), ("two", _skip)])
    assert run_self_test([]) == 0
    out = capsys.readouterr().out
    assert "PASS one" in out and "SKIP two" in out and "all checks passed" in out
    assert f"app {__version__}" in out

    monkeypatch.setattr(selftest, "CHECKS", [("one", _pass), ("two", _fail)])
    assert run_self_test([]) == 1
    out = capsys.readouterr().out
    assert "FAIL two" in out and "fix: do this" in out and "FAILED: two" in out


def test_json_report(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(selftest, "CHECKS", [("one", _pass), ("two", _fail), ("three", _pass)])
    assert run_self_test(["--json", "--only", "one,three"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    assert [c["name"] for c in report["checks"]] == ["one", "three"]
    assert report["versions"]["app"] == __version__


def test_options_after_the_cli_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["interview-copilot", "self-test", "--json"])
    assert selftest._argv_after_command() == ["--json"]


@pytest.mark.parametrize("argv", [["self-test", "--bogus"],
                                  ["self-test", "--json", "--only", "one", "--bogus"]])
def test_an_unknown_flag_is_refused_with_the_usage(argv: list[str], monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped option stops the run (exit 2, as argparse does), not silently ignored."""
    from app.frontends.cli import main

    monkeypatch.setattr(selftest, "CHECKS", [("one", _pass)])
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("usage: interview-copilot self-test")
    assert "unrecognized arguments: --bogus" in captured.err and "PASS one" not in captured.out


def test_demo_clip_found_in_source_tree_and_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_asset("demo.wav") == REPO / "assets" / "demo.wav"
    (tmp_path / "assets").mkdir()
    shutil.copy(REPO / "assets" / "demo.wav", tmp_path / "assets" / "demo.wav")
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert find_asset("demo.wav") == tmp_path / "assets" / "demo.wav"
    assert find_asset("nothing.wav") is None


def test_asr_check_transcribes_the_demo() -> None:
    result = run_check("asr", selftest.check_asr)
    assert result.status in ("pass", "warn"), format_line(result)  # warn: a slow (busy) CPU
    assert "interested in this role" in result.data["text"].lower()


@pytest.mark.parametrize(("expect", "fails"), [
    ("ＩＮＴＥＲＥＳＴＥＤ in this role", False),  # full-width letters: the same words once NFKC-folded
    ("interested in this 'role'", False),  # quotes are punctuation, not part of the word
    ("interested in this rol", True),  # "rol" is not a word of the transcript, only a prefix of one
])
def test_the_asr_check_looks_for_the_words_in_the_transcript(expect: str, fails: bool) -> None:
    """Words as ``app.core.text.words`` cuts them everywhere else, in a row: not characters."""
    from app.frontends.checks import check_asr

    result = check_asr("bundled", "en", expect=expect)
    assert result.failed is fails, format_line(result)
    assert not fails or "unexpected transcript" in result.detail


@pytest.mark.parametrize(("text", "phrase", "said"), [
    ("Why are you interested in this role?", "interested in this role", True),
    ("WHY ARE YOU INTERESTED, in this role", "interested in this role", True),
    ("Why are you disinterested in this roleplay?", "interested in this role", False),
    ("In this role, are you interested?", "interested in this role", False),  # the words, in that order
    ("为什么想加入这个团队？", "加入这个团队", True),  # each CJK character a word
    ("anything", "", True),
])
def test_says_compares_word_sequences(text: str, phrase: str, said: bool) -> None:
    from app.frontends.checks import says

    assert says(text, phrase) is said


def test_missing_clip_is_a_failure_with_a_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.frontends.checks.find_asset", lambda name: None)
    result = run_check("vad", selftest.check_vad)
    assert result.status == "fail" and "demo.wav not found" in result.detail and result.fix
    asr = run_check("asr", selftest.check_asr)
    assert asr.status == "fail" and "demo.wav not found" in asr.detail


@pytest.mark.parametrize("name", ["vad", "qt", "audio", "hotkeys", "opencc", "word-list", "zh-model",
                                  "smart-turn", "screen-reader", "keychain"])
def test_each_shipped_part_passes_here(name: str) -> None:
    result = run_check(name, dict(selftest.CHECKS)[name])
    if name == "smart-turn" and find_model() is None:  # the optional [smart-turn] extra is absent
        assert result.status == "skip" and "not installed" in result.detail
        return
    assert result.status == "pass", format_line(result)


def test_opencc_check_reports_a_wrong_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.asr import script

    monkeypatch.setattr(script.ScriptConverter, "convert", lambda self, text: text)
    result = run_check("opencc", selftest.check_opencc)
    assert result.status == "fail" and "OpenCC converted" in result.detail and result.fix


def test_the_screen_reader_check_fails_with_a_fix_when_its_models_are_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from app.screen import ocr
    from app.screen.errors import OcrUnavailable

    def missing() -> Path:
        raise OcrUnavailable("the screen reader's models are not installed")

    monkeypatch.setattr(ocr, "model_folder", missing)
    result = run_check("screen-reader", selftest.check_screen_reader)
    assert result.status == "fail" and "models are not installed" in result.detail and result.fix


def test_a_missing_hotkey_backend_fails_on_windows_and_macos(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.ui import hotkeys

    monkeypatch.setattr(hotkeys, "default_backend",
                        lambda: hotkeys.NullBackend("the OS hotkey API could not be loaded (no user32)"))
    monkeypatch.setattr(sys, "platform", "win32")
    result = run_check("hotkeys", selftest.check_hotkeys)
    assert result.status == "fail" and "no user32" in result.detail


def test_no_keychain_backend_fails_on_windows_and_macos(monkeypatch: pytest.MonkeyPatch) -> None:
    import keyring
    from keyring.backends import fail

    monkeypatch.setattr(keyring, "get_keyring", lambda: fail.Keyring())
    monkeypatch.delenv("PYTHON_KEYRING_BACKEND", raising=False)
    linux = run_check("keychain", selftest.check_keychain)
    assert linux.status == "pass" and "OPENAI_API_KEY" in linux.detail  # a desktop without a Secret Service
    monkeypatch.setattr(sys, "platform", "darwin")
    mac = run_check("keychain", selftest.check_keychain)
    assert mac.status == "fail" and "keyring.backends.fail.Keyring" in mac.detail


def test_the_llm_check_warns_on_a_cpu_the_build_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.platform import bundled

    monkeypatch.setattr(bundled, "cpu_flags", lambda: frozenset({"sse3", "ssse3", "sse4_2", "avx"}))
    monkeypatch.setattr(bundled, "machine", lambda: "AMD64")
    monkeypatch.delenv(bundled.SKIP_CPU_CHECK_ENV, raising=False)
    result = run_check("llm", selftest.check_llm)
    assert result.status == "warn" and "lacks AVX2" in result.detail and result.ok


def test_llm_check_skips_when_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import app.llm.local_server as local_server

    monkeypatch.setattr(local_server, "llama_cpp_available", lambda: False)
    result = run_check("llm", selftest.check_llm)
    assert result.status == "skip" and "not bundled" in result.detail


def test_llama_server_command(monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["--model", "m.gguf", "--port", "1"]
    # From source through this module, so the child watches its parent (app.llm.child_guard).
    assert bundle_server.llama_server_command(args) == [sys.executable, "-m", "app.llm.bundle_server", *args]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert bundle_server.llama_server_command(args) == [sys.executable, "--run-llama-server", *args]
    assert bundle_server.server_args(["--run-llama-server", *args]) == args
    assert bundle_server.server_args(["-m", "llama_cpp.server", *args]) == args
    assert bundle_server.server_args(["self-test"]) is None
    assert bundle_server.server_args([]) is None


def test_about_text_lists_versions_and_licences() -> None:
    text = about_text()
    assert f"Interview Copilot {__version__}" in text
    assert "Whisper tiny.en" in text and "MIT" in text
    versions = component_versions()
    for name in ("faster-whisper", "ctranslate2", "PySide6", "openai", "llama-cpp-python"):
        assert name in versions
        assert f"{name} {versions[name]}" in text
    if versions["llama-cpp-python"] != "not bundled":
        assert "SmolLM2-135M-Instruct" in text and "Apache-2.0" in text
    assert "Smart Turn v3.2 (end of turn, optional): Daily (pipecat), BSD-2-Clause licence" in text


def test_optional_parts_skip_from_source_but_fail_in_a_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.asr import script

    monkeypatch.setattr(script.ScriptConverter, "available", property(lambda self: False))
    assert run_check("opencc", selftest.check_opencc).status == "skip"
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    frozen = run_check("opencc", selftest.check_opencc)
    assert frozen.status == "fail" and "OpenCC is not installed in this build" in frozen.detail
