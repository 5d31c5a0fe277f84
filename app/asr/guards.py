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
    """Truncate a decoder loop: a word said ``max_repeats`` times in a row, or a phrase of
    three or more words said twice in a row.

    Genuine doubles ("very very") survive; a repeated phrase or sentence is what Whisper
    does when it loops, and what the interviewer almost never does.
    """
    words = text.split()
    norm = [_norm(w) for w in words]
    for size in range(1, len(words) // 2 + 1):
        limit = max_repeats if size < 3 else 2
        for i in range(len(words) - size * limit + 1):
            unit = norm[i:i + size]
            count = 1
            while norm[i + size * count: i + size * (count + 1)] == unit:
                count += 1
            if count >= limit:
                return " ".join(words[: i + size * (limit - 1)])
    return text


def _norm(word: str) -> str:
    return re.sub(r"[^\w']", "", word.lower())
