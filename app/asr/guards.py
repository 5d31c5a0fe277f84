"""Hallucination guards: Whisper invents text for silence, noise and loops; we drop it."""

from __future__ import annotations

import re

from app.asr.decoder import Hypothesis

# What tiny/base models typically say over non-speech; only dropped when alone.
_NON_SPEECH_PHRASES = {
    "you", "thank you", "thank you.", "thanks for watching!", "thanks for watching.", "i", "so",
    "bye.", "bye", ".", "...", "okay.", "music", "[music]", "(music)", "[blank_audio]",
}


def is_hallucination(h: Hypothesis, *, no_speech_threshold: float = 0.6,
                     log_prob_threshold: float = -1.0, compression_threshold: float = 2.4) -> bool:
    """True when the hypothesis should not become a transcript.

    Whisper's own rule needs both a high no-speech probability and a low log-prob; the
    audio we decode has already passed the VAD, so a confident no-speech score alone is
    enough to distrust it, and a very low log-prob alone marks a guess.
    """
    text = h.text.strip()
    if not text or not any(ch.isalnum() for ch in text):
        return True
    if h.no_speech_prob > no_speech_threshold:
        return True
    if h.avg_logprob < log_prob_threshold * 1.5:
        return True
    if h.compression_ratio > compression_threshold:
        return True
    return text.lower() in _NON_SPEECH_PHRASES and h.avg_logprob < -0.5


def cut_repetition(text: str, *, max_repeats: int = 3) -> str:
    """Truncate a repetition loop ("the the the …", a phrase said 4+ times in a row).

    Keeps the first ``max_repeats - 1`` occurrences so genuine doubles ("very very")
    survive while decoder loops do not.
    """
    words = text.split()
    for size in range(1, 6):
        i = 0
        while i + size * max_repeats <= len(words):
            unit = [_norm(w) for w in words[i:i + size]]
            count = 1
            while words[i + size * count: i + size * (count + 1)] and \
                    [_norm(w) for w in words[i + size * count: i + size * (count + 1)]] == unit:
                count += 1
            if count >= max_repeats:
                return " ".join(words[: i + size * (max_repeats - 1)])
            i += 1
    return text


def _norm(word: str) -> str:
    return re.sub(r"[^\w']", "", word.lower())
