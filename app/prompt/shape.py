"""The shape of a small model's answer, enforced on the stream as it arrives.

A 135M-parameter model asked for "two to four bullets" writes seventeen, and once it
repeats a line it repeats it until ``max_tokens``.  Sampling penalties make that rarer;
this makes it impossible: the stream is cut the moment

- a line says again what an earlier line said (compared without case, marker or
  punctuation),
- a bullet would be the fourth (``max_bullets``), or a line follows the one sentence
  allowed after the bullets,
- the answer reaches ``max_words``,

and the HTTP stream is closed so the server stops generating.  Design notes: decision 0039.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.llm.client import Delta, StreamItem

_MARKER = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")
_MAYBE_MARKER = re.compile(r"\s*(?:[-*+•]|\d{1,2}[.)]?)?")
"""A line start that the next character may still make a bullet."""
_NOISE = re.compile(r"[\W_]+", re.UNICODE)
_WORD = re.compile(r"\S+")


def _key(line: str) -> str:
    return _NOISE.sub("", _MARKER.sub("", line)).lower()


@dataclass(frozen=True, slots=True)
class ReplyShape:
    """How one style of prompt wants its answers fetched and cut.

    The default shape changes nothing (a capable model follows the prompt on its own).
    """

    max_bullets: int | None = None
    max_words: int | None = None
    max_lines_after_bullets: int = 1
    max_tokens: int | None = None
    """A cap on the request's ``max_tokens`` (the setting still applies when lower)."""
    sampling: Mapping[str, Any] = field(default_factory=dict)
    """Extra request fields (llama.cpp's ``repeat_penalty``…); the prompt builder adds
    them to its requests (:meth:`app.prompt.builder.PromptBuilder.sampling`)."""

    @property
    def active(self) -> bool:
        return self.max_bullets is not None or self.max_words is not None

    def tokens(self, setting: int) -> int:
        return min(setting, self.max_tokens) if self.max_tokens else setting

    def wrap(self, stream: AsyncGenerator[StreamItem, None]) -> AsyncGenerator[StreamItem, None]:
        """The stream as this shape lets it through (the stream itself when inactive)."""
        return _shaped(stream, self) if self.active else stream


class ShapeGuard:
    """Feed text as it streams; get back what may be shown, and whether to stop."""

    def __init__(self, shape: ReplyShape) -> None:
        self._shape = shape
        self._done_lines: list[str] = []
        self._bullets = 0
        self._after_bullets = 0
        self._line = ""
        self._released = 0
        """How much of ``_line`` has been let through."""
        self._words = 0
        self.stopped = False
        self.reason = ""

    def feed(self, text: str) -> str:
        """The part of ``text`` (with anything held before) that may be shown now."""
        out: list[str] = []
        for i, part in enumerate(text.split("\n")):
            if self.stopped:
                break
            if i:
                out.append(self._end_line())
                if self.stopped:
                    break
            self._line += part
            out.append(self._release())
        return "".join(out)

    def finish(self) -> str:
        """The end of the stream: what was still held, unless it is a repeat."""
        if self.stopped or not self._line:
            return ""
        return self._end_line(final=True)

    # --- rules -------------------------------------------------------------------------

    def _stop(self, reason: str) -> str:
        self.stopped, self.reason = True, reason
        return ""

    def _is_bullet(self, line: str) -> bool:
        return bool(_MARKER.match(line))

    def _verdict(self, line: str, *, complete: bool) -> str | None:
        """"hold", "stop:<why>" or None (may be shown)."""
        limit = self._shape.max_bullets
        if not complete and _MAYBE_MARKER.fullmatch(line) and limit is not None and (
                self._bullets >= limit
                or (self._bullets and self._after_bullets >= self._shape.max_lines_after_bullets)):
            return "hold"  # a marker, or the start of one, where only one of bullet or prose may go on
        if not line.strip():
            return None
        bullet = self._is_bullet(line)
        if limit is not None:
            if bullet and self._bullets >= limit:
                return "stop:bullets"
            if self._bullets and not bullet and self._after_bullets >= self._shape.max_lines_after_bullets:
                return "stop:lines"
        key = _key(line)
        if key and any(old == key for old in self._done_lines) and complete:
            return "stop:repeat"
        if key and any(old.startswith(key) for old in self._done_lines):
            return "hold"
        return None

    def _release(self) -> str:
        verdict = self._verdict(self._line, complete=False)
        if verdict is not None and verdict.startswith("stop:"):
            return self._stop(verdict[5:])
        if verdict == "hold":
            return ""
        return self._emit_upto(len(self._line))

    def _emit_upto(self, end: int) -> str:
        """Let the line through to ``end``, counting words; stop at ``max_words``."""
        chunk = self._line[self._released:end]
        limit = self._shape.max_words
        if limit is not None and chunk:
            words = list(_WORD.finditer(self._line[:end]))
            if self._words + len(words) > limit:
                keep = limit - self._words
                cut = max(words[keep - 1].end() if keep > 0 else 0, self._released)
                chunk = self._line[self._released:cut]
                self._released = cut
                self._stop("words")
                return chunk
        self._released = end
        return chunk

    def _end_line(self, *, final: bool = False) -> str:
        line = self._line
        verdict = self._verdict(line, complete=True)
        if verdict is not None and verdict.startswith("stop:"):
            return self._stop(verdict[5:])
        out = self._emit_upto(len(line))
        if self.stopped:
            return out
        if line.strip():
            self._words += len(_WORD.findall(line))
            if self._is_bullet(line):
                self._bullets += 1
            elif self._bullets:
                self._after_bullets += 1
            if _key(line):
                self._done_lines.append(_key(line))
        self._line = ""
        self._released = 0
        return out if final else out + "\n"


async def _shaped(stream: AsyncGenerator[StreamItem, None],
                  shape: ReplyShape) -> AsyncGenerator[StreamItem, None]:
    guard = ShapeGuard(shape)
    last_t = 0.0
    timing = None  # the first fragment's, kept for the first one shown
    async with contextlib.aclosing(stream):
        async for item in stream:
            if isinstance(item, Delta):
                last_t = item.t
                timing = timing or item.timing
                text = guard.feed(item.text)
                if text:
                    yield Delta(text, item.t, timing)
                    timing = None
                if guard.stopped:
                    return  # closing the stream stops the server's generation
            else:
                tail = guard.finish()
                if tail:
                    yield Delta(tail, last_t, timing)
                yield item
