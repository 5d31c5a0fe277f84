"""Where answers come from: an OpenAI-compatible endpoint, or the embedded local LLM.

Named ``LlmEndpoint`` so that it is never confused with the end-of-turn decision in
:mod:`app.turns.endpointer`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from app.core.config import LlmConfig, Settings
from app.llm.gguf import LocalModelError, check_gguf
from app.platform.secrets import SecretStoreError, get_api_key, url_with_credentials

log = logging.getLogger(__name__)

LOCAL_MODEL = "SmolLM2-135M-Instruct"
"""The bundled model's one name: what the embedded server answers to (``--model_alias``),
what the client sends, and what prices, logs and ``doctor`` show."""
NO_KEY = "not-needed"
"""The key sent where none is needed (the embedded server, a keyless local server): every
key is redacted from all output, so it must be no word a message uses ("local" was)."""
BUNDLED = "bundled"
"""``[llm] local_model`` for the shipped model (any other value is a GGUF file's path)."""
__all__ = ["BUNDLED", "LOCAL_MODEL", "NO_KEY", "LlmEndpoint", "LocalModelError", "bundled_local_model",
           "local_model_name", "local_model_path", "resolve_llm_endpoint"]


def bundled_local_model(llm: LlmConfig) -> bool:
    """Whether the embedded server is set to load the shipped SmolLM2."""
    return llm.local_model.strip().lower() == BUNDLED


def local_model_name(llm: LlmConfig) -> str:
    """The model name the client sends to the embedded server: :data:`LOCAL_MODEL`, or
    the GGUF file's stem (what the server is told to call it, ``--model_alias``)."""
    return LOCAL_MODEL if bundled_local_model(llm) else Path(llm.local_model.strip()).expanduser().stem


def local_model_path(llm: LlmConfig) -> Path | None:
    """The GGUF file the embedded server should load, checked; None = the bundled model.

    Raises :class:`LocalModelError` for a file that is missing, unreadable or not GGUF.
    """
    return None if bundled_local_model(llm) else check_gguf(llm.local_model.strip())


@dataclass(frozen=True)
class LlmEndpoint:
    base_url: str
    api_key: str
    model: str
    local: bool


def resolve_llm_endpoint(settings: Settings, *, base_url: str | None = None, api_key: str | None = None,
                         model: str | None = None) -> LlmEndpoint | None:
    """Flags > environment > settings; None = the embedded local LLM.

    With no base URL and no key anywhere, the embedded server is used (nothing to set
    up).  A base URL without a key is fine for local servers (Ollama, LM Studio…), which
    ignore it.
    """
    url = base_url or os.environ.get("OPENAI_BASE_URL") or settings.llm.base_url
    try:
        key = get_api_key(url, explicit=api_key)
    except SecretStoreError as exc:  # no keychain on this machine: the environment still works
        log.info("%s", exc)
        key = None
    try:  # credentials Settings took out of the base URL, kept in the keychain for its host
        url = url_with_credentials(url)
    except SecretStoreError as exc:
        log.info("%s", exc)
    chosen_model = model or os.environ.get("COPILOT_MODEL") or settings.llm.model
    if url is None and key is None:
        return None
    url = url or "https://api.openai.com/v1"
    return LlmEndpoint(url, key or NO_KEY, chosen_model or "gpt-4o-mini", local=False)
