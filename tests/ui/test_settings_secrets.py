"""Settings → Model: secrets follow their host (the key, and credentials in the base URL)."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from pytestqt.qtbot import QtBot

from app.core.config import PROVIDER_PRESETS, Settings, load_settings
from app.llm.client import ClientTuning, LlmClient
from app.llm.endpoint import resolve_llm_endpoint
from app.platform import secrets
from app.ui.settings import SettingsDialog
from tests.memory_keyring import MemoryKeyring

OPENAI_KEY = "sk-openai-KEEP-1234567890"
RELAY_KEY = "sk-relay-OTHER-0987654321"
RELAY = "https://relay.example.net/v1"


@pytest.fixture(autouse=True)
def ring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryKeyring]:
    import keyring

    monkeypatch.setenv("INTERVIEW_COPILOT_CONFIG_DIR", str(tmp_path / "config"))
    for var in ("INTERVIEW_COPILOT_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "COPILOT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    memory = MemoryKeyring()
    previous = keyring.get_keyring()
    keyring.set_keyring(memory)
    yield memory
    keyring.set_keyring(previous)


def _dialog(qtbot: QtBot, settings: Settings, path: Path) -> SettingsDialog:
    dialog = SettingsDialog(settings, path)
    qtbot.addWidget(dialog)
    return dialog


def _on_openai() -> Settings:
    settings = Settings()
    settings.llm.base_url = "https://api.openai.com/v1"
    return settings


# --- the key follows the host ---------------------------------------------------------------


def test_a_new_host_is_never_given_the_old_hosts_key(
    qtbot: QtBot, tmp_path: Path, ring: MemoryKeyring
) -> None:
    secrets.set_api_key("https://api.openai.com/v1", OPENAI_KEY)
    path = tmp_path / "settings.toml"
    dialog = _dialog(qtbot, _on_openai(), path)
    assert dialog.api_key.text() == OPENAI_KEY
    dialog.base_url.setText(RELAY)  # only trying a relay out
    assert dialog.api_key.text() == ""
    assert "relay.example.net" in dialog.api_key.placeholderText()
    assert "key for https://relay.example.net" in dialog.key_note.text()
    dialog.accept()
    assert dialog.result_settings is not None, dialog.error_label.text()
    assert load_settings(path)[0].llm.base_url == RELAY
    assert ring.store == {(secrets.SERVICE, "https://api.openai.com"): OPENAI_KEY}  # nothing for the relay
    assert resolve_llm_endpoint(load_settings(path)[0]).api_key != OPENAI_KEY  # type: ignore[union-attr]


def test_each_host_keeps_its_own_key_through_presets(
    qtbot: QtBot, tmp_path: Path, ring: MemoryKeyring
) -> None:
    secrets.set_api_key("https://api.openai.com/v1", OPENAI_KEY)
    path = tmp_path / "settings.toml"
    dialog = _dialog(qtbot, _on_openai(), path)
    qwen = dialog.provider.findData("qwen")
    dialog.provider.setCurrentIndex(qwen)
    dialog.provider.activated.emit(qwen)
    assert dialog.base_url.text() == PROVIDER_PRESETS["qwen"].base_url and dialog.api_key.text() == ""
    dialog.api_key.setText(RELAY_KEY)
    dialog.accept()
    assert dialog.result_settings is not None, dialog.error_label.text()
    assert secrets.get_api_key(PROVIDER_PRESETS["qwen"].base_url, environ={}) == RELAY_KEY
    assert secrets.get_api_key("https://api.openai.com/v1", environ={}) == OPENAI_KEY
    # Back to OpenAI: its own key shows again, the other provider's never does.
    again = _dialog(qtbot, load_settings(path)[0], path)
    assert again.api_key.text() == RELAY_KEY
    again.base_url.setText("https://api.openai.com/v1")
    assert again.api_key.text() == OPENAI_KEY


# --- credentials in the base URL --------------------------------------------------------------


@pytest.mark.parametrize("userinfo", ["alice:pa55-w0rd!", "tok-RELAY-1234567890"])
def test_credentials_in_the_base_url_go_to_the_keychain_not_the_file(
    qtbot: QtBot, tmp_path: Path, userinfo: str
) -> None:
    path = tmp_path / "settings.toml"
    with_credentials = f"https://{userinfo}@relay.example.net/v1"
    dialog = _dialog(qtbot, Settings(), path)
    dialog.base_url.setText(with_credentials)
    dialog.accept()
    assert dialog.result_settings is not None, dialog.error_label.text()
    text = path.read_text(encoding="utf-8")
    assert userinfo not in text and userinfo.split(":")[-1] not in text
    loaded, problems = load_settings(path)
    assert problems == [] and loaded.llm.base_url == RELAY
    assert secrets.get_url_credentials(RELAY) == userinfo
    endpoint = resolve_llm_endpoint(loaded)
    assert endpoint is not None and endpoint.base_url == with_credentials  # what the client requests
    # Reopened, the field shows the URL as typed; taking the credentials out forgets them.
    again = _dialog(qtbot, loaded, path)
    assert again.base_url.text() == with_credentials
    again.base_url.setText(RELAY)
    again.accept()
    assert secrets.get_url_credentials(RELAY) is None
    assert resolve_llm_endpoint(load_settings(path)[0]).base_url == RELAY  # type: ignore[union-attr]


class _Recorder(http.server.BaseHTTPRequestHandler):
    authorizations: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).authorizations.append(self.headers.get("Authorization", ""))
        body = b'{"object": "list", "data": [{"id": "m", "object": "model"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


def test_the_client_sends_the_credentials_kept_for_its_host() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, name="test-recorder", daemon=True).start()
    try:
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        secrets.set_url_credentials(base_url, "alice:pa55-w0rd")
        settings = Settings()
        settings.llm.base_url = base_url
        endpoint = resolve_llm_endpoint(settings)
        assert endpoint is not None
        client = LlmClient(endpoint.base_url, endpoint.api_key, endpoint.model, ClientTuning(rewarm=False))

        async def models() -> list[str]:
            try:
                return await client.list_models()
            finally:
                await client.aclose()

        assert asyncio.run(models()) == ["m"]
    finally:
        server.shutdown()
        server.server_close()
    import base64

    assert _Recorder.authorizations[-1] == "Basic " + base64.b64encode(b"alice:pa55-w0rd").decode()


@pytest.mark.parametrize(
    ("url", "clean", "userinfo"),
    [
        ("https://relay.example.net/v1", "https://relay.example.net/v1", ""),
        ("https://bob:p@ss@relay.example.net:8443/v1", "https://relay.example.net:8443/v1", "bob:p@ss"),
        (" https://TOKEN123@relay.example.net/v1?x=1 ", "https://relay.example.net/v1?x=1", "TOKEN123"),
        ("relay.example.net/v1", "relay.example.net/v1", ""),
    ],
)
def test_base_url_credentials_are_split_off(url: str, clean: str, userinfo: str) -> None:
    assert secrets.split_url_credentials(url) == (clean, userinfo)
