"""The redactor against generated secrets and text (Hypothesis).

Secrets with quotes, backslashes, percent signs, slashes and any Unicode; text around them
of any kind; each secret embedded raw, JSON-escaped (ASCII-only and as-is) and URL-encoded
(a path's, a query's and a form's way).  Whatever the mix, the output holds the secret in
none of those forms, registered or passed, and redacting again changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.platform.redact import forget_secrets, redact, register_secret

ENCODINGS: dict[str, Callable[[str], str]] = {
    "raw": lambda s: s,
    "json": lambda s: json.dumps(s)[1:-1],
    "json-utf8": lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
    "url": lambda s: quote(s, safe=""),
    "url-path": quote,
    "url-form": quote_plus,
}

SECRET_CHARS = st.one_of(
    st.sampled_from('"\\%/+&=?#@:; \'{}'),
    st.characters(min_codepoint=0x21, max_codepoint=0x7E),
    st.characters(codec="utf-8"),  # any Unicode a string can hold (no lone surrogate)
)
SECRETS = st.text(SECRET_CHARS, min_size=8, max_size=40).filter(
    lambda s: s == s.strip() and "*" not in s)
"""A secret is never spelled with the mask's own character: "***" in a secret would make
the mask and its neighbours spell it (and no key generator uses it)."""


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


def _leaks(out: str, secret: str) -> list[str]:
    return [name for name, encode in ENCODINGS.items() if encode(secret) in out]


@settings(max_examples=1000, deadline=None)
@given(secret=SECRETS, parts=st.lists(st.tuples(st.text(max_size=30), st.sampled_from(sorted(ENCODINGS))),
                                      min_size=1, max_size=5),
       tail=st.text(max_size=30))
def test_a_registered_secret_leaves_in_no_form(secret: str, parts: list[tuple[str, str]], tail: str) -> None:
    forget_secrets()
    register_secret(secret)
    text = "".join(before + ENCODINGS[how](secret) for before, how in parts) + tail
    out = redact(text)
    assert _leaks(out, secret) == [], (text, out)
    assert redact(out) == out


@settings(max_examples=500, deadline=None)
@given(secret=SECRETS, before=st.text(max_size=30), how=st.sampled_from(sorted(ENCODINGS)),
       after=st.text(max_size=30))
def test_a_secret_passed_with_the_text_leaves_in_no_form(secret: str, before: str, how: str,
                                                          after: str) -> None:
    text = before + ENCODINGS[how](secret) + after
    out = redact(text, secret)
    assert _leaks(out, secret) == [], (text, out)


@settings(max_examples=500, deadline=None)
@given(secret=SECRETS, record=st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=4))
def test_a_json_line_stays_json_without_the_secret(secret: str, record: dict[str, str]) -> None:
    """The session file's and ``--events``' way: a record JSON-encoded, then redacted whole."""
    forget_secrets()
    register_secret(secret)
    line = json.dumps({**record, "message": f"echo {secret} end"}, ensure_ascii=False)
    out = redact(line)
    assert _leaks(out, secret) == []
    assert json.loads(out)["message"] == "echo *** end"
