"""The one redaction function: every secret form, in every output shape the app writes."""

from __future__ import annotations

import io
import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path

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


# --- secrets in a URL's path, and in every form an output holds them ------------------------

PATH_TOKEN = "r3l4yT0k3nQx9Zp2Lm7"
RELAY = f"https://relay.example/k/{PATH_TOKEN}/v1"


def test_a_token_in_the_base_urls_path_is_a_secret() -> None:
    register_url(RELAY)
    assert display_url(RELAY) == f"https://relay.example/k/{REDACTED}/v1"
    out = redact(f"POST {RELAY}/chat/completions failed; relay said: unknown key {PATH_TOKEN}")
    assert PATH_TOKEN not in out and "relay.example/k/" in out


@pytest.mark.parametrize("segment", [PATH_TOKEN, "550e8400-e29b-41d4-a716-446655440000",
                                     "sk-proj-abcdEFGH12345678ijkl", "4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"])
def test_token_shaped_path_segments(segment: str) -> None:
    register_url(f"https://relay.example/{segment}/v1")
    assert segment not in redact(f"echo {segment}")


def test_the_words_of_an_api_path_stay() -> None:
    for url in ("https://api.openai.com/v1", "https://x.openai.azure.com/openai/deployments/gpt-4o-mini-2024-07-18",
                "https://openrouter.ai/api/v1", "http://127.0.0.1:8080/v1"):
        register_url(url)
        assert display_url(url) == url
    text = "answers from gpt-4o-mini-2024-07-18 at openai deployments api v1"
    assert redact(text) == text


@pytest.mark.parametrize("secret", ['pa"ss\\word-1234', "k€y-ünï\u00e7ode-99", "per%cent/slash+plus key"])
def test_a_registered_secret_in_every_form_an_output_holds_it(secret: str) -> None:
    from urllib.parse import quote, quote_plus

    register_secret(secret)
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
             quote(secret, safe=""), quote(secret), quote_plus(secret)}
    for form in forms:
        assert form not in redact(f"said {form} twice: {form}."), form
    line = json.dumps({"name": "token", "text": f"the key is {secret}"}, ensure_ascii=False)
    assert json.loads(redact(line))["text"] == f"the key is {REDACTED}"  # still valid JSON


def test_install_twice_keeps_one_filter() -> None:
    parent = logging.getLogger("icp_test_redact.twice")
    first, second = install_redaction(logger=parent), install_redaction(logger=parent)
    assert first is second and parent.filters.count(first) == 1


# --- every command's output, through the command line --------------------------------------


def test_doctor_never_prints_a_token_in_the_urls_path(capsys: pytest.CaptureFixture[str]) -> None:
    from app.frontends.cli import main

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/k/{PATH_TOKEN}/v1"
    assert main(["doctor", "--skip", "audio,asr", "--no-local", "--base-url", url, "--api-key", "sk-x"]) == 1
    printed = capsys.readouterr()
    assert PATH_TOKEN not in printed.out + printed.err
    assert f"127.0.0.1:{port}" in printed.out


def test_the_self_test_prints_through_the_redaction(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A key the environment holds is masked in whatever the self-test prints: its own
    header stands in for a check's detail that quotes it."""
    from app.frontends.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", "Interview Copilot")
    main(["self-test", "--only", "none-such"])
    out = capsys.readouterr().out
    assert "Interview Copilot" not in out and f"{REDACTED} " in out.splitlines()[0]


@pytest.mark.slow
@pytest.mark.parametrize("path_token", [PATH_TOKEN, "Zq3xK9mPa2Lr7Tb"],
                         ids=["19 characters", "15 characters"])
def test_a_path_token_and_a_quoted_key_reach_no_output_and_no_file(tmp_path: Path, path_token: str) -> None:
    """The model echoes the key (with a quote and a backslash) and the relay's path token:
    the terminal, the session file and ``--events`` (JSON lines) hold neither, in any form
    (the start-up status line "answers from … at http://host/k/TOKEN/v1" included)."""
    from devtools.fake_server import FakeServer, Fault, Profile
    from tests.frontends.test_cli_faults import listen
    from tests.speech import synth

    key = 'sk-"quoted\\key-123456'
    events = tmp_path / "events.jsonl"
    with FakeServer(Profile(), api_key=key) as server:
        server.faults.append(Fault("say", message=f"Your key is {key} via {path_token}.", times=10))
        url = server.start().replace("/v1", f"/k/{path_token}/v1")
        out = listen(["--audio", str(synth("Why are you interested in this role?")), "--base-url", url,
                      "--api-key", key, "--no-low-latency", "--events", str(events)], tmp_path)
    assert out.returncode == 0, out.stderr
    written = [out.stdout, out.stderr, events.read_text(encoding="utf-8"),
               *(p.read_text(encoding="utf-8") for p in (tmp_path / "data").rglob("*.jsonl"))]
    forms = (key, json.dumps(key)[1:-1], path_token)
    for text in written:
        for form in forms:
            assert form not in text, (form, text[:2000])
    assert f"Your key is {REDACTED} via {REDACTED}." in out.stdout
