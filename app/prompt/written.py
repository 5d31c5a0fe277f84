"""The prompt for a question read from the screen: a coding problem, a written prompt, an error.

A spoken question gets a short answer to say aloud; a written one gets what a coding round
needs, in a fixed order the window renders: the problem restated in one line, the
approach, the code in one fenced block, and its time and space complexity.  A capture
that shows an error beside code gets the cause and the fixed code instead.  The text was
read by OCR: the model is told so (a misread character is to be read past, not answered).

With the image setting on, each capture also goes as an ``image_url`` part (PNG data
URL) after the text, for a vision-capable model.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any

from app.prompt.shape import ReplyShape

WRITTEN_SYSTEM_PROMPT = (
    "You help a candidate in a coding interview. The user's message is text read from their "
    "screen by OCR: a coding problem, a written question, or their code with an error. OCR may "
    "misread a character; read past it.\n"
    "For a problem or a question, answer in this order, with these headings:\n"
    "**Problem:** the problem restated in one line.\n"
    "**Approach:** the idea in two or three sentences.\n"
    "**Code:** one fenced code block, in the language of any code on the screen (else Python), "
    "complete and runnable.\n"
    "**Complexity:** time and space, each with a one-line reason.\n"
    "For code with an error, answer with **Cause:** (one line), **Fix:** (the fixed code in one "
    "fenced block) and **What changed:** (one line).\n"
    "No other text."
)
WRITTEN_SHAPE = ReplyShape()
"""Code is not cut into bullets: a capable model follows the order on its own."""
WRITTEN_MAX_TOKENS = 1200
"""A full solution with its explanation: about 60 lines of code and ten of prose."""
BUNDLED_MODEL_NOTE = (
    "coding answers need a larger model than the bundled 135M one: choose a GGUF file, Ollama "
    "or an endpoint in Settings → Model"
)
_ERROR = re.compile(r"Traceback \(most recent call last\)|\b\w*(Error|Exception)\b[:(]|^\s*at \S+\(|"
                    r"\berror\b[: ]|panicked at|Segmentation fault", re.IGNORECASE | re.MULTILINE)


def shows_an_error(text: str) -> bool:
    """Does the capture show an error message or a stack trace (then: the fix)?"""
    return bool(_ERROR.search(text))


def written_messages(text: str, images: Sequence[bytes] = ()) -> list[dict[str, Any]]:
    """The request for ``text`` (the captures' text in reading order), with ``images`` (PNG
    bytes) as ``image_url`` parts when given."""
    text = text.strip()
    if not text:
        raise ValueError("question is empty")
    ask = "Fix the error." if shows_an_error(text) else "Solve it."
    user = f"Read from my screen:\n```\n{text}\n```\n{ask}"
    content: str | list[dict[str, Any]] = user
    if images:
        content = [{"type": "text", "text": user}]
        content += [{"type": "image_url", "image_url": {"url": png_data_url(image)}} for image in images]
    return [{"role": "system", "content": WRITTEN_SYSTEM_PROMPT}, {"role": "user", "content": content}]


def png_data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
