"""The pause sets' writer: the manifest says where the speech is and where each pause lies."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import numpy as np
import numpy.typing as npt

from devtools.bench import pause_set
from devtools.bench.corpus import load_corpus
from devtools.bench.pause_set import Clip, write_set
from devtools.bench.synth import speak
from tests.speech import read_wav, speech_bounds

RATE = 16_000
LOUD = round(32768 * 10 ** (-50 / 20))
"""-50 dBFS: clearly speech."""


def _tone(text: str) -> npt.NDArray[np.float64]:
    """0.1 s of a constant level per word: where it lands can be checked to the sample."""
    return np.full(round(0.1 * RATE) * len(text.split()), 1000.0)


def test_the_manifest_has_the_fields_and_the_pauses_are_where_it_says(tmp_path: Path) -> None:
    rooms: list[int] = []

    def room(audio: npt.NDArray[np.float64], number: int) -> npt.NDArray[np.float64]:
        rooms.append(number)
        return audio

    write_set(tmp_path, [Clip(("one two", 0.7, "three"), "fake:a", _tone),
                         Clip(("a", 0.4, "b c", 1.2, "d"), "fake:b", _tone),
                         Clip(("no pause here",), "fake:c", _tone)], joiner="+", room=room)
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    lead = pause_set.LEAD_S
    assert manifest == [
        {"file": "q01.wav", "text": "one two+three", "voice": "fake:a", "speech_start_s": lead,
         "speech_end_s": round(lead + 0.2 + 0.7 + 0.1, 3), "pauses": [[round(lead + 0.2, 3), 0.7]]},
        {"file": "q02.wav", "text": "a+b c+d", "voice": "fake:b", "speech_start_s": lead,
         "speech_end_s": round(lead + 0.1 + 0.4 + 0.2 + 1.2 + 0.1, 3),
         "pauses": [[round(lead + 0.1, 3), 0.4], [round(lead + 0.1 + 0.4 + 0.2, 3), 1.2]]},
        {"file": "q03.wav", "text": "no pause here", "voice": "fake:c", "speech_start_s": lead,
         "speech_end_s": round(lead + 0.3, 3), "pauses": []},
    ]
    assert rooms == [1, 2, 3]
    for entry in manifest:  # sound exactly from speech start to end, but in the pauses
        samples = read_wav(tmp_path / entry["file"])
        sounding = np.zeros(len(samples), dtype=bool)
        sounding[round(entry["speech_start_s"] * RATE):round(entry["speech_end_s"] * RATE)] = True
        for start, length in entry["pauses"]:
            sounding[round(start * RATE):round((start + length) * RATE)] = False
        assert np.array_equal(samples != 0, sounding)
        assert len(samples) == round((entry["speech_end_s"] + pause_set.TAIL_S) * RATE)


def test_real_speech_starts_and_ends_and_pauses_where_the_manifest_says(tmp_path: Path) -> None:
    voice = "flite:rms"
    write_set(tmp_path, [Clip(("Do you use Postgres,", 0.6, "Redis,", 1.1, "or both?"), voice,
                              partial(speak, voice=voice))])
    clip, = load_corpus(tmp_path)
    samples = np.abs(read_wav(clip.path).astype(np.int32))
    start, end = speech_bounds(clip.path, 0)  # the first and last sample that is not silence
    assert abs(start - clip.speech_start_s) < 0.001 and abs(end - clip.speech_end_s) < 0.001
    assert [length for _, length in clip.pauses] == [0.6, 1.1]
    for pause_start, length in clip.pauses:
        first, last = round(pause_start * RATE), round((pause_start + length) * RATE)
        assert samples[first + 16:last - 16].max() == 0  # silence, 1 ms in (the manifest is to the ms)
        assert samples[first - 800:first].max() > LOUD  # speech in the 50 ms before it
        assert samples[last:last + 800].max() > LOUD  # and in the 50 ms after it
