"""API key storage and redaction, against a real (in-memory) keyring backend."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterator

import keyring
import keyring.backend
import keyring.errors
import pytest

from app.secrets import (
    APP_ENV_VAR,
    REDACTED,
    SERVICE,
    RedactingFilter,
    SecretStoreError,
    delete_api_key,
    get_api_key,
    install_redaction,
    keychain_username,
    redact,
    set_api_key,
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


def test_username_is_host_or_default() -> None:
    assert keychain_username("https://API.OpenAI.com/v1") == "api.openai.com"
    assert keychain_username("http://127.0.0.1:8080/v1") == "127.0.0.1"
    assert keychain_username("api.groq.com/openai/v1") == "api.groq.com"
    assert keychain_username(None) == keychain_username("  ") == "default"
    assert keychain_username("http://[::1]:8080") == "::1"
    assert keychain_username("http://[bad") == "default"


def test_round_trip(memory: MemoryKeyring) -> None:
    url = "https://api.openai.com/v1"
    assert get_api_key(url, environ=NO_ENV) is None
    set_api_key(url, f"  {KEY}\n")
    assert memory.store == {(SERVICE, "api.openai.com"): KEY}
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


def test_redact() -> None:
    assert redact(f"key={KEY}!", [KEY]) == f"key={REDACTED}!"
    assert redact("custom-secret-value here", ["custom-secret-value", ""]) == f"{REDACTED} here"
    assert KEY not in redact(f"unknown {KEY}", [])
    header = "Authorization: Bearer abc.DEF-123_x=="
    assert redact(header, []) == f"Authorization: Bearer {REDACTED}"
    assert redact("a sketch of sk-short", []) == "a sketch of sk-short"  # too short for a key
    assert redact("nothing to hide", ["xyz123"]) == "nothing to hide"


def _capture(logger: logging.Logger) -> io.StringIO:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    return stream


def test_filter_redacts_message_args_and_exception_text() -> None:
    secret = "plain-secret-without-prefix-42"
    logger = logging.getLogger("icp_test_secrets.filter")
    logger.propagate = False
    stream = _capture(logger)
    logger.addFilter(RedactingFilter([secret]))
    logger.warning("sending key %s with header %r", secret, f"Bearer {KEY}")
    try:
        raise ValueError(f"server rejected {secret}")
    except ValueError:
        logger.exception("request failed")
    output = stream.getvalue()
    assert secret not in output and KEY not in output
    assert output.count(REDACTED) >= 3
    assert "ValueError: server rejected [REDACTED]" in output  # traceback kept, key gone
    assert "request failed" in output


def test_install_covers_records_from_child_loggers() -> None:
    parent = logging.getLogger("icp_test_secrets.root")
    parent.propagate = False
    stream = _capture(parent)
    log_filter = install_redaction([], logger=parent)
    log_filter.add_secret("late-added-secret-999")
    child = logging.getLogger("icp_test_secrets.root.child")
    child.error("child logged late-added-secret-999 and %s", KEY)
    parent.info("parent: %s", "late-added-secret-999")
    parent.setLevel(logging.INFO)
    parent.info("parent: %s", "late-added-secret-999")
    output = stream.getvalue()
    assert "late-added-secret-999" not in output and KEY not in output
    assert f"child logged {REDACTED} and {REDACTED}" in output
    assert f"parent: {REDACTED}" in output


def test_filter_survives_bad_format_args() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "only %s %s", (KEY,), None)
    assert RedactingFilter([KEY]).filter(record) is True
    assert KEY not in record.getMessage()
