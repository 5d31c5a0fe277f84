"""A CPU that cannot run the llama.cpp build never loads it: one sentence says so, and captions
and a remote LLM keep working (app/platform/bundled.py's check, fed fake CPU-flag readers).

The last test holds the list of required features to the installed llama.cpp itself: what it
reports it was compiled for must all be on the list the check asks the CPU for.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path

import pytest

from app.asr.decoder import WhisperDecoder
from app.core.config import Settings
from app.core.events import AnswerDoneEvent, Event, FinalEvent, StatusEvent
from app.llm.endpoint import LlmEndpoint
from app.llm.errors import LlmError
from app.llm.local_server import LocalServer
from app.platform import bundled
from app.session.session import Session, Sources
from app.turns.words import WordsScorer, WordsUnavailable
from devtools.fake_server import FakeServer, Profile

DEMO = Path(__file__).resolve().parents[2] / "assets" / "demo.wav"
SANDY_BRIDGE = frozenset("fpu sse sse2 sse3 ssse3 sse4_1 sse4_2 popcnt avx aes".split())
"""A 2011 Core i7: AVX, but no AVX2, FMA, F16C or BMI2."""
HASWELL = SANDY_BRIDGE | {"avx2", "fma", "f16c", "bmi2"}


@pytest.fixture
def old_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundled, "cpu_flags", lambda: SANDY_BRIDGE)
    monkeypatch.setattr(bundled, "machine", lambda: "x86_64")
    monkeypatch.delenv(bundled.SKIP_CPU_CHECK_ENV, raising=False)


def test_the_missing_features_are_named_in_one_sentence() -> None:
    assert bundled.missing_cpu_features(lambda: SANDY_BRIDGE, "x86_64") == ["avx2", "bmi2", "fma", "f16c"]
    sentence = bundled.cpu_problem(lambda: SANDY_BRIDGE, "AMD64")
    assert sentence is not None and sentence.count(".") <= 1
    assert "lacks AVX2, BMI2, FMA, F16C" in sentence and "captions" in sentence


def test_a_cpu_with_every_feature_arm64_or_an_unknown_cpu_is_not_blocked() -> None:
    assert bundled.cpu_problem(lambda: HASWELL, "x86_64") is None
    assert bundled.cpu_problem(lambda: frozenset(), "arm64") is None  # Apple silicon
    assert bundled.cpu_problem(lambda: None, "x86_64") is None  # cannot tell: no guess


def test_someone_who_built_for_their_own_cpu_can_skip_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bundled.SKIP_CPU_CHECK_ENV, "1")
    assert bundled.cpu_problem(lambda: SANDY_BRIDGE, "x86_64") is None


def test_linux_cpuinfo_flags_are_read(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Old\nflags\t\t: fpu pni ssse3 sse4_2 avx\n\n"
                       "processor\t: 1\nflags\t\t: fpu pni ssse3 sse4_2 avx\n")
    flags = bundled._linux_flags(cpuinfo)
    assert flags is not None and {"sse3", "ssse3", "sse4_2", "avx"} <= flags and "avx2" not in flags
    assert bundled._linux_flags(tmp_path / "missing") is None


class FakeKernel32:
    def __init__(self, present: set[int]) -> None:
        self.present = present
        self.asked: list[int] = []

    def IsProcessorFeaturePresent(self, feature: int) -> int:
        self.asked.append(feature)
        return int(feature in self.present)


def test_windows_features_come_from_is_processor_feature_present() -> None:
    old = FakeKernel32({13, 36, 37, 38, 39})  # PF_SSE3 … PF_AVX, no PF_AVX2 (40)
    flags = bundled._windows_flags(old)
    assert flags is not None and "avx" in flags and "avx2" not in flags and "fma" not in flags
    assert 40 in old.asked
    assert bundled.missing_cpu_features(lambda: flags, "AMD64") == ["avx2", "bmi2", "fma", "f16c"]
    new = bundled._windows_flags(FakeKernel32({13, 36, 37, 38, 39, 40}))
    assert new is not None and bundled.missing_cpu_features(lambda: new, "AMD64") == []


def test_a_windows_that_answers_false_to_everything_is_unknown_not_a_cpu_without_avx2() -> None:
    """Windows before 10 2004 (and Server/LTSC 2019) answers FALSE to PF_* 36-40 whatever the
    CPU: that is "cannot tell", which must not take the local model away."""
    for answers in (FakeKernel32(set()), FakeKernel32({13})):  # nothing; only the old PF_SSE3
        assert bundled._windows_flags(answers) is None
        assert 40 in answers.asked
        assert bundled.cpu_problem(lambda answers=answers: bundled._windows_flags(answers), "AMD64") is None


HASWELL_NUMPY = {"MMX": True, "SSE": True, "SSE2": True, "SSE3": True, "SSSE3": True, "SSE41": True,
                 "SSE42": True, "POPCNT": True, "AVX": True, "F16C": True, "FMA3": True, "AVX2": True,
                 "BMI": True, "BMI2": True, "AVX512F": False, "NEON": False}
"""numpy's ``__cpu_features__`` on a Haswell (numpy 2.x names)."""
SANDY_BRIDGE_NUMPY = {**HASWELL_NUMPY, "F16C": False, "FMA3": False, "AVX2": False, "BMI": False,
                      "BMI2": False}


def test_numpy_asks_the_cpu_itself_and_its_names_become_ours() -> None:
    assert bundled._numpy_flags(HASWELL_NUMPY) == set(bundled.LLAMA_X86_FEATURES)
    assert bundled.cpu_problem(lambda: bundled._numpy_flags(HASWELL_NUMPY), "AMD64") is None
    sentence = bundled.cpu_problem(lambda: bundled._numpy_flags(SANDY_BRIDGE_NUMPY), "AMD64")
    assert sentence is not None and "lacks AVX2, BMI2, FMA, F16C" in sentence
    no_avx2 = bundled.cpu_problem(lambda: bundled._numpy_flags({**HASWELL_NUMPY, "AVX2": False}), "x86_64")
    assert no_avx2 is not None and "lacks AVX2" in no_avx2 and "BMI2" not in no_avx2


def test_a_numpy_without_a_bmi2_entry_takes_it_to_come_with_avx2() -> None:
    """numpy 1.26 reports no BMI2: every CPU with AVX2 has it.  A numpy that reports it is
    believed either way."""
    older = {k: v for k, v in HASWELL_NUMPY.items() if k not in ("BMI", "BMI2")}
    assert bundled.missing_cpu_features(lambda: bundled._numpy_flags(older), "x86_64") == []
    without = {**HASWELL_NUMPY, "BMI2": False}
    assert bundled.missing_cpu_features(lambda: bundled._numpy_flags(without), "x86_64") == ["bmi2"]


def test_numpy_is_asked_first_on_every_os_and_the_os_only_when_numpy_cannot_say(
        monkeypatch: pytest.MonkeyPatch) -> None:
    old_windows = FakeKernel32({13})
    monkeypatch.setattr(bundled, "_os_flags", lambda: bundled._windows_flags(old_windows))
    monkeypatch.setattr(bundled, "numpy_cpu_features", lambda: HASWELL_NUMPY)
    assert bundled.cpu_flags.__wrapped__() == bundled._numpy_flags(HASWELL_NUMPY)
    assert old_windows.asked == []  # numpy answered: Windows was not asked
    monkeypatch.setattr(bundled, "numpy_cpu_features", lambda: None)
    assert bundled.cpu_flags.__wrapped__() is None  # numpy cannot say, old Windows cannot either
    monkeypatch.setattr(bundled, "_os_flags", lambda: HASWELL)
    assert bundled.cpu_flags.__wrapped__() == HASWELL


@pytest.mark.skipif(not sys.platform.startswith("linux")
                    or bundled.machine().lower() not in bundled.X86_MACHINES,
                    reason="compares numpy with Linux's /proc/cpuinfo on x86")
def test_the_installed_numpy_agrees_with_linux_on_every_feature_the_check_asks_for() -> None:
    features = bundled.numpy_cpu_features()
    assert features is not None, "this numpy has no __cpu_features__: find where it moved"
    linux = bundled._linux_flags()
    assert linux is not None
    assert bundled._numpy_flags(features) == linux.intersection(bundled.LLAMA_X86_FEATURES)


def test_intel_mac_features_come_from_sysctl() -> None:
    answers = {"machdep.cpu.features": "FPU SSE3 SSSE3 SSE4.1 SSE4.2 AVX1.0 F16C FMA\n",
               "machdep.cpu.leaf7_features": "SMEP BMI1 AVX2 BMI2\n"}
    flags = bundled._macos_flags(answers.__getitem__)
    assert flags is not None and bundled.missing_cpu_features(lambda: flags, "x86_64") == []
    ivy = {**answers, "machdep.cpu.leaf7_features": "SMEP\n"}
    ivy_flags = bundled._macos_flags(ivy.__getitem__)
    assert ivy_flags is not None
    assert bundled.missing_cpu_features(lambda: ivy_flags, "x86_64") == ["avx2", "bmi2"]


@pytest.mark.usefixtures("old_cpu")
def test_on_an_old_cpu_nothing_loads_llama_cpp_and_each_part_says_why() -> None:
    assert not bundled.llama_cpp_installed()
    problem = bundled.llama_cpp_problem()
    assert problem is not None and "lacks AVX2" in problem
    with pytest.raises(WordsUnavailable, match="lacks AVX2"):
        WordsScorer()
    with pytest.raises(LlmError, match="lacks AVX2") as caught:
        LocalServer().start(timeout=5)
    assert caught.value.kind == "not_found" and not caught.value.retryable


@pytest.mark.slow
@pytest.mark.usefixtures("old_cpu")
def test_on_an_old_cpu_captions_and_a_remote_llm_keep_working(decoder: WhisperDecoder) -> None:
    events: list[Event] = []
    done = threading.Event()

    def seen(event: Event) -> None:
        events.append(event)
        if isinstance(event, AnswerDoneEvent):
            done.set()

    with FakeServer(Profile(answer_tokens=3), api_key="sk-good") as server:
        session = Session(Settings(), sources=Sources(DEMO, speed=4.0), decoder=decoder,
                          llm=LlmEndpoint(server.start(), "sk-good", "gpt-4o-mini", local=False))
        session.bus.subscribe(seen)
        try:
            session.start()
            assert done.wait(120), [e.name for e in events]
        finally:
            session.shutdown()
    assert any(isinstance(e, FinalEvent) and e.text.strip() for e in events)
    answers = [e for e in events if isinstance(e, AnswerDoneEvent)]
    assert answers[0].error is None and answers[0].text.strip()
    turns = [e.message for e in events if isinstance(e, StatusEvent) and e.stage == "turns"]
    assert any("words model unavailable: this computer's processor lacks AVX2" in m for m in turns), turns


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_the_installed_build_needs_nothing_the_check_does_not_ask_for() -> None:
    if bundled.machine().lower() not in bundled.X86_MACHINES:
        pytest.skip("the list is for x86-64 builds")
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode()
    compiled = {part.split("=")[0].strip() for part in info.replace("CPU :", "|").split("|")
                if part.strip().endswith("= 1")}
    names = {"SSE3": "sse3", "SSSE3": "ssse3", "AVX": "avx", "AVX2": "avx2", "F16C": "f16c", "FMA": "fma",
             "BMI2": "bmi2", "AVX_VNNI": "avx_vnni", "AVX512": "avx512f", "AVX512_VBMI": "avx512vbmi",
             "AVX512_VNNI": "avx512_vnni", "AVX512_BF16": "avx512_bf16", "AMX_INT8": "amx_int8"}
    instruction_sets = {names[c] for c in compiled if c in names}
    assert instruction_sets, info  # the report's format changed: update the parsing above
    assert instruction_sets <= set(bundled.LLAMA_X86_FEATURES), info
