"""Which Whisper sizes may be downloaded, and from which commit of the model hub.

Its own module, free of faster-whisper, so the Settings dialog can list the sizes without
loading the recogniser.
"""

from __future__ import annotations

import re

from app.asr.errors import ModelError

PINNED_REVISIONS: dict[str, str] = {
    "tiny.en": "0d3d19a32d3338f10357c0889762bd8d64bbdeba",
    "small.en": "d1d751a5f8271d482d14ca55d9e2deeebbae577f",
    "medium.en": "a29b04bd15381511a9af671baec01072039215e3",
}
"""Whisper sizes that may be downloaded, each from one commit of ``Systran/faster-whisper-<size>``
on the model hub: a commit names its files' contents, so every user gets the model that was
named here, never whatever the repository holds that day (tiny.en's files there are the
bundled ones, SHA-256 for SHA-256).  Any other size is refused unless the setting names
its commit itself (``base@<40 hex digits>``)."""
_COMMIT = re.compile(r"[0-9a-f]{40}")


def resolve_download(name: str) -> tuple[str, str]:
    """A Whisper size setting → (size, the commit to download); :class:`ModelError` when no
    commit is pinned for it (:data:`PINNED_REVISIONS`) and the setting names none."""
    size, _, revision = name.partition("@")
    revision = revision.strip().lower() or PINNED_REVISIONS.get(size, "")
    if not _COMMIT.fullmatch(revision):
        pinned = ", ".join(PINNED_REVISIONS)
        raise ModelError(f"ASR model {name!r} has no pinned revision, so it is not downloaded: use the "
                         f"bundled model, {pinned}, a CTranslate2 model folder, or name the commit of "
                         f"Systran/faster-whisper-{size} to trust as {size}@<40 hex digits>")
    return size, revision
