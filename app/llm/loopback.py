"""Is an endpoint on this machine?  Then no proxy stands between the app and it.

``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` (and, on Windows and macOS, the system's proxy
settings, which httpx2 reads with them) are for reaching the internet.  A prompt for the
embedded server, Ollama or any server on 127.0.0.1 sent through them would hand the
résumé and the transcript to the proxy, and a proxy cannot reach the loopback of this
machine anyway.  So every HTTP client built for a loopback URL is built with
``trust_env=False`` (:func:`trust_env`); a remote endpoint keeps honouring them.
"""

from __future__ import annotations

from typing import Literal

from app.platform.loopback import is_loopback

__all__ = ["is_loopback", "remote_tactic", "trust_env"]


def trust_env(url: str) -> bool:
    """httpx2's ``trust_env`` for a client of ``url``: False on loopback (no proxy from the
    environment or the system), True elsewhere."""
    return not is_loopback(url)


def remote_tactic(setting: Literal["auto", "on", "off"], url: str, *, local: bool = False) -> bool:
    """Whether a tactic against a remote provider's tail latency (a hedged request, a re-warm,
    a cache ping) is used for the endpoint at ``url``: "on"/"off" as set; "auto" only when
    the server is elsewhere.  On this machine (``local``: the embedded server, which may not
    be up yet; or a loopback URL) the answer's own CPU is the bottleneck, so extra requests
    only slow it down, and connections cost nothing to open."""
    if setting != "auto":
        return setting == "on"
    return not (local or is_loopback(url))
