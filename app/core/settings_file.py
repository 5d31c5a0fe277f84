"""A hand-edited TOML file into a pydantic model, where each bad value falls back alone.

Pydantic reports every error of a document at once, each at a location (``loc``): the
path of keys down to the value, ending in a list index for a list's item.  Each such
value is dropped from the document, exactly that value and nothing beside it, and the
rest is validated again: a bad scalar falls back to its default, a bad list item is left
out of its list, a table of the wrong type falls back whole, and every other setting
stays.  A value that cannot be dropped alone (a table missing a field that has no
default) is dropped with the smallest table that holds it.  Each dropped value is
reported once, with the line it is on.

Nothing here knows the app's settings (:mod:`app.core.config` does): this module reads a
file, locates keys in it, and prunes what a model rejects.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

DEFAULTED = "using the default instead"
LEFT_OUT = "left out"
IGNORED = "ignored"

MAX_PASSES = 8
"""Validations before giving up on the values and using every default.  Each pass drops
at least one value, and pydantic reports all of a document's errors at once, so a pass
after the first only meets what dropping made wrong (none of today's settings)."""

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with a settings file, said so a person can fix it."""

    path: Path
    line: int | None
    key: str
    message: str
    outcome: str = DEFAULTED
    """What the app does instead: uses the default, leaves a list's item out, ignores a key."""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        return f"{where}: {self.key}: {self.message} ({self.outcome})"


def key_of(loc: Loc) -> str:
    """``asr.glossary[1]``: dotted keys, list items by their index."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


# --- where a key is --------------------------------------------------------------------

_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY = rf"(?:{_BARE}|{_QUOTED})(?:\s*\.\s*(?:{_BARE}|{_QUOTED}))*"
_HEADER = re.compile(rf"^\[(\[)?\s*({_KEY})\s*\]")
_ASSIGN = re.compile(rf"^({_KEY})\s*=")
_PART = re.compile(rf"{_BARE}|{_QUOTED}")


def _parts(dotted: str) -> tuple[str, ...]:
    out: list[str] = []
    for part in _PART.findall(dotted):
        if part[:1] == '"':  # a basic string: its escapes are JSON's, but for \U and \e
            try:
                part = json.loads(part)
            except ValueError:
                part = part[1:-1]
        elif part[:1] == "'":  # a literal string: no escapes
            part = part[1:-1]
        out.append(part)
    return tuple(out)


class KeyLines:
    """Where each key and table of a TOML text is defined, by its full path.

    A line-by-line reading, not a parser: table headers set the current table, ``key =``
    lines add a path under it, and the insides of multi-line strings are skipped.  A
    list's items and an inline table's keys are found at the line of the key that holds
    them (an inline table is one line; a multi-line list's items are not told apart).
    """

    def __init__(self, text: str) -> None:
        self._lines: dict[tuple[str, ...], int] = {}
        table: tuple[str, ...] = ()
        quote: str | None = None  # the delimiter of the multi-line string we are in
        for number, line in enumerate(text.splitlines(), start=1):
            if quote is not None:
                if line.count(quote) % 2:
                    quote = None
                continue
            stripped = line.strip()
            header = _HEADER.match(stripped)
            if header:
                table = _parts(header.group(2))
                self._define(table, number)
                continue
            assign = _ASSIGN.match(stripped)
            if assign:
                self._define(table + _parts(assign.group(1)), number)
            for delimiter in ('"""', "'''"):
                if stripped.count(delimiter) % 2:
                    quote = delimiter
                    break

    def _define(self, path: tuple[str, ...], number: int) -> None:
        """``[a.b.c]`` and ``a.b.c = 1`` define ``a`` and ``a.b`` too, where not defined before."""
        for end in range(1, len(path) + 1):
            self._lines.setdefault(path[:end], number)

    def line(self, loc: Loc) -> int | None:
        """The line of the longest leading part of ``loc`` the text defines."""
        keys = tuple(str(part) for part in loc)
        for end in range(len(keys), 0, -1):
            if isinstance(loc[end - 1], int):
                continue  # a list's item: the line of its key
            found = self._lines.get(keys[:end])
            if found is not None:
                return found
        return None


# --- dropping what the model rejects ---------------------------------------------------

class _Dropped:
    """Stands in for a list's item until every item of the pass is out (indices hold)."""


_DROPPED = _Dropped()


def _present(data: dict[str, Any], loc: Loc) -> Loc:
    """The longest leading part of ``loc`` that names a value in ``data``."""
    node: Any = data
    for depth, part in enumerate(loc):
        in_table = isinstance(node, dict) and isinstance(part, str) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if not (in_table or in_list):
            return loc[:depth]  # what follows is missing, or a tag pydantic adds (a union's)
        node = node[part]
    return loc


def _drop(data: dict[str, Any], loc: Loc) -> None:
    """Drop the value at ``loc``, and a table it leaves empty (so a table's default applies
    again rather than an empty one); a list's item is marked, and swept out after."""
    if _present(data, loc) != loc:
        return  # a table this one emptied went with it
    node: Any = data
    for part in loc[:-1]:
        node = node[part]
    last = loc[-1]
    if isinstance(node, list) and isinstance(last, int):
        node[last] = _DROPPED
        return
    del node[last]
    if not node and len(loc) > 1:
        _drop(data, loc[:-1])


def _sweep(node: Any) -> Any:
    """The document without the items marked dropped."""
    if isinstance(node, list):
        return [_sweep(item) for item in node if item is not _DROPPED]
    if isinstance(node, dict):
        return {key: _sweep(value) for key, value in node.items()}
    return node


@dataclass
class _Finding:
    """A value to drop, and every error found in it."""

    loc: Loc
    errors: list[tuple[Loc, str, str]]
    """(where inside the value, pydantic's error type, its message), in pydantic's order."""

    def absorb(self, inner: _Finding) -> None:
        """Take in the errors of a value inside this one (dropped with it, or before it: a
        field with no default, dropped alone, left its table missing it)."""
        within = inner.loc[len(self.loc):]
        explained = [(rest, kind, msg) for rest, kind, msg in self.errors
                     if not (kind == "missing" and rest == within)]
        self.errors = [(within + rest, kind, msg) for rest, kind, msg in inner.errors] + explained

    @property
    def outcome(self) -> str | None:
        """Ignored (an unknown key), left out (a list's item), or None: the model decides."""
        if all(kind == "extra_forbidden" for _, kind, _ in self.errors):
            return IGNORED
        return LEFT_OUT if isinstance(self.loc[-1], int) else None

    def message(self) -> str:
        said = dict.fromkeys(f"{key_of(rest).lstrip('.')}: {msg}" if rest else msg
                             for rest, _, msg in self.errors)
        return "; ".join(said)


def _fold(findings: list[_Finding]) -> list[_Finding]:
    """Each finding inside another joins the nearest one holding it; the rest, in order."""
    by_loc: dict[Loc, _Finding] = {}
    for finding in findings:
        if finding.loc in by_loc:
            by_loc[finding.loc].errors += finding.errors
        else:
            by_loc[finding.loc] = finding
    for loc in sorted(by_loc, key=len, reverse=True):
        holder = next((loc[:end] for end in range(len(loc) - 1, 0, -1) if loc[:end] in by_loc), None)
        if holder is not None:
            by_loc[holder].absorb(by_loc.pop(loc))
    return list(by_loc.values())


def _findings(exc: ValidationError, data: dict[str, Any]) -> list[_Finding]:
    """One finding per value to drop: the value an error is at, or, when that is missing,
    the nearest table the document has on its way."""
    found: list[_Finding] = []
    for err in exc.errors():
        loc: Loc = tuple(err["loc"])
        present = _present(data, loc)
        found.append(_Finding(present, [(loc[len(present):], err["type"], err["msg"])]))
    return _fold(found)


def _has(dumped: Any, loc: Loc) -> bool:
    return _present(dumped, loc) == loc if isinstance(dumped, dict) else False


def prune_invalid(model: type[M], data: dict[str, Any], where: KeyLines, path: Path,
                  problems: list[ConfigProblem]) -> M:
    """``model`` from ``data``, every value it rejects dropped and reported once (see the
    module's docstring); all defaults if the values cannot be made valid."""
    data = copy.deepcopy(data)
    dropped: list[_Finding] = []
    result: M | None = None
    for _ in range(MAX_PASSES):
        try:
            result = model.model_validate(data)
            break
        except ValidationError as exc:
            findings = _findings(exc, data)
            if any(not f.loc for f in findings):  # the document itself: nothing left to drop
                break
            for finding in sorted(findings, key=lambda f: len(f.loc), reverse=True):
                _drop(data, finding.loc)
            data = _sweep(data)
            dropped += findings
    dumped = result.model_dump() if result is not None else None
    for finding in sorted(_fold(dropped), key=lambda f: where.line(f.loc) or 1 << 30):  # file order
        outcome = finding.outcome or (DEFAULTED if _has(dumped, finding.loc) else LEFT_OUT)
        problems.append(ConfigProblem(path, where.line(finding.loc), key_of(finding.loc),
                                      finding.message(), outcome))
    if result is None:
        problems.append(ConfigProblem(path, None, "(file)", "its values could not be read"))
        return model()
    return result
