"""The settings loader against generated files: whatever is in ``settings.toml``, the app
starts, keeps every value that is right, and says each wrong one once.

Documents are built from the real section and field names (so most values land on a
setting) with values of every TOML type, nested at random, then written by ``tomli_w``;
others are text that may not be TOML at all, or a valid file with text spliced in.
"""

from __future__ import annotations

import datetime as dt
import string
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import pytest
import tomli_w
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from app.core.config import LanguageWords, Price, Settings, load_settings
from app.core.settings_file import ConfigProblem

SECTIONS: dict[str, type[BaseModel]] = {
    name: field.annotation for name, field in Settings.model_fields.items()
    if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)}
WORD_LISTS = tuple(LanguageWords.model_fields)
NAMES = sorted({n for model in SECTIONS.values() for n in model.model_fields} | {"words", "prices"})
STRINGS = ["en", "zh", "auto", "mic", "off", "file", "loopback", "dark", "light", "system", "bundled",
           "simplified", "taiwan", "on", "int8", "http://localhost:8080/v1", "gpt-4o", "ctrl+alt+l"]

PROFILE = {"deadline": dt.timedelta(seconds=10), "database": None,
           "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
"""The deadline only catches a load that never ends: one takes milliseconds."""

bare_keys = st.text(string.ascii_lowercase + "_-", min_size=1, max_size=8)
keys = st.one_of(st.sampled_from(NAMES), bare_keys)
scalars = st.one_of(
    st.integers(-10, 5000), st.integers(), st.floats(), st.booleans(), st.sampled_from(STRINGS),
    st.text(max_size=12), st.datetimes(), st.dates(), st.times())
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)), max_leaves=6)


def _fitting(field: FieldInfo) -> st.SearchStrategy[Any]:
    """Values of the field's type, from just below its bounds to just above them."""
    kind: Any = field.annotation
    if get_origin(kind) in (Union, UnionType):  # "int | None": TOML has no None
        kind = next(arg for arg in get_args(kind) if arg is not type(None))
    if get_origin(kind) is Literal:
        return st.sampled_from([*get_args(kind), "nope"])
    if kind is bool:
        return st.booleans()
    bounds = {name: getattr(m, name) for m in field.metadata
              for name in ("ge", "gt", "le") if hasattr(m, name)}
    low, high = bounds.get("ge", bounds.get("gt", -10)), bounds.get("le", 10_000)
    if kind is int:
        return st.integers(int(low) - 1, int(high) + 1)
    if kind is float:
        return st.one_of(st.floats(low - 1, high + 1), st.integers(int(low) - 1, int(high) + 1))
    if kind is str:
        return st.one_of(st.sampled_from(STRINGS), st.text(max_size=12))
    if get_origin(kind) is list:  # mostly strings, now and then something else
        return st.lists(st.one_of(st.text(max_size=10), st.text(max_size=10), scalars), max_size=4)
    return values


@st.composite
def _table(draw: st.DrawFn, model: type[BaseModel]) -> dict[str, Any]:
    """Some of the model's fields, most with values of their type, and now and then a key
    it does not have."""
    fields = {name: f for name, f in model.model_fields.items() if name != "words"}
    table = {name: draw(st.one_of(_fitting(fields[name]), _fitting(fields[name]), values))
             for name in draw(st.lists(st.sampled_from(sorted(fields)), unique=True, max_size=6))}
    if draw(st.integers(0, 4)) == 0:
        table[draw(keys)] = draw(values)
    return table


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from([*SECTIONS, "prices", "unknown"]), unique=True)):
        if draw(st.integers(0, 9)) == 0:
            doc[name] = draw(values)  # a section of the wrong type (or a table of anything)
        elif name == "prices":
            doc[name] = draw(st.dictionaries(bare_keys, st.one_of(_table(Price), values), max_size=3))
        elif name == "turns":
            table = draw(_table(SECTIONS[name]))
            if draw(st.booleans()):
                languages = st.sampled_from(["en", "zh", "ja"])
                table["words"] = draw(st.dictionaries(languages, st.one_of(_table(LanguageWords), values),
                                                      max_size=3))
            doc[name] = table
        else:
            doc[name] = draw(_table(SECTIONS[name]) if name in SECTIONS else st.dictionaries(keys, values))
    return doc


def _alone(model: type[BaseModel], data: dict[str, Any]) -> BaseModel | None:
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


def _bucket(n: int) -> str:
    return str(n) if n < 3 else "3-9" if n < 10 else "10+"


def _kept(doc: dict[str, Any], loaded: Settings) -> tuple[int, list[str]]:
    """How many values of ``doc`` are valid alone, and those of them ``loaded`` lost."""
    lost: list[str] = []
    checked = 0
    for name, model in SECTIONS.items():
        table = doc.get(name)
        if not isinstance(table, dict):
            continue
        for field, value in table.items():
            if field == "words" or field not in model.model_fields:
                continue
            alone = _alone(model, {field: value})
            checked += alone is not None
            if alone is not None and getattr(loaded, name).__dict__[field] != alone.__dict__[field]:
                lost.append(f"{name}.{field}")
    words = doc.get("turns", {}).get("words") if isinstance(doc.get("turns"), dict) else None
    for lang, lists in (words.items() if isinstance(words, dict) else ()):
        for field, value in (lists.items() if isinstance(lists, dict) else ()):
            alone = _alone(LanguageWords, {field: value}) if field in WORD_LISTS else None
            checked += alone is not None
            if alone is not None and getattr(loaded.turns.words_of(lang), field) != getattr(alone, field):
                lost.append(f"turns.words.{lang}.{field}")
    prices = doc.get("prices")
    for model_name, price in (prices.items() if isinstance(prices, dict) else ()):
        alone = _alone(Price, price) if isinstance(price, dict) else None
        checked += alone is not None
        if alone is not None and loaded.prices.get(model_name) != alone:
            lost.append(f"prices.{model_name}")
    return checked, lost


def _load(tmp_path: Path, text: str) -> tuple[Settings, list[ConfigProblem]]:
    path = tmp_path / "settings.toml"
    path.write_text(text, encoding="utf-8")
    loaded, problems = load_settings(path)
    assert isinstance(loaded, Settings) and all(isinstance(p, ConfigProblem) for p in problems)
    keys = [p.key for p in problems]
    assert len(keys) == len(set(keys)), f"a problem said twice: {keys}"
    lines = text.splitlines()
    assert all(p.line is None or 1 <= p.line <= max(len(lines), 1) for p in problems), problems
    return loaded, problems


@settings(max_examples=400, **PROFILE)  # type: ignore[arg-type]
@given(doc=documents(), multiline=st.booleans())
def test_every_valid_value_is_kept_and_each_wrong_one_said_once_at_its_line(
        tmp_path_factory: pytest.TempPathFactory, doc: dict[str, Any], multiline: bool) -> None:
    text = tomli_w.dumps(doc, multiline_strings=multiline)
    loaded, problems = _load(tmp_path_factory.mktemp("doc"), text)
    checked, lost = _kept(doc, loaded)
    assert lost == []
    event(f"{_bucket(len(problems))} problem(s)")
    event(f"{_bucket(checked)} valid value(s) checked")
    lines = text.splitlines()
    for problem in problems:
        name = problem.key.split("[")[0].split(".")[-1]
        if problem.key.count(".") == 1 and isinstance(doc.get(problem.key.split(".")[0]), dict):
            assert problem.line is not None and name in lines[problem.line - 1], (problem, text)


@settings(max_examples=300, **PROFILE)  # type: ignore[arg-type]
@given(text=st.one_of(st.text(), st.text(alphabet="[]{}=\"'.,\n #abc123-_"),
                      st.tuples(documents(), st.text(max_size=8), st.integers(0, 10_000))))
def test_any_text_loads_without_a_traceback(tmp_path_factory: pytest.TempPathFactory,
                                            text: str | tuple[dict[str, Any], str, int]) -> None:
    if isinstance(text, tuple):  # a valid file with text spliced in
        doc, splice, at = text
        valid = tomli_w.dumps(doc)
        at %= len(valid) + 1
        text = valid[:at] + splice + valid[at:]
    loaded, problems = _load(tmp_path_factory.mktemp("text"), text)
    if any(p.key == "(file)" for p in problems):
        assert loaded == Settings() and len(problems) == 1
    said = "not TOML" if any(p.key == "(file)" for p in problems) else "TOML"
    event(f"{said}, {_bucket(len(problems))} problem(s)")
