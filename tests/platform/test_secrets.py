"""API key storage and lookup, against a real (in-memory) keyring backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import keyring
import keyring.backend
import keyring.errors
import pytest

from app.platform.redact import forget_secrets, redact
from app.platform.secrets import (
    APP_ENV_VAR,
    OPENAI_ENV_VAR,
    SERVICE,
    SecretStoreError,
    delete_api_key,
    get_api_key,
    get_url_credentials,
    key_hint,
    keychain_username,
    set_api_key,
    set_url_credentials,
)
from tests.memory_keyring import MemoryKeyring

KEY = "sk-proj-TESTkey1234567890abcdefXYZ"
NO_ENV: dict[str, str] = {}


class BrokenKeyring(keyring.backend.KeyringBackend):
    priority = 1

    def __init__(self, error: Exception) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.error = error

    def get_password(self, service: str, username: str) -> str | None:
        raise self.error

    def set_password(self, service: str, username: str, password: str) -> None:
        raise self.error

    def delete_password(self, service: str, username: str) -> None:
        raise self.error


@pytest.fixture
def memory() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


@pytest.fixture
def broken() -> Iterator[None]:
    previous = keyring.get_keyring()
    try:
        yield None
    finally:
        keyring.set_keyring(previous)


def test_username_is_the_origin_or_default() -> None:
    assert keychain_username("https://API.OpenAI.com/v1") == "https://api.openai.com"
    assert keychain_username("https://api.openai.com:443/v1") == "https://api.openai.com"
    assert keychain_username("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080"
    assert keychain_username("http://127.0.0.1/v1") == "http://127.0.0.1"
    assert keychain_username("api.groq.com/openai/v1") == "https://api.groq.com"
    assert keychain_username(None) == keychain_username("  ") == "default"
    assert keychain_username("http://[::1]:8080") == "http://[::1]:8080"
    assert keychain_username("http://[bad") == "default"
    assert keychain_username("http://host:notaport/v1") == "default"


def test_a_stored_key_is_bound_to_scheme_host_and_port(memory: MemoryKeyring) -> None:
    """Saved for https://host, it is not sent to http://host nor to another port: those ask again."""
    set_api_key("https://relay.example/v1", KEY)
    assert get_api_key("https://relay.example:443/v2", environ=NO_ENV) == KEY  # the same endpoint
    assert get_api_key("http://relay.example/v1", environ=NO_ENV) is None
    assert get_api_key("https://relay.example:8443/v1", environ=NO_ENV) is None
    set_api_key("http://localhost:8080/v1", "local-key")
    assert get_api_key("http://localhost:8080/v1", environ=NO_ENV) == "local-key"
    assert get_api_key("http://localhost:11434/v1", environ=NO_ENV) is None
    set_url_credentials("https://relay.example/v1", "user:pw-123456")
    assert get_url_credentials("https://relay.example/v1") == "user:pw-123456"
    assert get_url_credentials("http://relay.example/v1") is None


def test_a_key_saved_by_an_earlier_version_serves_its_host_over_https_only(memory: MemoryKeyring) -> None:
    memory.store[(SERVICE, "relay.example")] = KEY  # filed by host alone
    assert get_api_key("https://relay.example/v1", environ=NO_ENV) == KEY
    assert get_api_key("http://relay.example/v1", environ=NO_ENV) is None
    assert get_api_key("https://relay.example:8443/v1", environ=NO_ENV) is None
    delete_api_key("https://relay.example/v1")
    assert memory.store == {}


def test_round_trip(memory: MemoryKeyring) -> None:
    url = "https://api.openai.com/v1"
    assert get_api_key(url, environ=NO_ENV) is None
    set_api_key(url, f"  {KEY}\n")
    assert memory.store == {(SERVICE, "https://api.openai.com"): KEY}
    assert get_api_key(url, environ=NO_ENV) == KEY
    assert get_api_key("https://api.groq.com/openai/v1", environ=NO_ENV) is None  # per host
    delete_api_key(url)
    assert get_api_key(url, environ=NO_ENV) is None
    delete_api_key(url)  # already gone: fine
    set_api_key(None, "local-key")
    assert memory.store == {(SERVICE, "default"): "local-key"}
    with pytest.raises(ValueError):
        set_api_key(url, "   ")


def test_precedence_explicit_then_env_then_keychain(memory: MemoryKeyring) -> None:
    url = "https://api.openai.com/v1"
    set_api_key(url, "from-keychain")
    env = {APP_ENV_VAR: "from-app-env", "OPENAI_API_KEY": "from-openai-env"}
    assert get_api_key(url, explicit="from-flag", environ=env) == "from-flag"
    assert get_api_key(url, explicit="  ", environ=env) == "from-app-env"
    assert get_api_key(url, environ={"OPENAI_API_KEY": "from-openai-env"}) == "from-openai-env"
    assert get_api_key(url, environ=NO_ENV) == "from-keychain"


def test_openai_env_key_never_sent_to_another_provider(memory: MemoryKeyring) -> None:
    groq = "https://api.groq.com/openai/v1"
    set_api_key(groq, "groq-key")
    env = {"OPENAI_API_KEY": "openai-key"}
    assert get_api_key(groq, environ=env) == "groq-key"
    assert get_api_key("http://127.0.0.1:8080/v1", environ=env) is None
    assert get_api_key(None, environ=env) is None
    paired = {"OPENAI_API_KEY": "openai-key", "OPENAI_BASE_URL": "https://api.groq.com/openai/v1"}
    assert get_api_key(groq, environ=paired) == "openai-key"  # the SDK's own pairing
    assert get_api_key("http://api.groq.com/openai/v1", environ=paired) is None  # not the one named
    assert get_api_key("https://api.groq.com:8443/openai/v1", environ=paired) is None
    assert get_api_key("http://api.openai.com/v1", environ=env) is None


@pytest.mark.parametrize("local", ["http://127.0.0.1:11434/v1", "http://localhost:1234/v1", "http://[::1]:8080/v1"])
def test_openai_env_key_never_goes_to_a_server_on_this_machine(memory: MemoryKeyring, local: str) -> None:
    """Ollama, LM Studio or whatever listens on a local port: not even when OPENAI_BASE_URL names it."""
    env = {"OPENAI_API_KEY": "sk-openai-0123456789", "OPENAI_BASE_URL": local}
    assert get_api_key(local, environ=env) is None
    assert OPENAI_ENV_VAR not in key_hint(local, env)


@pytest.mark.parametrize(
    ("error", "phrase"),
    [
        (keyring.errors.NoKeyringError("No recommended backend"), "no keychain service"),
        (keyring.errors.KeyringLocked("locked"), "keychain is locked"),
        (RuntimeError(f"dbus said no to {KEY}"), "RuntimeError"),
    ],
)
def test_keychain_failures_are_clear_and_keyless(
    broken: None, error: Exception, phrase: str
) -> None:
    keyring.set_keyring(BrokenKeyring(error))
    url = "https://api.openai.com/v1"
    calls: list[Callable[[], object]] = [
        lambda: get_api_key(url, environ=NO_ENV),
        lambda: set_api_key(url, KEY),
        lambda: delete_api_key(url),
    ]
    for call in calls:
        with pytest.raises(SecretStoreError) as info:
            call()
        message = str(info.value)
        assert phrase in message and "api.openai.com" in message
        assert APP_ENV_VAR in message
        assert KEY not in message
        assert info.value.__cause__ is None and info.value.__suppress_context__


def test_env_key_skips_a_broken_keychain(broken: None) -> None:
    keyring.set_keyring(BrokenKeyring(keyring.errors.NoKeyringError("none")))
    assert get_api_key("https://x.example/v1", environ={APP_ENV_VAR: KEY}) == KEY


def test_every_key_handed_out_is_redacted_everywhere(memory: MemoryKeyring) -> None:
    forget_secrets()
    custom = "relay-token-without-any-known-shape"
    assert redact(f"echo {custom}") == f"echo {custom}"
    assert get_api_key("https://relay.example/v1", environ={APP_ENV_VAR: custom}) == custom
    assert custom not in redact(f"echo {custom}")
    stored = "stored-in-the-keychain-0042"
    set_api_key("https://other.example/v1", stored)
    assert get_api_key("https://other.example/v1", environ=NO_ENV) == stored
    assert stored not in redact(f"server said {stored}")
    forget_secrets()


def test_key_hint_names_only_sources_read_for_the_host() -> None:
    # OPENAI_API_KEY is read for api.openai.com and the OPENAI_BASE_URL host only.
    openai_hint = key_hint("https://api.openai.com/v1", NO_ENV)
    assert OPENAI_ENV_VAR in openai_hint and APP_ENV_VAR in openai_hint
    assert "Settings" in openai_hint and "keychain" in openai_hint
    other = key_hint("https://relay.example:8443/v1", NO_ENV)
    assert OPENAI_ENV_VAR not in other
    assert APP_ENV_VAR in other and "relay.example" in other and "Settings" in other
    via_base = key_hint("http://gw.local:9/v1", {"OPENAI_BASE_URL": "http://gw.local:9/v1"})
    assert OPENAI_ENV_VAR in via_base
    assert OPENAI_ENV_VAR not in key_hint("http://gw.local/v1", {"OPENAI_BASE_URL": "http://gw.local:9/v1"})
    # …and the hint agrees with what get_api_key actually does.
    env = {OPENAI_ENV_VAR: "sk-only-for-openai-000000"}
    assert get_api_key("https://api.openai.com/v1", environ=env) == env[OPENAI_ENV_VAR]

