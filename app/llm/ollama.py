"""Is a local Ollama running, and with which models?  Asked so Settings can offer it.

Detection only ever changes what the settings dialog offers: the answers switch to
Ollama when the user picks it there, never because it was found.  Ollama's own listing
(``GET /api/tags``) is asked rather than its OpenAI-compatible ``/v1/models`` because it
is the endpoint every Ollama version has, and its answer names the pulled models.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2

from app.llm.body_cap import sync_hook
from app.llm.loopback import trust_env

DEFAULT_HOST = "127.0.0.1:11434"
"""Where Ollama listens unless ``OLLAMA_HOST`` says otherwise (its own default)."""
PROBE_TIMEOUT_S = 1.0
"""A running Ollama lists its models in milliseconds and a stopped one is refused at once;
this bounds only an ``OLLAMA_HOST`` behind a firewall that drops packets, and is short
enough that the probe thread (and ``doctor``) never keep anyone waiting."""


@dataclass(frozen=True)
class OllamaFound:
    """A running Ollama: its OpenAI-compatible base URL and the models it has pulled."""

    base_url: str
    models: tuple[str, ...]


def ollama_root(environ: Mapping[str, str] | None = None) -> str:
    """Ollama's address as ``http://host:port``, from ``OLLAMA_HOST`` the way Ollama reads it
    (``host``, ``host:port``, ``:port`` or a URL; ``0.0.0.0`` is a bind address, asked on
    loopback)."""
    env = os.environ if environ is None else environ
    value = (env.get("OLLAMA_HOST") or "").strip() or DEFAULT_HOST
    if "://" not in value:
        value = "http://" + value
    try:
        parts = urlsplit(value)
        host = parts.hostname or "127.0.0.1"
        port = parts.port or 11434
    except ValueError:  # a port that is not a number: Ollama would not start on it either
        return "http://" + DEFAULT_HOST
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme or 'http'}://{host}:{port}"


def find_ollama(timeout: float = PROBE_TIMEOUT_S,
                environ: Mapping[str, str] | None = None) -> OllamaFound | None:
    """The Ollama running at :func:`ollama_root`, or None; never raises (a probe that fails
    for any reason means "not offered")."""
    root = ollama_root(environ)
    try:
        # Loopback (the usual case): never through a proxy; a remote OLLAMA_HOST: as the user set it.
        with httpx2.Client(timeout=httpx2.Timeout(timeout), trust_env=trust_env(root),
                          event_hooks={"response": [sync_hook]}) as http:
            reply = http.get(f"{root}/api/tags")
        if reply.status_code != 200:
            return None
        data = reply.json()
        listed = data.get("models") if isinstance(data, dict) else None
        if not isinstance(listed, list):
            return None
        names = [m.get("name") or m.get("model") for m in listed if isinstance(m, dict)]
        return OllamaFound(f"{root}/v1", tuple(sorted(n for n in names if isinstance(n, str) and n)))
    except Exception:  # refused, timed out, not JSON, not Ollama: all "not found"
        return None
