"""One Whisper pass over an utterance, sized to the utterance instead of 30 s.

faster-whisper's ``transcribe`` pads every input to a 30 s window, and on a 2-core CPU
the encoder then costs ~400 ms whatever the utterance length.  CTranslate2's encoder
accepts shorter inputs, so we pad the audio only to the next bucket past its end, but
to at least ``min_context_s``: below ~6 s of context tiny.en starts looping and
mishearing (WER 55 % at 5 s on the dev corpus, 14 % at 8 s, 15 % with the full 30 s
window), while a pass over a typical question drops from ~600 ms to ~75 ms.
Greedy decoding, fixed language, no timestamps, no VAD filter: the streaming layer
already knows where speech is.
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass

import ctranslate2
import numpy as np
import numpy.typing as npt
from faster_whisper import WhisperModel
from faster_whisper.tokenizer import Tokenizer

from app.asr.model import ModelError

SAMPLE_RATE = 16_000
HOP = 160  # samples per mel frame
FULL_FRAMES = 3000  # Whisper's 30 s window
MAX_TOKENS = 224


@dataclass(frozen=True, slots=True)
class Hypothesis:
    text: str
    no_speech_prob: float
    avg_logprob: float
    compression_ratio: float
    seconds: float
    """Wall time the pass took."""

    @property
    def words(self) -> list[str]:
        return self.text.split()


class WhisperDecoder:
    """Decodes whole utterances (≤ 30 s) with one encoder pass each.

    Not thread-safe: the streaming recogniser owns one and calls it from its worker.
    """

    def __init__(self, model: WhisperModel, language: str = "en", *, context: str = "auto",
                 min_context_s: float = 8.0, bucket_s: float = 2.0) -> None:
        self._model = model
        multilingual = bool(model.model.is_multilingual)
        if not multilingual and language != "en":
            raise ModelError(f"this Whisper model is English-only; language {language!r} needs a "
                             "multilingual model (e.g. --asr-model small)")
        self._tokenizer = Tokenizer(model.hf_tokenizer, multilingual, task="transcribe",
                                    language=language if multilingual else "en")
        self._context = context
        self._min_frames = int(min_context_s * SAMPLE_RATE / HOP)
        self._bucket_frames = int(bucket_s * SAMPLE_RATE / HOP)
        self._suppress = [*self._tokenizer.non_speech_tokens]

    def decode(self, audio: npt.NDArray[np.int16] | npt.NDArray[np.float32],
               previous_text: str | None = None) -> Hypothesis:
        started = time.perf_counter()
        samples = audio.astype(np.float32) / 32768.0 if audio.dtype == np.int16 else audio
        samples = samples[: FULL_FRAMES * HOP]
        frames = self._frames_for(len(samples))
        padded = np.zeros(frames * HOP, dtype=np.float32)
        padded[: len(samples)] = samples
        features = self._model.feature_extractor(padded, padding=0)[:, :frames]
        encoded = self._model.model.encode(
            ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None])), to_cpu=False)
        result = self._model.model.generate(
            encoded, [self._prompt(previous_text)], beam_size=1, max_length=MAX_TOKENS,
            return_scores=True, return_no_speech_prob=True, suppress_blank=True,
            suppress_tokens=self._suppress,
        )[0]
        tokens = [t for t in result.sequences_ids[0] if t < self._tokenizer.eot]
        text = self._tokenizer.decode(tokens).strip()
        # CTranslate2 returns the length-normalised score; recover Whisper's avg_logprob.
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1) if result.scores else 0.0
        return Hypothesis(text=text, no_speech_prob=float(result.no_speech_prob),
                          avg_logprob=float(avg_logprob), compression_ratio=compression_ratio(text),
                          seconds=time.perf_counter() - started)

    def _frames_for(self, n_samples: int) -> int:
        if self._context == "full":
            return FULL_FRAMES
        needed = math.ceil(n_samples / HOP) + self._bucket_frames // 2
        bucketed = math.ceil(needed / self._bucket_frames) * self._bucket_frames
        return min(FULL_FRAMES, max(self._min_frames, bucketed))

    def _prompt(self, previous_text: str | None) -> list[int]:
        prompt: list[int] = []
        if previous_text:
            prompt = [self._tokenizer.sot_prev, *self._tokenizer.encode(" " + previous_text.strip())[-100:]]
        return [*prompt, *self._tokenizer.sot_sequence, self._tokenizer.no_timestamps]


def compression_ratio(text: str) -> float:
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0
