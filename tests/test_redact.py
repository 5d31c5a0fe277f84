"""The one redaction function: every secret form, in every output shape the app writes."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from app.platform.redact import (
    REDACTED,
    RedactingFilter,
    display_host,
    display_url,
    forget_secrets,
    install_redaction,
    redact,
    redact_data,
    register_secret,
    register_url,
)

KEY = "sk-proj-TESTkey1234567890abcdefXYZ"


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


@pytest.mark.parametrize(
    ("text", "leaks"),
    [
        ("base http://alice:pa55word@relay.example:8080/v1 down", ["alice", "pa55word"]),
        ("base https://bob:p@ss@relay.example/v1", ["bob", "p@ss"]),  # raw "@" in a password
        ("GET https://relay.example/v1/models?token=tok_9f8e7d6c5b&x=1", ["tok_9f8e7d6c5b"]),
        ("https://r.example/v1?api-key=abcdef123456#frag", ["abcdef123456"]),
        ("wss://u:secretpw@h.example/socket?sig=zzz999", ["secretpw", "zzz999"]),
        ("relay said ?token=short1 and &api_key=k2k2k2", ["short1", "k2k2k2"]),
        (f"Incorrect API key provided: {KEY}.", [KEY, "TESTkey"]),
        ("masked sk-abc1***********xyz9 key", ["sk-abc1", "xyz9"]),
        ("Authorization: Bearer abc.DEF-123_x==", ["abc.DEF-123_x"]),
        ("authorization=Basic dXNlcjpwYXNz", ["dXNlcjpwYXNz"]),
        ('{"Authorization": "Bearer eyJhbGciOi.payload.sig"}', ["eyJhbGciOi"]),
        ("header bearer 0123456789abcdef", ["0123456789abcdef"]),
        ('{"api_key": "my-custom-key-42"}', ["my-custom-key-42"]),
        ("x-api-key: relay-key-0001", ["relay-key-0001"]),
        ("password=hunter22 token: tok-1234567890", ["hunter22", "tok-1234567890"]),
        ("google AIzaSyA-1234567890abcdefghijklmnopq", ["AIzaSyA-1234567890"]),
        ("gh ghp_abcdefghijklmnop1234 hf hf_abcdefghijklmnop1234", ["ghp_abcdefgh", "hf_abcdefgh"]),
    ],
)
def test_every_secret_form_is_removed(text: str, leaks: list[str]) -> None:
    out = redact(text)
    for leak in leaks:
        assert leak not in out, out
    assert REDACTED in out
    assert redact(out) == out  # idempotent: redacting twice changes nothing


def test_prose_and_measurements_survive() -> None:
    for text in (
        "a sketch of sk-short",
        "first token: 250 ms, max_tokens=300, prompt_tokens=12",
        "the bearer of bad news",
        "nothing to hide at http://127.0.0.1:8080/v1",
        "What is a closure? A function with its environment.",
    ):
        assert redact(text) == text


def test_registered_and_given_secrets() -> None:
    custom = "zz-custom-secret-no-shape"
    assert redact(f"echo {custom}") == f"echo {custom}"
    assert redact(f"echo {custom}", custom) == f"echo {REDACTED}"
    register_secret(custom)
    assert redact(f"echo {custom}!") == f"echo {REDACTED}!"
    register_secret("ab")  # too short to remove everywhere
    assert redact("abc") == "abc"


def test_register_url_takes_password_and_query_values() -> None:
    register_url("http://admin:S3cr%40t!@relay.example/v1?token=T0KEN-value&format=json")
    # The decoded password (as a server might echo it) and the token go; "admin" and
    # "json" are too common to remove from all text.
    out = redact("login S3cr@t! failed; T0KEN-value expired; role admin; json body")
    assert "S3cr@t!" not in out and "T0KEN-value" not in out
    assert "admin" in out and "json" in out


def test_display_url_and_host() -> None:
    url = "https://user:pw@relay.example:8443/v1/?token=abc#x"
    assert display_url(url) == "https://relay.example:8443/v1"
    assert display_host(url) == "relay.example:8443"
    assert display_url("http://[bad") == "(invalid URL)"


def test_redact_data_walks_records() -> None:
    record = {
        "type": "session",
        "base_url": "http://u:pw-123456@h.example/v1?key=k-123456789",
        "errors": [{"message": f"rejected {KEY}"}],
        "n": 3,
    }
    out = json.dumps(redact_data(record))
    assert "pw-123456" not in out and "k-123456789" not in out and KEY not in out
    assert '"n": 3' in out and "h.example" in out


def _capture(logger: logging.Logger) -> io.StringIO:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    return stream


def test_filter_redacts_message_args_and_exception_text() -> None:
    secret = "plain-secret-without-prefix-42"
    logger = logging.getLogger("icp_test_redact.filter")
    logger.propagate = False
    stream = _capture(logger)
    logger.addFilter(RedactingFilter([secret]))
    logger.warning("sending key %s with header %r", secret, f"Bearer {KEY}")
    try:
        raise ValueError(f"server rejected {secret} at http://u:pw1234@h.example/v1")
    except ValueError:
        logger.exception("request failed")
    output = stream.getvalue()
    assert secret not in output and KEY not in output and "pw1234" not in output
    assert f"ValueError: server rejected {REDACTED}" in output  # traceback kept, key gone
    assert "request failed" in output


def test_install_covers_records_from_child_loggers() -> None:
    parent = logging.getLogger("icp_test_redact.root")
    parent.propagate = False
    stream = _capture(parent)
    log_filter = install_redaction([], logger=parent)
    log_filter.add_secret("late-added-secret-999")
    child = logging.getLogger("icp_test_redact.root.child")
    child.error("child logged late-added-secret-999 and %s", KEY)
    parent.setLevel(logging.INFO)
    parent.info("parent: %s", "late-added-secret-999")
    output = stream.getvalue()
    assert "late-added-secret-999" not in output and KEY not in output
    assert f"child logged {REDACTED} and {REDACTED}" in output
    assert f"parent: {REDACTED}" in output


def test_filter_survives_bad_format_args() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "only %s %s", (KEY,), None)
    assert RedactingFilter().filter(record) is True
    assert KEY not in record.getMessage()
