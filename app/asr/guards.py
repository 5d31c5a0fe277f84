"""Hallucination guards: Whisper invents text for silence, noise and loops; we drop it."""

from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher

from app.asr.decoder import Hypothesis
from app.asr.script import INITIAL_PROMPTS
from app.core.text import SENTENCE_FINAL, has_cjk, words

# The sign-offs of the video subtitles Whisper learnt from (Chinese, both scripts).
_SIGN_OFFS_ZH = (
    "谢谢观看", "感谢观看", "谢谢收看", "谢谢大家", "谢谢", "我们下期再见", "下期再见", "拜拜",
    "謝謝觀看", "感謝觀看", "謝謝收看", "謝謝大家", "謝謝", "我們下期再見", "下期再見",
)
# What tiny/base models typically say over non-speech; only dropped when alone.
_NON_SPEECH_PHRASES = {
    "you", "thank you", "thank you.", "thanks for watching!", "thanks for watching.", "i", "so",
    "bye.", "bye", ".", "...", "okay.", "music", "[music]", "(music)", "[blank_audio]", *_SIGN_OFFS_ZH,
}
# The sign-offs among them, which Whisper also appends to real words, over the silence
# that follows them ("What you choose. Thank you."): as words.
_SIGN_OFFS = {
    ("thank", "you"), ("thanks", "for", "watching"), ("thank", "you", "for", "watching"),
    ("thank", "you", "very", "much"), ("bye",), *((w,) for w in _SIGN_OFFS_ZH),
}
# A sign-off is cut after a sentence or after a clause: under load the same pass writes
# "What you choose, thank you." where it wrote "What you choose. Thank you." unloaded.
_CLAUSE_MARKS = ",，、"
_MARKS = SENTENCE_FINAL + _CLAUSE_MARKS
_BEFORE = re.escape(_MARKS)
_FINAL = re.escape(SENTENCE_FINAL)
_LAST_CLAUSE = re.compile(rf"(?<=[{_BEFORE}])\s*([^{_BEFORE}]+)[{_FINAL}]*\s*$")
# Subtitle credits and channel plugs: never part of an interview question, dropped even
# inside longer text ("请不吝点赞 订阅 转发 打赏支持明镜与点点栏目", "字幕由Amara.org社区提供").
_NON_SPEECH_ZH = re.compile(
    "[点點][赞讚].*[订訂][阅閱]|[订訂][阅閱].*[点點][赞讚]|不吝[点點][赞讚]|打[赏賞]支持|明[镜鏡]"
    "|字幕(?:由|by|提供|制作|製作)|(?:提供|制作|製作)字幕|amara\\.org|[优優][优優][独獨][播]"
    "|欢迎订阅|歡迎訂閱|订阅我的频道|訂閱我的頻道"
)


_PROMPTS = {tuple(words(prompt)) for prompt in INITIAL_PROMPTS.values()}
"""The prompts Chinese passes are steered with, as words (both scripts)."""


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
    folded = unicodedata.normalize("NFKC", text).lower()
    if has_cjk(folded) and (_NON_SPEECH_ZH.search(folded.replace(" ", "")) or _echoes_prompt(folded)):
        return True
    if h.prompted and echoes_terms(folded, h.prompted):
        return True
    alone = folded.rstrip("。！!.，, ") if has_cjk(folded) else folded
    return alone in _NON_SPEECH_PHRASES and h.avg_logprob < -0.5


def _echoes_prompt(folded: str) -> bool:
    """Over audio it cannot make out, Whisper says its prompt back ("这三位是普通话的句子。"
    for "以下是普通话的句子。").  Two thirds of a prompt in one run is that echo; a question
    that names Mandarin ("你会说普通话吗？") shares three characters of it."""
    said = words(folded)
    for prompt in _PROMPTS:
        run = SequenceMatcher(None, said, prompt, autojunk=False).find_longest_match()
        if run.size * 3 >= len(prompt) * 2:
            return True
    return False


def echoes_terms(text: str, terms: tuple[str, ...] | list[str]) -> bool:
    """The glossary said back: two or more of the prompted terms and next to nothing else
    (one word at most: "and", "和").  Over audio it cannot make out, Whisper continues
    its prompt, and a glossary is a prompt; a question names a term or two among its own
    words ("Have you run CockroachDB in production?"), a list of names alone is no question."""
    said = words(text)
    covered = [False] * len(said)
    found = 0
    for term in terms:
        seq = words(term)
        hit = False
        for i in range(len(said) - len(seq) + 1):
            if seq and said[i:i + len(seq)] == seq:
                covered[i:i + len(seq)] = [True] * len(seq)
                hit = True
        found += hit
    return found >= 2 and covered.count(False) <= 1


def cut_sign_off(text: str) -> str:
    """The text without a sign-off at its end ("…choose. Thank you.", "…choose, thank you.").

    Whisper learnt from subtitles that end with one, and writes it after the last real
    words when silence follows, as it writes it alone over silence: read as the speaker's
    words, a thank-you makes an unfinished clause a finished one at every pause.  An
    interviewer's own "thank you" after their question asks nothing, so losing it costs
    the question nothing.  Only a whole clause after a mark is cut, never words inside one
    ("…how you thank your team"), and a clause mark left bare goes with it.
    """
    found = _LAST_CLAUSE.search(text)
    if found is None or not text[: found.start(1)].strip(" " + _MARKS):
        return text
    said = words(unicodedata.normalize("NFKC", found.group(1)).lower())
    key = ("".join(said),) if said and has_cjk(said[0]) else tuple(said)
    if key not in _SIGN_OFFS:
        return text
    return text[: found.start(1)].rstrip().rstrip(_CLAUSE_MARKS).rstrip()
