"""The held-out corpus generator: its manifest must say where the speech really ends."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from devtools.bench import heldout
from devtools.bench.corpus import load_corpus
from devtools.bench.synth import write_wav
from tests.speech import read_wav, speech_bounds

LOUD = round(32768 * 10 ** (-50 / 20))
"""-50 dBFS: the check looks above it, the trim keeps everything above -60 dBFS."""


def test_both_synthesizers_and_a_pause_land_where_the_manifest_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heldout, "QUESTIONS", (
        (("Have you used Rust?", "I mean at work."), "flite:slt"),
        (("Why this company?",), "espeak:en-us+michael"),
    ))
    heldout.build(tmp_path)
    clips = load_corpus(tmp_path)
    assert [c.text for c in clips] == ["Have you used Rust? I mean at work.", "Why this company?"]
    for clip in clips:
        start, end = speech_bounds(clip.path, LOUD)
        # the speech starts and ends where the manifest says (within 20 ms: the trim keeps
        # everything above -60 dBFS, the check looks above -50)
        assert abs(start - clip.speech_start_s) < 0.02 and abs(end - clip.speech_end_s) < 0.02
    (pause_start, pause_s), = clips[0].pauses
    first, last = round(pause_start * 16_000) + 80, round((pause_start + pause_s) * 16_000) - 80  # 5 ms in
    inside = read_wav(clips[0].path)[first:last].astype(np.int32)
    assert pause_s == heldout.PAUSE_S and np.abs(inside).max() < LOUD  # the pause is silent
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert {m["voice"] for m in manifest} == {"flite:slt", "espeak:en-us+michael"}


def test_room_tone_is_added_at_the_asked_level(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heldout, "QUESTIONS", ((("Why this company?",), "espeak:en-us"),))
    heldout.build(tmp_path, noise_dbfs=-42.0)
    samples = read_wav(tmp_path / "q01.wav").astype(np.float64)
    lead = samples[: int(0.5 * 16_000)]  # before the speech: room tone only
    rms_db = 20 * np.log10(np.sqrt(np.mean(lead**2)) / 32768)
    assert -45.0 < rms_db < -39.0


def test_a_corpus_you_have_is_put_over_room_tone(tmp_path: Path) -> None:
    source, out = tmp_path / "dev", tmp_path / "dev-noisy"
    source.mkdir()
    write_wav(source / "q01.wav", np.zeros(16_000))
    manifest = [{"file": "q01.wav", "text": "你为什么想加入我们？", "speech_start_s": 0.2,
                 "speech_end_s": 0.8, "pauses": []}]
    (source / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    heldout.over_room_tone(source, out, noise_dbfs=-42.0)
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8")) == manifest
    samples = read_wav(out / "q01.wav").astype(np.float64)
    assert len(samples) == 16_000
    rms_db = 20 * np.log10(np.sqrt(np.mean(samples**2)) / 32768)
    assert -45.0 < rms_db < -39.0


def test_no_pauses_says_a_question_in_parts_in_one_breath(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heldout, "QUESTIONS", ((("Have you used Rust?", "I mean at work."), "flite:slt"),))
    heldout.build(tmp_path, pauses_within=False)
    clip, = load_corpus(tmp_path)
    assert clip.text == "Have you used Rust? I mean at work." and clip.pauses == ()
    _, end = speech_bounds(clip.path, LOUD)
    assert abs(end - clip.speech_end_s) < 0.02


def test_the_held_out_set_has_24_questions_said_in_one_breath() -> None:
    """Enough questions with no deliberate pause for a p95 and a hit rate that one clip
    does not swing by 6 points (issue 45), each question once."""
    texts = [" ".join(parts) for parts, _ in heldout.QUESTIONS]
    assert sum(len(parts) == 1 for parts, _ in heldout.QUESTIONS) >= 24
    assert len(set(texts)) == len(texts)
