"""``interview-copilot doctor``: find where the latency (or the silence) comes from, in one run.

Users who saw an 800 ms answer delay had to trace every hop by hand — DNS, TLS, a relay's
queue, the model, a proxy buffering the stream — and the most common "it does nothing"
report is a loopback device that records digital silence.  Each check here measures one
of those hops on the user's own machine and endpoint and says pass/warn/fail with the
fix, so a bug report can start from ``doctor --json`` instead of guesses.

Design notes: decision 0039.
"""

from app.frontends.checks import CheckResult
from app.frontends.doctor.asr import check_asr
from app.frontends.doctor.audio_devices import check_audio_devices
from app.frontends.doctor.buffering import (
    BIG_BURST_EVENTS,
    BURST_GAP_S,
    Arrival,
    BufferingStats,
    analyse_arrivals,
    check_buffering,
    measure_arrivals,
)
from app.frontends.doctor.check import LlmCheck, LocalCheck, Run
from app.frontends.doctor.command import run_doctor
from app.frontends.doctor.endpoint import check_endpoint
from app.frontends.doctor.http_versions import check_http_versions
from app.frontends.doctor.input_level import SILENT_DBFS, check_input_level, level_stats
from app.frontends.doctor.llm_common import RELAY_RECIPE
from app.frontends.doctor.model_in_use import check_model_in_use
from app.frontends.doctor.options import DoctorOptions
from app.frontends.doctor.prompt_cache import CACHE_PREFIX_WORDS, cache_prefix, check_prompt_cache
from app.frontends.doctor.report import format_result, write_json, write_summary
from app.frontends.doctor.request_timing import check_request_timing
from app.frontends.doctor.runner import LLM_CHECKS, LOCAL_CHECKS, collect, run_llm_checks
from app.frontends.doctor.target import Target, resolve_target

__all__ = [
    "BIG_BURST_EVENTS", "BURST_GAP_S", "CACHE_PREFIX_WORDS", "LLM_CHECKS", "LOCAL_CHECKS", "RELAY_RECIPE",
    "SILENT_DBFS", "Arrival", "BufferingStats", "CheckResult", "DoctorOptions", "LlmCheck", "LocalCheck",
    "Run", "Target", "analyse_arrivals", "cache_prefix", "check_asr", "check_audio_devices",
    "check_buffering", "check_endpoint", "check_http_versions", "check_input_level", "check_model_in_use",
    "check_prompt_cache", "check_request_timing", "collect", "format_result", "level_stats",
    "measure_arrivals", "resolve_target", "run_doctor", "run_llm_checks", "write_json", "write_summary",
]
