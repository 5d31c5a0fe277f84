"""The recogniser hears the candidate's world: terms picked from the résumé, the job
description and the user's glossary steer Whisper, within bounds, and never come back
out of silence or room tone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from faster_whisper import WhisperModel
from pytestqt.qtbot import QtBot

from app.asr.decoder import Hypothesis, WhisperDecoder
from app.asr.glossary import MAX_PIECES, MAX_TERMS, pick_terms, prompt_text, rough_pieces
from app.asr.guards import echoes_terms, is_hallucination
from app.asr.loops import cut_repetition
from app.asr.multilingual import ensure_multilingual_model
from app.core.config import Settings
from app.core.events import FinalEvent
from app.core.text import words
from app.session.session import Session, SessionOptions, Sources
from devtools.bench.synth import pink_noise
from tests.speech import read_wav, synth

RESUME = """\
# Sam Rivera
sam.rivera@example.com - https://github.com/samrivera

Senior Platform Engineer, Lumenpay (2019-2024)
- Led the migration of 60 services from Nomad to Kubernetes.
- Moved the ledger from PostgreSQL to CockroachDB. Led the on-call rotation.
- Deployed with ArgoCD; wrote Python and Go services that talk gRPC.
"""
JOB = """\
Staff Engineer at Kestrel Robotics: you will run Skyforge, our fleet platform, on
Kubernetes. Senior engineers here lead incident reviews.
"""
TERMS = ["Kubernetes", "CockroachDB", "ArgoCD", "Lumenpay", "Nomad", "PostgreSQL", "Skyforge"]


def _said(term: str, text: str) -> bool:
    seq, said = words(term), words(text)
    return any(said[i:i + len(seq)] == seq for i in range(len(said) - len(seq) + 1))


# --- picking the terms ------------------------------------------------------------------


def test_rare_names_are_picked_and_ordinary_words_are_not(decoder: WhisperDecoder) -> None:
    terms = pick_terms([RESUME, JOB], pieces=decoder.pieces)
    for name in ("Kubernetes", "CockroachDB", "ArgoCD", "Lumenpay", "Nomad", "gRPC", "Skyforge", "Kestrel"):
        assert name in terms, terms
    # one piece to Whisper ("Python", "Go"), line-initial ("Led", "Moved"), title words
    # also written in lower case ("Senior"/"senior"), e-mail and web addresses
    for ordinary in ("Python", "Go", "Led", "Moved", "Senior", "Staff", "sam.rivera", "github.com"):
        assert not any(t.lower() == ordinary.lower() or ordinary in t for t in terms), (ordinary, terms)
    assert len({t.lower() for t in terms}) == len(terms)  # "Kubernetes" twice is one term


def test_a_name_that_only_opens_lines_must_be_rare_in_lower_case_too(decoder: WhisperDecoder) -> None:
    resume = ("Lumenpay - Senior Platform Engineer\n"
              "- Led the rollout. Designed the ledger.\nTidewatch: our pager.")
    terms = pick_terms([resume], pieces=decoder.pieces)
    assert set(terms) == {"Lumenpay", "Tidewatch"}, terms
    assert not {"Led", "Designed", "Senior", "Platform", "Engineer"} & set(terms), terms


def test_rarer_terms_come_first(decoder: WhisperDecoder) -> None:
    terms = pick_terms([RESUME, JOB], pieces=decoder.pieces)
    ranks = [min(decoder.pieces(t), 4) for t in terms]
    assert ranks == sorted(ranks, reverse=True), list(zip(terms, ranks, strict=True))


def test_the_users_glossary_comes_first_and_whole() -> None:
    terms = pick_terms([RESUME], ["Acme  Robotics", "星澜支付", "  ", "kubernetes"])
    assert terms[:2] == ["Acme Robotics", "星澜支付"]
    assert "Kubernetes" not in terms  # the user's spelling of it stands
    assert terms[2] == "kubernetes"


def test_the_list_is_bounded_in_terms_and_tokens() -> None:
    many = [f"Product{n}x" for n in range(200)]
    assert len(pick_terms([], many, pieces=lambda t: 1)) == MAX_TERMS
    long_names = [f"Supercalifragilistic{n}Database" for n in range(200)]
    chosen = pick_terms([], long_names)
    assert sum(rough_pieces(t) + 1 for t in chosen) <= MAX_PIECES < sum(
        rough_pieces(t) + 1 for t in long_names[: len(chosen) + 1])
    # equally rare: the first seen first
    assert pick_terms([" ".join(many)], pieces=lambda t: 2, limit=5) == many[:5]


def test_chinese_names_set_apart_are_candidates() -> None:
    """Whisper's byte-level pieces do not tell a rare Chinese word from a common one (a
    common character takes two), so a Chinese term is one the text sets apart as a name."""
    resume = ("2019-2024 鲸跃科技 资深后端工程师\n技能：分布式事务、灰度发布\n"
              "- 负责“星澜支付”的账务系统，日交易量三千万笔。\n"
              "- 从 MySQL 迁移到 达梦，负责 天枢 的调度平台和 玄武 的风控引擎。")
    terms = pick_terms([resume], pieces=lambda t: 2 * len(t))
    assert set(terms) == {"鲸跃科技", "分布式事务", "灰度发布", "星澜支付", "天枢", "玄武", "MySQL"}, terms
    # not: a heading or a bullet's first words (技能, 负责), a clause between commas
    # (日交易量三千万笔), a long spaced phrase (资深后端工程师, 的调度平台和), a run beside a
    # Latin word (迁移到)


def test_prompt_text_lists_the_terms() -> None:
    assert prompt_text(["CockroachDB", "ArgoCD"]) == "CockroachDB, ArgoCD."
    assert prompt_text(["星澜支付", "ArgoCD"], chinese=True) == "星澜支付、ArgoCD，"  # one sentence
    assert prompt_text([]) == ""


# --- the decoder takes them ---------------------------------------------------------------


def test_terms_steer_the_spelling_of_a_question(decoder: WhisperDecoder) -> None:
    """tiny.en writes "cockroach DB" for the database unaided; prompted with the résumé's
    terms it writes the name."""
    audio = read_wav(synth("Why did you move the ledger from PostgreSQL to CockroachDB?", "en-gb"))
    try:
        decoder.set_terms([])
        plain = decoder.decode(audio)
        decoder.set_terms(pick_terms([RESUME, JOB], pieces=decoder.pieces))
        steered = decoder.decode(audio)
    finally:
        decoder.set_terms([])
    assert not _said("CockroachDB", plain.text), plain.text
    assert _said("CockroachDB", steered.text), steered.text
    assert not is_hallucination(steered)
    assert "CockroachDB" in steered.prompted and plain.prompted == ()


def test_an_english_model_leaves_chinese_terms_out(decoder: WhisperDecoder) -> None:
    try:
        decoder.set_terms(["星澜支付", "ArgoCD", " "])
        assert decoder.terms == ("ArgoCD",)
    finally:
        decoder.set_terms([])


# --- never heard in silence ---------------------------------------------------------------


def _no_speech() -> dict[str, np.ndarray]:
    n = 4 * 16_000
    return {
        "silence": np.zeros(n, dtype=np.int16),
        "room tone -42 dBFS": pink_noise(4.0, -42.0, seed=3).astype(np.int16),
        "room tone -30 dBFS": pink_noise(4.0, -30.0, seed=4).astype(np.int16),
        "white noise -35 dBFS": (np.random.default_rng(5).standard_normal(n) * 32768 * 10 ** (-35 / 20)
                                 ).astype(np.int16),
    }


def _shown(decoder: WhisperDecoder, audio: np.ndarray) -> str:
    hyp = decoder.decode(audio)
    return "" if is_hallucination(hyp) else cut_repetition(hyp.text)


def test_silence_and_noise_with_the_glossary_yield_no_terms(decoder: WhisperDecoder) -> None:
    terms = pick_terms([RESUME, JOB], pieces=decoder.pieces)
    try:
        decoder.set_terms(terms)
        shown = {name: _shown(decoder, audio) for name, audio in _no_speech().items()}
    finally:
        decoder.set_terms([])
    assert not any(_said(t, text) for t in terms for text in shown.values()), shown


@pytest.fixture(scope="module")
def zh_decoder(tmp_path_factory: pytest.TempPathFactory) -> WhisperDecoder:
    folder = ensure_multilingual_model(tmp_path_factory.mktemp("cache") / "models")
    return WhisperDecoder(WhisperModel(str(folder), device="cpu", compute_type="int8", cpu_threads=2), "zh")


def test_chinese_silence_with_the_glossary_yields_no_terms_nor_the_prompt(zh_decoder: WhisperDecoder) -> None:
    """base says the glossary back over room tone ("鲸跃科技、星澜支付、达梦数据库、…"): the
    guards drop every such pass."""
    terms = ["鲸跃科技", "星澜支付", "达梦数据库", "CockroachDB", "ArgoCD"]
    zh_decoder.set_terms(terms)
    raw = [zh_decoder.decode(audio).text for audio in _no_speech().values()]
    assert any(sum(_said(t, text) for t in terms) >= 2 for text in raw), raw  # the echo is real
    shown = {name: _shown(zh_decoder, audio) for name, audio in _no_speech().items()}
    assert not any(_said(t, text) for t in terms for text in shown.values()), shown
    assert not any("普通话" in text for text in shown.values()), shown


def test_a_chinese_question_is_still_heard_with_the_glossary(zh_decoder: WhisperDecoder) -> None:
    zh_decoder.set_terms(["鲸跃科技", "星澜支付", "CockroachDB"])
    hyp = zh_decoder.decode(read_wav(Path(__file__).parents[1] / "data" / "zh-question.wav"))
    assert not is_hallucination(hyp) and "进程" in hyp.text, hyp.text


@pytest.mark.parametrize(("text", "echo"), [
    ("CockroachDB, ArgoCD, Kubernetes.", True),
    ("Kubernetes and Nomad", True),
    ("鲸跃科技、星澜支付。", True),
    ("Why did you move from PostgreSQL to CockroachDB?", False),
    ("Tell me about the migration from Nomad to Kubernetes.", False),
    ("Kubernetes?", False),  # one name alone may be a question; Whisper's own scores judge it
    ("星澜支付是怎么设计的？", False),
])
def test_the_glossary_said_back_is_an_echo(text: str, echo: bool) -> None:
    terms = ("CockroachDB", "ArgoCD", "Kubernetes", "Nomad", "PostgreSQL", "鲸跃科技", "星澜支付")
    assert echoes_terms(text, terms) is echo
    hyp = Hypothesis(text=text, no_speech_prob=0.1, avg_logprob=-0.3, compression_ratio=1.2, seconds=0.1,
                     prompted=terms)
    assert is_hallucination(hyp) is echo
    assert not is_hallucination(Hypothesis(text=text, no_speech_prob=0.1, avg_logprob=-0.3,
                                           compression_ratio=1.2, seconds=0.1))


# --- the session wires it ------------------------------------------------------------------


def test_a_session_steers_with_the_resume_and_the_users_glossary(decoder: WhisperDecoder,
                                                                  tmp_path: Path) -> None:
    resume = tmp_path / "resume.md"
    resume.write_text(RESUME, encoding="utf-8")
    settings = Settings()
    settings.prompt.resume_file = str(resume)
    settings.prompt.job_description_file = str(tmp_path / "missing.md")  # unreadable: skipped
    settings.asr.glossary = ["Tidewatch"]
    audio = synth("Why did you move the ledger from PostgreSQL to CockroachDB?", "en-gb")
    session = Session(settings, sources=Sources(audio, speed=2.0), options=SessionOptions(answers=False),
                      decoder=decoder)
    finals: list[FinalEvent] = []
    session.bus.subscribe(lambda e: finals.append(e) if isinstance(e, FinalEvent) else None)
    try:
        session.run_file()
        assert decoder.terms[0] == "Tidewatch" and "CockroachDB" in decoder.terms, decoder.terms
    finally:
        session.shutdown()
        decoder.set_terms([])
    assert finals and _said("CockroachDB", finals[-1].text), [f.text for f in finals]


# --- Settings → Audio & speech ------------------------------------------------------------


def test_the_settings_dialog_edits_the_glossary(qtbot: QtBot, tmp_path: Path) -> None:
    from app.ui.settings import SettingsDialog

    settings = Settings()
    settings.asr.glossary = ["CockroachDB", "Acme Robotics"]
    dialog = SettingsDialog(settings, tmp_path / "settings.toml")
    qtbot.addWidget(dialog)
    assert dialog.glossary.text() == "CockroachDB, Acme Robotics"
    dialog.glossary.setText("CockroachDB, Acme Robotics; ArgoCD，星澜支付、鲸跃科技, ,")
    assert dialog.collect().asr.glossary == ["CockroachDB", "Acme Robotics", "ArgoCD", "星澜支付", "鲸跃科技"]
    dialog.glossary.setText("")
    assert dialog.collect().asr.glossary == []


def test_the_glossary_is_read_from_settings_toml(tmp_path: Path) -> None:
    from app.core.config import load_settings

    path = tmp_path / "settings.toml"
    path.write_text('[asr]\nglossary = ["CockroachDB", "星澜支付"]\n', encoding="utf-8")
    settings, problems = load_settings(path)
    assert problems == [] and settings.asr.glossary == ["CockroachDB", "星澜支付"]
    path.write_text('[asr]\nglossary = "CockroachDB"\n', encoding="utf-8")  # not a list
    settings, problems = load_settings(path)
    assert settings.asr.glossary == [] and any("glossary" in str(p) for p in problems), problems
