"""Settings: one typed tree, its TOML file, and forgiving loading of hand-edited files.

A wrong value in the file never stops the app: that value alone falls back to its default
(a list's bad item is left out) and the problem is reported with its line and what is
wrong (:mod:`app.core.settings_file`).  The API key is not a setting: it
lives in the OS keychain (see :mod:`app.platform.secrets`) or the environment.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import platformdirs
import tomli_w
from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.core.private import make_dirs, private_dir, write_private_text
from app.core.settings_file import ConfigProblem as ConfigProblem  # where the app reads it from
from app.core.settings_file import KeyLines, prune_invalid

APP_NAME = "interview-copilot"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class AudioConfig(_Section):
    source: Literal["file", "mic", "loopback"] = "loopback"
    """The interviewer: what the speakers play (a call), or a microphone or a file."""
    device: str | None = None
    """Input device name (substring) or index; None = system default."""
    candidate: Literal["off", "mic"] = "mic"
    """The candidate's own microphone, transcribed as "You" (context for follow-ups, never
    answered); "off" listens to the interviewer only."""
    candidate_device: str | None = None
    """The candidate's microphone: name (substring) or index; None = system default."""


class VadConfig(_Section):
    aggressiveness: int = Field(default=2, ge=0, le=3)
    pre_roll_ms: int = Field(default=300, ge=0, le=2000)
    hangover_ms: int = Field(default=90, ge=0, le=2000)
    """Trailing unvoiced audio still sent to ASR with an utterance (softens cut-offs); the
    pause pass the final reuses waits for it (the guess's pass does not:
    ``guess_hangover_ms``).  30 ms (the first unvoiced frame) is a little faster, but
    guesses inside the pauses of a question still being asked wherever no words model
    holds the guess back (Chinese), and the corpora's synthesized voices end crisply:
    they say nothing about the soft last consonants of real ones (figures: decision
    0002)."""
    guess_hangover_ms: int = Field(default=30, ge=0, le=2000)
    """The interviewer's pause is decoded once this much unvoiced audio is in, for the
    guess, and again after ``hangover_ms`` for the final; a guess the final does not
    confirm word for word is never shown.  30 ms is one frame, the first the VAD calls
    unvoiced: the soonest a pause is known (figures: decisions 0022, 0023).  Equal to
    ``hangover_ms``: one pass, after the hangover."""
    min_speech_ms: int = Field(default=150, ge=30, le=5000)
    """Shorter voiced bursts (clicks, coughs) never start an utterance."""
    onset_window_ms: int = Field(default=300, ge=30, le=5000)
    """...counted within this window: twice ``min_speech_ms``, so a first word cut by a
    stop consonant ("wha-t was…": 120 ms of voice, a 90 ms closure) starts speech when the
    next syllable begins instead of a syllable later, while one click still does not
    (decision 0009)."""
    quiet_gate_db: float = Field(default=35.0, ge=0.0, le=90.0)
    """Within speech, a frame this far below the utterance's loudest is silence even if
    webrtcvad still calls it voiced (its decision trails the end of speech by a few
    frames, decision 0009); 0 turns the gate off."""
    noise_margin_db: float = Field(default=12.0, ge=0.0, le=60.0)
    """A frame is speech only this far above the room's noise floor (the quietest frame of
    the last ``noise_window_s``): 30 ms frames of steady noise stay just under the
    default 12 dB above that minimum, speech well above it (figures: decision 0004); 0
    turns the noise gate off."""
    noise_window_s: float = Field(default=3.0, ge=0.5, le=30.0)
    """How far back the noise floor looks: long enough to always hold a gap between
    words, short enough to follow a fan that starts."""


class AsrConfig(_Section):
    model: str = "bundled"
    """"bundled" (tiny.en for English, else the multilingual base of the [zh] extra), a
    Whisper size name or a folder."""
    language: str = Field(default="en", pattern=r"^(auto|[a-z]{2,3})$")
    """"en", "zh", another Whisper code, or "auto": detected on a session's first utterance
    (between English and Chinese) and kept for the session."""
    chinese_script: Literal["simplified", "traditional", "taiwan", "hongkong"] = "simplified"
    """Script of Chinese captions (OpenCC character conversion, no phrase rewriting)."""
    compute_type: str = "int8"
    cpu_threads: int | None = Field(default=None, ge=1, le=64)
    """Threads per recognition pass; unset = every core but one, at most 4 (see
    :func:`app.platform.cores.pass_threads`)."""
    partial_interval_ms: int = Field(default=300, ge=50, le=5000)
    """Minimum new audio between partial passes; a pass never queues behind another."""
    no_speech_threshold: float = Field(default=0.6, ge=0.0, le=1.0)
    log_prob_threshold: float = -1.0
    max_utterance_s: float = Field(default=28.0, ge=2.0, le=30.0)
    pause_beam: int = Field(default=3, ge=1, le=10)
    """Beam width of the passes over a pause (the guess's and the final's: the words an
    answer is asked for); passes while the voice goes on stay greedy.  A greedy decoder
    commits to each token alone, and a name the prompt steers towards loses to the first
    ordinary piece ("the deform" for "the Terraform"): on the glossary's stack set most
    misses are such search errors (the right sentence scores higher).  3 hears what 5 does
    there for two thirds of its extra cost, about a quarter more CPU on those one or two
    passes a turn (decision 0035).  1: greedy."""
    recheck_beam: int = Field(default=5, ge=1, le=10)
    """A pause's words that trail off ("…rate limit or") would hold the turn for seconds,
    and greedy decoding is least sure of the last word: they are decoded again with this
    beam, Whisper's own default (the width its published accuracy was measured with).
    1: never."""
    mend_names: bool = True
    """The words an answer is asked for are checked for a near-miss of a glossary term
    ("posters, QL" for PostgreSQL), and the term is written where the same decoder, on the
    same audio, finds its sentence within 2 nats a token of the term of its own words
    (:mod:`app.asr.near_miss`, decision 0036).  Only a word nobody writes (no English word,
    spelt from pieces) nominates, so "logistic regression" stays itself and a question of
    everyday words costs nothing.  False: the search's words."""
    glossary: list[str] = Field(default_factory=list, max_length=200)
    """Names your interviews will use (a product, a company, a tool: "CockroachDB",
    "ArgoCD", "星澜支付"): the recogniser is steered towards their spelling, these first,
    then the names of the résumé and job description the model needs most, within 128
    tokens (:mod:`app.asr.glossary`)."""


class LanguageWords(_Section):
    """The words the turn and answer rules read, for one language (``[turns.words.en]``)."""

    end_words: list[str] = Field(default_factory=list)
    """Tags that end a question: "right?", "you know", 对吧 (a finished question)."""
    final_particles: list[str] = Field(default_factory=list)
    """A question that ends in one of these is finished (counted like an end word)."""
    question_words: list[str] = Field(default_factory=list)
    """Words that make a sentence a question wherever they stand (worth half a vote, as
    a "?"); a sentence the recogniser closed with "。" holding one counts as one ending in
    "?" for the text rules.  English ones open questions that may still go on, so there
    are none."""
    thinking_words: list[str] = Field(default_factory=list)
    """A question trailing off in one of these ("and", "so", 然后) is a thinking pause."""
    more_words: list[str] = Field(default_factory=list)
    """Markers of more to come ("actually", "I mean", 另外): a text ending in one, its
    final punctuation aside ("What is TCP? Actually."), is a thinking pause too.  The
    recogniser closes a marker with a full stop as readily as a question, so the full stop
    says nothing; a "?" after it does ("…, actually?" asks).  A one-word marker counts
    after a clause boundary only ("How well?" is no marker, "…? Well," is)."""
    verb_pending: list[str] = Field(default_factory=list)
    """Endings that still lack their verb, whatever "?" the recogniser put after them: in
    Mandarin "why" and "how" stand before the verb, so a pause after "你为什么" or "你是怎么"
    is inside the question ("你为什么……想加入我们？"): a thinking pause.  English has none:
    the words model reads its open endings ("Why did you").  A Chinese one counts after
    anything, another as whole words."""
    fillers: list[str] = Field(default_factory=list)
    """Dropped when comparing questions ("um", 嗯, 那个)."""
    question_openers: list[str] = Field(default_factory=list)
    """A clause that opens with one of these asks ("what", "could", "when did"): the words
    as said make a question, whatever "?" the recogniser wrote or left out."""
    request_words: list[str] = Field(default_factory=list)
    """A clause that opens with one of these asks for an answer as a question does ("tell
    me", "walk me through", 请, 介绍); a Chinese one counts wherever it stands.  A turn
    whose words neither ask nor request is a statement, which waits longer (a preamble:
    "We run everything on AWS, …")."""


_WH = ["what", "what's", "who", "who's", "whom", "whose", "which", "why", "how", "how's"]
_AUXILIARIES = ["do", "does", "did", "is", "are", "was", "were", "am", "have", "has", "had", "can",
                "could", "would", "will", "should", "shall", "may", "might", "must", "don't", "doesn't",
                "didn't", "isn't", "aren't", "wasn't", "weren't", "haven't", "hasn't", "can't", "couldn't",
                "wouldn't", "won't", "shouldn't"]
"""What opens an English question: a wh-word, or an auxiliary before its subject; "when"
and "where" open a question only before an auxiliary ("When did you…?", not "When you
joined…,")."""

_ZH_SUBJECTS = ("你", "您", "你们", "我们", "咱们", "他", "她", "他们")
"""The pronouns an interviewer's question opens with, before 为什么 or 怎么 and the verb."""

DEFAULT_WORDS: dict[str, dict[str, list[str]]] = {
    "en": {
        "end_words": ["right?", "you know", "you know?", "is that right", "is that right?",
                      "does that make sense", "does that make sense?", "okay?", "ok?"],
        "final_particles": [],
        "question_words": [],
        "thinking_words": ["and", "so", "but", "or", "because", "like", "then", "um", "uh", "the", "a"],
        "more_words": ["actually", "sorry", "i mean", "or rather", "and also", "well", "also"],
        "fillers": ["um", "uh", "erm", "er", "ah", "hmm", "mm"],
        "question_openers": [*_WH, *_AUXILIARIES,
                             *(f"{w} {a}" for w in ("when", "where") for a in _AUXILIARIES)],
        "request_words": ["tell me", "tell us", "walk me through", "walk us through", "talk me through",
                          "talk us through", "take me through", "take us through", "give me", "give us",
                          "show me", "show us", "help me understand", "explain", "describe", "compare",
                          "define", "outline", "summarize", "summarise", "share", "name", "list", "pick",
                          "choose", "imagine", "suppose", "design", "sketch", "please", "let me know",
                          "i want to know", "i want to understand", "i want to hear", "i'd like to know",
                          "i'd like to understand", "i'd like to hear", "i would like to know",
                          "i would like to hear", "i'm curious", "i am curious", "i wonder",
                          "i was wondering"],
    },
    "zh": {
        "end_words": ["对吧", "是这样", "嗯", "是不是", "好吗"],
        "final_particles": ["吗", "呢", "吧"],
        "question_words": ["什么", "怎么", "为什么", "哪", "多少"],
        "thinking_words": ["然后", "所以", "但是", "还有", "就是"],
        "more_words": ["还有", "另外", "就是说", "我的意思是"],
        "verb_pending": [f"{who}{also}{how}" for who in _ZH_SUBJECTS for also in ("", "是")
                         for how in ("为什么", "怎么")],
        "fillers": ["嗯", "呃", "啊", "那个"],
        "request_words": ["请", "介绍", "说说", "说一说", "说一下", "讲讲", "讲一讲", "讲一下", "讲一个",
                          "谈谈", "谈一谈", "描述", "解释", "分享", "比较", "举个例子", "举一个例子",
                          "想了解", "想知道", "想听听"],
    },
}
"""Every language's word lists, in one place.  A ``[turns.words.LANG]`` table in the
settings file replaces the lists it names and keeps the others' defaults."""

_WORD_LISTS = tuple(LanguageWords.model_fields)


class TurnConfig(_Section):
    """Endpointing thresholds (all in milliseconds of silence after the last voiced frame)
    and the words the end-of-turn rules read (see :mod:`app.turns.policy`)."""

    endpoint_complete_ms: int = Field(default=250, ge=50, le=5000)
    """Signals say the question is finished: end after this much silence (humans leave
    ~200 ms between turns; 250 ms stays above the 150-240 ms gaps between words)."""
    endpoint_uncertain_ms: int = Field(default=600, ge=50, le=10000)
    """Signals are unsure: the middle wait (longer than most pauses between clauses of
    fluent speech, shorter than the 800 ms used when no model spoke), capped by the
    rules' question wait when the text ended in "?" twice in a row."""
    endpoint_incomplete_ms: int = Field(default=1200, ge=100, le=20000)
    """Signals say more words are coming: the commercial endpointers' long fallback."""
    endpoint_confirmed_ms: int = Field(default=400, ge=50, le=10000)
    """Signals are unsure, but the guess sent at the pause is what every pass since the
    voice stopped heard: in low-latency mode its answer is ready and held, so the turn
    ends after this much silence instead of the unsure wait (the interviewer's own longer
    pauses still stretch it).  A question that goes on after it is withdrawn, as after any
    early end (decision 0032)."""
    speculate_lead_ms: int = Field(default=600, ge=0, le=10000)
    """When more words are expected, guess this long before the endpoint: longer than a
    relayed answer's first token takes, so it is there when the endpoint fires (decision 0005)."""
    learn_pauses: bool = True
    """Dynamic endpointing: when unsure, wait 1.25x the longest of the interviewer's last
    8 pauses inside a question (never beyond the incomplete wait)."""
    words_model: bool = True
    """Score the words with the bundled SmolLM2-135M (end-of-turn token probability)."""
    words_languages: list[str] = Field(default_factory=lambda: ["en"])
    """Languages the words model was checked on: elsewhere the text rules decide.  Its
    trained head separates held-out Mandarin texts, but replayed Mandarin turns got slower
    with it (its verdict takes ~130 ms there) for one pause held (decision 0053)."""
    words_complete_logp: float = -0.2
    """The head's log P(end) at which the words vote 'finished' (+1): 5 % of the held-out
    English texts that go on score above it, the issue's false cut-off budget (decision 0053)..."""
    words_incomplete_logp: float = -1.8
    """...and at which they vote 'unfinished' (-1), linear in between: 5 % of the held-out
    whole English questions score below it, so the long wait seldom holds a finished one."""
    smart_turn: bool = False
    """Score the audio with Smart Turn v3.2 too, once a pause lasts 0.2 s (the
    ``smart-turn`` extra).  Off: trained on human prosody, it does not separate finished
    from cut questions on any set we have (decision 0006; ``bench signals`` in
    docs/benchmarks.md)."""
    smart_turn_weight: float = Field(default=0.5, ge=0.0, le=2.0)
    """Its vote is weight x (2p - 1): at 0.5 it can tip an unsure verdict, never overrule
    the words."""

    speculate_silence_ms: int = Field(default=250, ge=0, le=5000)
    speculate_min_pause_ms: int = Field(default=150, ge=0, le=5000)
    """Guesses on words finished by the text rules alone ("?" or a tag, no words model)
    wait for this much silence: shorter gaps are between words (and commas) of a question
    still being asked."""
    speculate_finished_ms: int = Field(default=90, ge=0, le=5000)
    """Words the words model calls finished are guessed after this much silence: the
    model holds back most prefixes that only sound finished, and the guess is never shown
    unless the final confirms it.  90 ms, the hangover: the silence after which the
    recogniser itself treats the voice as paused (at 150 the pass at
    ``vad.guess_hangover_ms`` gained no more than run-to-run noise; decision 0022)."""
    speculate_unsure_ms: int = Field(default=200, ge=0, le=5000)
    """With the words model on, a guess on words it does not call finished (an unsure
    verdict, or no verdict yet) waits for this much silence: longer than most of the
    150-250 ms pauses between the words of a question still being asked, where a quick
    recogniser's partial ("What is your biggest?") would otherwise be guessed and thrown
    away.  200 ms is the gap a listener usually leaves before taking the turn; a guess in
    a longer pause inside a question costs a request, never a wrong answer (decision
    0023; 250 until then).  Words called finished are guessed after
    ``speculate_finished_ms``."""
    speculate_ahead_ms: int = Field(default=250, ge=0, le=5000)
    """Words called finished before the voice stopped are guessed after this much silence
    when no pass that will hear the pause is coming (it was given up, heard no words, or
    the voice it heard was not the last), so a finished question does not wait the
    silence endpoint.  250 ms, as ``speculate_unsure_ms``: longer than a pause between the
    words of a question still being asked, where sooner guesses sent prefixes that are
    whole sentences ("How do you pray?" before "…prioritize"); and a pass still coming is
    waited for, as a partial decoded before the pause often lacks the last syllable
    ("…simple term?").  What each cost: decision 0015.  Words finished by the text rules
    alone wait ``speculate_min_pause_ms`` at least."""
    endpoint_silence_ms: int = Field(default=800, ge=100, le=10000)
    """The turn is over after this much silence..."""
    endpoint_question_silence_ms: int = Field(default=400, ge=50, le=10000)
    """...or this much once the partial ended in "?" (an end word, a final particle, or a
    Chinese question word before "。", see ``question_words``) twice in a row: long
    enough for the speculative answer's first token to be there at confirmation..."""
    endpoint_question_silence_local_ms: int = Field(default=300, ge=50, le=10000)
    """...the same with the embedded local LLM, whose first token follows the guess sooner
    than a relay's: confirming later would only add latency (decision 0005)..."""
    endpoint_thinking_silence_ms: int = Field(default=1500, ge=100, le=20000)
    """...but this much after a trailing "and/so/but/…" (a thinking pause)."""
    continuation_window_ms: int = Field(default=2000, ge=0, le=10000)
    """Speech this soon after an endpoint continues the same question ("Have you led a
    team? … I mean a big one."); 0 = every pause that ends a turn starts a new question."""
    words: dict[str, LanguageWords] = Field(
        default_factory=lambda: {lang: LanguageWords(**lists) for lang, lists in DEFAULT_WORDS.items()})
    """Word lists per language (``[turns.words.en]``, ``[turns.words.zh]``, …)."""

    @field_validator("words", mode="before")
    @classmethod
    def _over_defaults(cls, value: Any) -> Any:
        """A language's table replaces the lists it names; the others keep their defaults."""
        if not isinstance(value, dict):
            return value
        merged: dict[str, Any] = {lang: dict(lists) for lang, lists in DEFAULT_WORDS.items()}
        for lang, lists in value.items():
            given = lists.model_dump() if isinstance(lists, LanguageWords) else lists
            if isinstance(given, dict) and isinstance(merged.get(lang), dict):
                merged[lang] = {**merged[lang], **given}
            else:
                merged[lang] = given
        return merged

    def words_of(self, language: str) -> LanguageWords:
        """The lists of ``language`` ("zh-TW" reads "zh"); none for a language not listed."""
        return self.words.get(language.split("-")[0]) or LanguageWords()

    def all_words(self, name: str) -> list[str]:
        """One list (``"end_words"``, ``"fillers"``…) of every language: what comparing
        questions sets aside whatever language they are in."""
        return [w for lists in self.words.values() for w in getattr(lists, name)]


class AnswerConfig(_Section):
    low_latency: bool = True
    """Speculation on: requests leave before the turn is confirmed."""
    max_speculations: int = Field(default=3, ge=1, le=10)


@dataclass(frozen=True)
class ProviderPreset:
    """What the settings dialog fills in for a provider; every field stays editable."""

    label: str
    base_url: str
    """Empty: the user types it (a relay's own address)."""
    model: str
    send_prompt_cache_key: bool
    """OpenAI routes same-key requests to one prompt cache; others ignore or reject it."""
    send_include_usage: bool
    """``stream_options.include_usage``: the usage chunk that costs and cache hits come from."""
    note: str = ""


PROVIDER_PRESETS: dict[str, ProviderPreset] = {
    "openai": ProviderPreset("OpenAI", "https://api.openai.com/v1", "gpt-4o-mini", True, True),
    "azure": ProviderPreset(
        "Azure OpenAI", "https://YOUR-RESOURCE.openai.azure.com/openai/v1", "gpt-4o-mini", False, True,
        "Replace YOUR-RESOURCE with your resource name; the model is your deployment's name."),
    "deepseek": ProviderPreset(
        "DeepSeek", "https://api.deepseek.com/v1", "deepseek-chat", False, True,
        "DeepSeek caches repeated prefixes by itself: no cache key is needed."),
    "qwen": ProviderPreset(
        "Qwen (DashScope, OpenAI-compatible mode)", "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "qwen-plus", False, True,
        "International accounts use https://dashscope-intl.aliyuncs.com/compatible-mode/v1."),
    "relay": ProviderPreset(
        "Custom relay (OpenAI-compatible)", "", "gpt-4o-mini", True, True,
        "Enter the relay's base URL. A relay that rejects either option with a 400 is retried "
        "once without it (for the rest of the session); untick it to never send it."),
    "ollama": ProviderPreset(
        "Local Ollama", "http://localhost:11434/v1", "qwen2.5:3b", False, True,
        "Pull the model first (ollama pull qwen2.5:3b); no API key is needed."),
}
"""Providers Chinese users reach most (OpenAI and Azure directly or through a relay, the
domestic DeepSeek and Qwen, a local Ollama).  Only OpenAI documents ``prompt_cache_key``;
the others get it off so a strict endpoint never sees an unknown field."""


class LlmConfig(_Section):
    provider: str = "custom"
    """The preset last applied in the settings dialog (a key of PROVIDER_PRESETS, or
    "custom"); informational: base_url and model below are what is used."""
    base_url: str | None = None
    """None = the embedded local server (or OPENAI_BASE_URL)."""
    model: str | None = None
    local_model: str = Field(default="bundled", min_length=1)
    """What the embedded server loads when it answers (no base URL, no key): "bundled"
    (SmolLM2-135M, shipped) or the path of a GGUF file (any llama.cpp model).  Checked when
    the server starts, not here: a file moved away must not reset the setting."""
    send_prompt_cache_key: bool = True
    send_include_usage: bool = True
    http2: bool = False
    connect_timeout_s: float = Field(default=2.0, gt=0, le=60)
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    """Socket read time-out: the last resort; the two deadlines below act first."""
    first_token_timeout_s: float = Field(default=4.0, gt=0, le=300)
    """No first token this long after a request left: one hedged request on a fresh
    connection, raced against the first; no token from either after as long again ends in
    "the endpoint at HOST is not answering".  4 s is several times a hosted model's usual
    time to first token yet short enough that the answer is still useful (decision
    0011); raise it for reasoning models that think silently before their first token."""
    stall_timeout_s: float = Field(default=8.0, gt=0, le=600)
    """No data this long once text is on screen: stop, keep what arrived.  Longer than the
    first-token deadline because mid-answer pauses are normal (proxies flush in bursts,
    providers pause under load) and the text already shown stays useful, while 8 s is
    about the longest a reader waits on a half sentence before asking again."""
    rate_limit_max_wait_s: float = Field(default=5.0, ge=0, le=60)
    """A 429/503 asking to wait up to this long (``Retry-After``) is re-sent once after the
    wait; a longer wait fails at once with the wait in the message: an answer more than
    ~5 s late does not help the person speaking."""
    keepalive_expiry_s: float = Field(default=120.0, ge=5, le=3600)
    max_tokens: int = Field(default=300, ge=16, le=8192)
    temperature: float = Field(default=0.3, ge=0.0, le=2.0)
    cache_keepalive: Literal["auto", "on", "off"] = "auto"
    cache_keepalive_interval_s: float = Field(default=240.0, ge=30, le=3600)
    hedge: Literal["auto", "on", "off"] = "auto"
    """A hedged second request when no first token came within ``first_token_timeout_s``.
    "auto": for a remote provider only.  A server on this machine (the embedded one,
    Ollama, anything on loopback) is slow because its CPU is busy computing the answer, and
    a second request would halve what each gets (docs/decisions/0031)."""
    rewarm: Literal["auto", "on", "off"] = "auto"
    """Warm-ups after a cancel and every idle period, so a request never pays a TCP/TLS set-up.
    "auto": for a remote provider only; a loopback connection costs nothing to open, and a
    warm-up there would queue on the model's CPU behind the answer."""


class PromptConfig(_Section):
    resume_file: str | None = None
    job_description_file: str | None = None
    system_prompt: str | None = None
    """None = the built-in prompt (short, speakable, first person, bullets first)."""


class UiConfig(_Section):
    stay_on_top: bool = False
    large_font: bool = False
    theme: Literal["system", "light", "dark"] = "system"


class HotkeyConfig(_Section):
    """Ctrl+Shift+<letter>: no keyboard layout types a character with it on any OS (Windows
    sends AltGr as Ctrl+Alt, so Ctrl+Alt+A was AltGr+A, ą in Polish)."""

    toggle_low_latency: str = "ctrl+shift+l"
    answer_now: str = "ctrl+shift+a"
    show_hide: str = "ctrl+shift+h"
    capture_region: str = "ctrl+shift+y"
    """Freeze the screens and drag a region to read (the question on the screen)."""
    capture_again: str = "ctrl+shift+g"
    """Capture the last region again (a problem that scrolls)."""


class ScreenConfig(_Section):
    """The question on the screen: captured regions read on this machine."""

    send_image: bool = False
    """Send the captures' images to the endpoint as well as their text (a vision-capable
    model; the image leaves this machine).  A model that refuses images gets the text."""
    keep_images: bool = False
    """Keep the captures' images (PNG, readable by you alone) beside the session file.  Off:
    a capture may show other people's data (a chat, a colleague's code, a shared screen), so
    the session file keeps only the text you asked; the images are kept only if you turn
    this on."""
    max_captures: int = Field(default=5, ge=1, le=5)
    """Captures queued into one question."""
    language: Literal["en", "zh"] = "en"
    """zh keeps Chinese punctuation as read (en writes ASCII punctuation)."""


class Price(_Section):
    input_per_mtok: float = Field(ge=0)
    cached_input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


def _default_prices() -> dict[str, Price]:
    return {
        "gpt-4o-mini": Price(input_per_mtok=0.15, cached_input_per_mtok=0.075, output_per_mtok=0.6),
        "gpt-4o": Price(input_per_mtok=2.5, cached_input_per_mtok=1.25, output_per_mtok=10.0),
        "gpt-4.1-mini": Price(input_per_mtok=0.4, cached_input_per_mtok=0.1, output_per_mtok=1.6),
        "gpt-4.1-nano": Price(input_per_mtok=0.1, cached_input_per_mtok=0.025, output_per_mtok=0.4),
    }


class Settings(_Section):
    audio: AudioConfig = Field(default_factory=AudioConfig)
    vad: VadConfig = Field(default_factory=VadConfig)
    asr: AsrConfig = Field(default_factory=AsrConfig)
    turns: TurnConfig = Field(default_factory=TurnConfig)
    answer: AnswerConfig = Field(default_factory=AnswerConfig)
    llm: LlmConfig = Field(default_factory=LlmConfig)
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    ui: UiConfig = Field(default_factory=UiConfig)
    hotkeys: HotkeyConfig = Field(default_factory=HotkeyConfig)
    screen: ScreenConfig = Field(default_factory=ScreenConfig)
    prices: dict[str, Price] = Field(default_factory=_default_prices)


# --- files ---------------------------------------------------------------------------


def config_dir() -> Path:
    return Path(os.environ.get("INTERVIEW_COPILOT_CONFIG_DIR") or platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))


def cache_dir() -> Path:
    """Rebuildable files (the assembled multilingual Whisper model): safe to delete."""
    return Path(os.environ.get("INTERVIEW_COPILOT_CACHE_DIR") or platformdirs.user_cache_dir(APP_NAME))


def config_path() -> Path:
    return config_dir() / "settings.toml"


def load_settings(path: Path | None = None) -> tuple[Settings, list[ConfigProblem]]:
    """Read settings, keeping every valid value and dropping every invalid one alone.

    A file that cannot be read or is not TOML at all is one problem and yields all
    defaults; otherwise each wrong value is one problem, with the line it is on, and falls
    back alone (:mod:`app.core.settings_file`): a list's bad item leaves the list, every
    other setting stays.
    """
    path = path or config_path()
    if not path.exists():
        return Settings(), []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
        raw = tomllib.loads(text)
    except OSError as exc:
        return Settings(), [ConfigProblem(path, None, "(file)", f"cannot be read: {exc.strerror or exc}")]
    except (tomllib.TOMLDecodeError, RecursionError) as exc:  # nesting deeper than the parser's stack
        return Settings(), [ConfigProblem(path, _toml_error_line(exc), "(file)", f"not valid TOML: {exc}")]
    problems: list[ConfigProblem] = []
    where = KeyLines(text)
    raw = _migrate(raw, where, path, problems)
    return prune_invalid(Settings, raw, where, path, problems), problems


_OLD_WORD_KEYS = {
    ("turns", "end_words"): "end_words", ("turns", "final_particles"): "final_particles",
    ("turns", "question_words"): "question_words", ("turns", "thinking_words"): "thinking_words",
    ("answer", "filler_words"): "fillers"}
"""Word lists of before ``[turns.words.LANG]``: one table per list, languages inside."""
_RETIRED = {("turns", "policy"): "signals", ("answer", "reuse_rule"): "exact",
            ("answer", "fuzzy_threshold"): None, ("turns", "speculate_min_question_chars"): None}
"""Switches of the benchmark's baselines, gone from the app, and the value the app itself
wrote (a file saved by the settings dialog holds them): any other value is reported."""


def _migrate(raw: dict[str, Any], where: KeyLines, path: Path,
             problems: list[ConfigProblem]) -> dict[str, Any]:
    """Read files written before the settings moved: old word lists become
    ``[turns.words.LANG]`` lists (a list given for some languages had none for the others,
    so they get empty lists); retired switches are dropped, said when set."""
    data: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    for (section, key), default in _RETIRED.items():
        table = data.get(section)
        if isinstance(table, dict) and key in table:
            value = table.pop(key)
            if default is not None and value != default:
                problems.append(ConfigProblem(
                    path, where.line((section, key)), f"{section}.{key}",
                    f"{value!r} was a benchmark baseline's switch and is no longer a setting; ignored"))
    words: dict[str, dict[str, Any]] = {}
    for (section, key), name in _OLD_WORD_KEYS.items():
        table = data.get(section)
        if not isinstance(table, dict) or key not in table:
            continue
        lists = table.pop(key)
        if not isinstance(lists, dict):
            problems.append(ConfigProblem(path, where.line((section, key)), f"{section}.{key}",
                                          "expected a table of lists by language"))
            continue
        for lang in {*DEFAULT_WORDS, *lists}:
            words.setdefault(lang, {})[name] = lists.get(lang, [])
    if words:
        turns = data.setdefault("turns", {})
        if isinstance(turns, dict):
            given = turns.get("words")
            for lang, lists in (given.items() if isinstance(given, dict) else ()):
                if isinstance(lists, dict):
                    words.setdefault(lang, {}).update(lists)  # the new tables win
            turns["words"] = words
    return data


def _toml_error_line(exc: Exception) -> int | None:
    match = re.search(r"line (\d+)", str(exc))
    return int(match.group(1)) if match else None


def save_settings(settings: Settings, path: Path | None = None, *, asked: int | None = None) -> Path:
    """Write settings as TOML (atomic replace, readable by the user alone: it says where
    the user's LLM lives); the API key is never part of it.

    ``tomli_w`` escapes whatever a user can type (quotes, backslashes, ``\r\n``, tabs,
    emoji), so the file always reads back to the same settings.

    Saves are serialised, and the last one asked for wins: ``asked`` is when it was asked
    (:func:`save_ticket`, taken before handing the save to a thread; now by default), and
    a save that reaches the file after a later one has landed is dropped, so a slow
    background save never puts back older settings.  Only the app's own settings folder
    is made 0700: the folder of a ``--config`` file elsewhere (``$HOME``) keeps its mode.
    """
    asked = save_ticket() if asked is None else asked
    path = path or config_path()
    text = tomli_w.dumps(settings.model_dump(mode="json", exclude_none=True))
    with _SAVING:
        key = os.path.abspath(path)
        if _LANDED.get(key, -1) > asked:
            return path  # a later save is on disk already
        if path.parent == config_dir():
            private_dir(path.parent)
        else:
            make_dirs(path.parent)  # the user's folder: created 0700 if missing, else left alone
        write_private_text(path, text)
        _LANDED[key] = asked
    return path


_SAVING = threading.Lock()
_LANDED: dict[str, int] = {}
"""The ticket of the newest save on disk, by the file's absolute path."""
_TICKETS = itertools.count()


def save_ticket() -> int:
    """A number that orders saves by when they were asked for (``next`` on a count is
    atomic under the GIL)."""
    return next(_TICKETS)
