"""Text that will be shown on a terminal, stripped of what a terminal would obey.

Model tokens and servers' error messages are written by someone else: an answer can carry
an escape sequence that sets the window's title, clears the screen, plants a link
(OSC 8) or rewrites what was printed before (a carriage return), and a bidi override can
make a line read differently from what it says.  :func:`printable` removes every such
sequence and character and keeps everything else, so what the user reads is the text,
never an instruction to their terminal.
"""

from __future__ import annotations

import re

_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, clear-screen
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC (title,
    # link), DCS, SOS, PM, APC: up to BEL or ST, or to the end of the text when unterminated
    r"|\x1b[ -/]*[0-~]"  # the short escapes: charset, save cursor, reset
)
"""Whole escape sequences, so their parameters (a title, a link's URL, "[2J") go with
them; a link's visible words stay.  The ECMA-48 shapes, C1 forms included."""

_KEPT = frozenset("\n\t")
"""The controls that are layout, not commands: a line break and a tab."""

_BIDI_CONTROLS = (
    *range(0x202A, 0x202F),  # LRE, RLE, PDF, LRO, RLO: embeddings and overrides
    *range(0x2066, 0x206A),  # LRI, RLI, FSI, PDI: isolates
)
"""Reorder the text after them (the "Trojan source" characters). The plain marks (LRM,
RLM, ALM) only nudge one neutral character and are kept: right-to-left text uses them."""

_DROP: dict[int, None] = {
    code: None
    for code in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *_BIDI_CONTROLS)
    if chr(code) not in _KEPT
}
"""C0 controls (ESC, BEL, CR, backspace…), DEL, the C1 controls (U+0080–U+009F: a terminal
may take U+009B as CSI and U+009D as OSC) and the bidi controls."""


def printable(text: str) -> str:
    """``text`` without escape sequences, control characters other than newline and tab,
    and bidi embeddings, overrides and isolates.  The visible characters are kept as they
    are.  Whatever is left of a sequence cut across two calls loses its controls too."""
    return _SEQUENCE.sub("", text).translate(_DROP)

