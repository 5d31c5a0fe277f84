"""``doctor`` against the test server: passes, a bad key, dead and silent endpoints, buffering."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import socket
import statistics
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from app.audio import AudioFrame
from app.frontends import doctor
from app.frontends.doctor import (
    Arrival,
    CheckResult,
    DoctorOptions,
    Target,
    analyse_arrivals,
    check_audio_devices,
    check_buffering,
    check_input_level,
    check_request_timing,
    format_result,
    run_doctor,
)
from devtools.fake_server import FakeServer, Profile

KEY = "sk-doctor-test-123456"
MODEL = "gpt-4o-mini"
STREAMING = Profile(queue_delay=0.005, ttft=0.02, tokens_per_s=200.0, answer_tokens=40)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(STREAMING, api_key=KEY) as s:
        yield s


def run_json(argv: list[str]) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    rc = run_doctor(["--json", "--skip", "audio,asr", "--no-local", *argv], out=out)
    return rc, json.loads(out.getvalue())


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: c["status"] for c in report["checks"]}


def check(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["name"] == name)


# --- whole runs ---------------------------------------------------------------------------------


def test_healthy_endpoint_passes(server: FakeServer) -> None:
    rc, report = run_json(["--base-url", server.base_url, "--api-key", KEY, "--model", MODEL])
    assert rc == 0 and report["ok"] is True
    assert statuses(report) == {"endpoint": "pass", "request timing": "pass", "http/2": "skip",
                                "stream buffering": "pass", "prompt cache": "pass", "model": "pass"}
    timing = check(report, "request timing")["data"]["requests"]
    assert timing[0]["reused"] is False and timing[1]["reused"] is True and timing[2]["reused"] is True
    model = check(report, "model")  # which model answers, with the timing check's own figure
    assert model["detail"].startswith(f"answers from {MODEL} from the endpoint at {server.base_url}")
    assert model["data"]["first_token_s"] == statistics.median(t["first_token_s"] for t in timing)
    assert check(report, "prompt cache")["data"]["cached_tokens"] >= 1024
    assert KEY not in json.dumps(report)


def test_rejected_key_fails_with_fix_and_skips_the_rest(server: FakeServer) -> None:
    """One request, rejected (401), and nothing after it: no re-send of a rejected key, no later
    check (their requests would show on the server)."""
    rc, report = run_json(["--base-url", server.base_url, "--api-key", "sk-wrong-999999",
                           "--model", MODEL])
    assert rc == 1
    endpoint = check(report, "endpoint")
    assert endpoint["status"] == "fail" and endpoint["data"]["error"] == "auth"
    assert "key" in endpoint["fix"].lower()
    assert "sk-wrong-999999" not in json.dumps(report)
    assert {s for n, s in statuses(report).items() if n != "endpoint"} == {"skip"}
    assert [(r.method, r.path, r.status) for r in server.requests()] == [("GET", "/v1/models", 401)]


def test_unknown_model_fails(server: FakeServer) -> None:
    rc, report = run_json(["--base-url", server.base_url, "--api-key", KEY, "--model", "gpt-9"])
    assert rc == 1
    endpoint = check(report, "endpoint")
    assert endpoint["status"] == "fail" and "gpt-4o-mini" in endpoint["detail"]
    assert "--model" in endpoint["fix"]


def test_dead_endpoint_is_reported_as_refused() -> None:
    """A closed port refuses at once: said as refused (a network error), not waited out
    as an endpoint that does not answer."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    rc, report = run_json(["--base-url", f"http://127.0.0.1:{port}/v1", "--api-key", KEY])
    assert rc == 1
    endpoint = check(report, "endpoint")
    assert endpoint["status"] == "fail" and "refused" in endpoint["detail"]
    assert endpoint["data"]["error"] == "network" and "not answering" not in endpoint["detail"]
    assert "server is running" in endpoint["fix"]


def test_silent_endpoint_does_not_hang() -> None:
    """A server that accepts and never answers: one connection, one request, ended by the
    client's own time-out (the detail names it), not by the 45 s check deadline or never."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        rc, report = run_json(["--base-url", f"http://127.0.0.1:{sock.getsockname()[1]}/v1",
                               "--api-key", KEY, "--timeout", "1"])
    finally:
        stop.set()
        thread.join()
        sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            while True:  # any connection the thread had not accepted yet is counted too
                held.append(sock.accept()[0])
        for conn in held:
            conn.close()
        sock.close()
    assert rc == 1
    endpoint = check(report, "endpoint")
    assert endpoint["status"] == "fail" and endpoint["data"]["error"] == "not_answering"
    assert "is not answering" in endpoint["detail"] and endpoint["fix"]
    assert f"within {DoctorOptions().connect_timeout_s:g} s" in endpoint["detail"]
    assert len(held) == 1  # one attempt: not re-sent on the time-out


def test_no_endpoint_and_no_local_is_a_skip_with_a_note(monkeypatch: pytest.MonkeyPatch,
                                                        isolated_dirs: object) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "COPILOT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("app.llm.endpoint.get_api_key", lambda url, explicit=None: explicit)
    rc, report = run_json([])
    assert rc == 0
    assert statuses(report) == {"endpoint": "skip"}
    assert "--base-url" in check(report, "endpoint")["detail"]


def test_no_endpoint_on_a_cpu_llama_cpp_cannot_run_says_so(monkeypatch: pytest.MonkeyPatch,
                                                           isolated_dirs: object) -> None:
    from app.platform import bundled

    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "COPILOT_MODEL", bundled.SKIP_CPU_CHECK_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("app.llm.endpoint.get_api_key", lambda url, explicit=None: explicit)
    monkeypatch.setattr(bundled, "cpu_flags", lambda: frozenset({"sse3", "ssse3", "sse4_2", "avx"}))
    monkeypatch.setattr(bundled, "machine", lambda: "x86_64")
    out = io.StringIO()
    rc = run_doctor(["--json", "--skip", "audio,asr"], out=out)  # the local LLM allowed, not started
    report = json.loads(out.getvalue())
    assert rc == 0 and statuses(report) == {"endpoint": "skip"}
    assert "processor lacks AVX2" in check(report, "endpoint")["detail"]


def test_text_output_has_fixes(server: FakeServer) -> None:
    out = io.StringIO()
    rc = run_doctor(["--skip", "audio,asr", "--base-url", server.base_url, "--api-key", "bad-key-000",
                     "--model", MODEL], out=out)
    text = out.getvalue()
    assert rc == 1
    assert "FAIL  endpoint" in text and "fix: set a valid key" in text
    assert "1 failed" in text


CHECK_KEYS = ["name", "status", "detail", "fix", "data", "seconds"]
REQUEST_KEYS = ["connect_s", "tls_s", "headers_s", "first_byte_s", "first_token_s", "total_s", "http_version",
                "reused"]
LLM_DATA_KEYS = {
    "endpoint": ["base_url", "model", "models", "start_s"],
    "request timing": ["requests"],
    "http/2": [],
    "stream buffering": ["events", "reads", "bursts", "big_burst_byte_share", "largest_burst_byte_share",
                         "spread_s", "buffered", "conclusive", "first_event_s"],
    "prompt cache": ["prompt_tokens", "cached_tokens"],
    "model": ["model", "label", "first_token_s"],
}


def test_the_json_report_keeps_its_shape(server: FakeServer) -> None:
    """``doctor --json`` is what bug reports carry and scripts read: its keys, their order,
    the checks' order and the values' types stay as they are."""
    out = io.StringIO()
    run_doctor(["--json", "--skip", "audio,asr", "--no-local", "--base-url", server.base_url,
                "--api-key", KEY, "--model", MODEL], out=out)
    text = out.getvalue()
    assert text.startswith('{\n "ok": true,\n "checks": [\n  {\n   "name": "endpoint",')  # indent=1
    assert text.endswith("}\n")
    report = json.loads(text)
    assert list(report) == ["ok", "checks"]
    assert [c["name"] for c in report["checks"]] == list(LLM_DATA_KEYS)
    for c in report["checks"]:
        assert list(c) == CHECK_KEYS and list(c["data"]) == LLM_DATA_KEYS[c["name"]], c
        assert [type(c[k]) for k in CHECK_KEYS] == [str, str, str, str, dict, float], c
    for row in check(report, "request timing")["data"]["requests"]:
        assert list(row) == REQUEST_KEYS and isinstance(row["reused"], bool)

    out = io.StringIO()  # the local groups, on whatever inputs this machine has
    run_doctor(["--json", "--skip", "asr,llm", "--listen", "0.1"], out=out)
    local = json.loads(out.getvalue())["checks"]
    assert [c["name"] for c in local] == ["audio devices", "input level"]
    assert all(list(c) == CHECK_KEYS for c in local)


@pytest.mark.parametrize("argv", [["doctor", "--bogus"], ["doctor", "--json", "--bogus"]])
def test_an_unknown_flag_is_refused_with_the_usage(argv: list[str],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from app.frontends.cli import main

    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: interview-copilot doctor") and "unrecognized arguments: --bogus" in err


def test_credentials_in_the_base_url_are_never_printed() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://alice:pw-SECRET-1@127.0.0.1:{port}/v1?token=tok-SECRET-2"
    for argv in (["--json"], []):
        out = io.StringIO()
        rc = run_doctor([*argv, "--skip", "audio,asr", "--no-local", "--base-url", url,
                         "--api-key", "relay-key-SECRET-3"], out=out)
        assert rc == 1
        assert "SECRET" not in out.getvalue() and "alice" not in out.getvalue()
        assert f"127.0.0.1:{port}" in out.getvalue()


# --- single checks -------------------------------------------------------------------------------


def test_closed_connections_are_reported() -> None:
    """A server with keep-alive off: every request reconnects."""
    with FakeServer(Profile(ttft=0.01, tokens_per_s=0, answer_tokens=4, keep_alive=False),
                    api_key=KEY) as s:
        result = asyncio.run(check_request_timing(Target(s.base_url, KEY, MODEL), DoctorOptions()))
    assert result.status == "warn"
    assert "NOT reused" in result.detail and "keep-alive" in result.fix


def test_audio_device_listing() -> None:
    none = check_audio_devices(lambda: [])
    assert none.status == "warn" and "--device" in none.fix and "--list-devices" in none.fix

    def broken() -> list[object]:
        raise OSError("PortAudio library not found")

    assert check_audio_devices(broken).status == "warn"


class _FakeSource:
    def __init__(self, amplitude: int) -> None:
        self.name = "Monitor of Built-in Audio"
        self._amplitude = amplitude
        self._stop = threading.Event()

    def start(self, on_frame: Any, on_error: Any) -> None:
        def run() -> None:
            t = 0.0
            while not self._stop.wait(0.03):
                samples = (np.sin(np.arange(480) / 5.0) * self._amplitude).astype(np.int16)
                on_frame(AudioFrame(t, samples))
                t += 0.03

        threading.Thread(target=run, daemon=True).start()

    def stop(self) -> None:
        self._stop.set()


@pytest.mark.parametrize(("platform", "exact_zeros", "named"),
                         [("darwin", True, True), ("darwin", False, False), ("linux", True, False),
                          ("win32", True, False)])
def test_a_microphone_of_exact_zeros_on_macos_names_the_permission(
        platform: str, exact_zeros: bool, named: bool) -> None:
    from app.frontends.doctor.input_level import _silent_microphone_fix

    fix = _silent_microphone_fix(exact_zeros=exact_zeros, platform=platform)
    assert ("Privacy & Security → Microphone" in fix) == named
    assert named or "unmute the microphone" in fix


def test_a_silent_microphone_gets_the_microphone_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    microphone = _FakeSource(0)
    microphone.name = "MacBook Pro Microphone"
    monkeypatch.setattr("app.audio.open_source", lambda spec, clock, **_: microphone)
    result = check_input_level("MacBook Pro Microphone", 0.3)
    assert result.status == "warn" and "digital silence" in result.detail
    from app.frontends.doctor.input_level import _silent_microphone_fix

    assert result.fix == _silent_microphone_fix(exact_zeros=True)


@pytest.mark.parametrize(("amplitude", "status"), [(0, "warn"), (8000, "pass")])
def test_input_level(monkeypatch: pytest.MonkeyPatch, amplitude: int, status: str) -> None:
    monkeypatch.setattr("app.audio.open_source", lambda spec, clock, **_: _FakeSource(amplitude))
    result = check_input_level(None, 0.3, loopback=True)
    assert result.status == status, result.detail
    if status == "warn":
        assert "digital silence" in result.detail and "play something" in result.fix
    else:
        assert result.data["peak_dbfs"] > -20


def test_asr_check_decodes_the_demo_clip() -> None:
    result = doctor.check_asr()
    assert result.status in ("pass", "warn"), result.detail
    assert "interested" in result.data["text"].lower()
    assert result.data["load_s"] >= 0 and result.data["decode_s"] > 0


# --- buffering analysis ---------------------------------------------------------------------------


def spread(n: int, every: float, start: float = 0.2, size: int = 240) -> list[Arrival]:
    return [Arrival(start + i * every, size, 1) for i in range(n)]


def test_streamed_tokens_are_not_buffered() -> None:
    stats = analyse_arrivals(spread(60, 0.02))
    assert not stats.buffered and stats.conclusive and stats.bursts == 60


def test_fast_provider_with_coalesced_pairs_is_not_buffered() -> None:
    """500 tok/s: reads sometimes carry two events; still spread out."""
    arrivals = [Arrival(0.2 + i * 0.002, 480 if i % 3 == 0 else 240, 2 if i % 3 == 0 else 1)
                for i in range(60)]
    assert not analyse_arrivals(arrivals).buffered


def test_whole_answer_in_one_lump_is_buffered() -> None:
    stats = analyse_arrivals([Arrival(1.4, 14000, 60)])
    assert stats.buffered and stats.largest_burst_byte_share == 1.0


def test_buffer_sized_lumps_are_buffered() -> None:
    """nginx-style 4 KiB flushes: a few reads of ~16 events each."""
    arrivals = [Arrival(0.5 + i * 0.3, 4096, 16) for i in range(4)]
    stats = analyse_arrivals(arrivals)
    assert stats.buffered and stats.bursts == 4


def test_reads_split_from_one_flush_count_as_one_burst() -> None:
    arrivals = [Arrival(1.0, 1000, 3), Arrival(1.0005, 1000, 3), Arrival(1.001, 1000, 4)]
    stats = analyse_arrivals(arrivals)
    assert stats.bursts == 1 and stats.reads == 3
    assert stats.buffered and stats.big_burst_byte_share == 1.0


def test_short_answers_are_inconclusive() -> None:
    stats = analyse_arrivals([Arrival(0.3, 900, 3)])
    assert not stats.conclusive and not stats.buffered


def test_buffering_check_words_the_verdict() -> None:
    target = Target("http://127.0.0.1:1/v1", None, MODEL)

    async def lumpy() -> list[Arrival]:
        return [Arrival(0.9, 12000, 50)]

    async def smooth() -> list[Arrival]:
        return spread(50, 0.01)

    flagged = asyncio.run(check_buffering(target, DoctorOptions(), lumpy))
    assert flagged.status == "warn" and "proxy_buffering off" in flagged.fix
    assert asyncio.run(check_buffering(target, DoctorOptions(), smooth)).status == "pass"
    assert "fix:" in format_result(flagged)
    assert "fix:" not in format_result(CheckResult("x", "pass", "fine", "never shown"))
