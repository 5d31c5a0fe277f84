"""A server on this machine gets no hedge and no re-warm (issue 44, decision 0031).

A hedged second request against a CPU-bound local model (Ollama, the embedded server)
halves what each request gets, exactly while the answer is being computed; a warm-up
queues behind the answer.  "auto" keeps both for remote providers only.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from app.core.clock import SessionClock
from app.core.config import LlmConfig, Settings
from app.core.events import EventBus
from app.llm.client import Delta, LlmClient
from app.llm.endpoint import LlmEndpoint
from app.llm.loopback import remote_tactic
from app.session.llm_choice import LlmChoice
from devtools.fake_server import FakeServer, Profile


@pytest.mark.parametrize(("url", "local", "expected"), [
    ("https://api.openai.com/v1", False, True),
    ("https://relay.example/v1", False, True),
    ("http://127.0.0.1:11434/v1", False, False),  # Ollama
    ("http://localhost:1234/v1", False, False),  # LM Studio
    ("http://[::1]:8080/v1", False, False),
    ("", True, False),  # the embedded server, before its URL exists
    ("http://192.168.1.20:11434/v1", False, True),  # another machine's Ollama: a network between
])
def test_auto_means_remote_only(url: str, local: bool, expected: bool) -> None:
    assert remote_tactic("auto", url, local=local) is expected


@pytest.mark.parametrize("url", ["https://relay.example/v1", "http://127.0.0.1:11434/v1"])
def test_on_and_off_are_what_the_user_set(url: str) -> None:
    assert remote_tactic("on", url) is True
    assert remote_tactic("off", url) is False


def client_for(url: str, **llm: object) -> LlmClient:
    settings = Settings(llm=LlmConfig(first_token_timeout_s=1.0, timeout_s=10.0, **llm))  # type: ignore[arg-type]
    endpoint = LlmEndpoint(url, "k", "gpt-4o-mini", local=False)
    choice = LlmChoice(settings, endpoint, EventBus(), SessionClock(), answers=True,
                       on_model_failed=lambda message: None)
    return choice.make_client()


async def answer(client: LlmClient) -> str:
    text = ""
    messages = [{"role": "user", "content": "Why this role?"}]
    async with contextlib.aclosing(client.stream_chat(messages, max_tokens=50, temperature=0.0)) as stream:
        async for item in stream:
            if isinstance(item, Delta):
                text += item.text
    return text


@pytest.mark.parametrize(("hedge", "requests"), [("auto", 1), ("on", 2)])
def test_a_slow_first_token_on_loopback_is_waited_for_not_hedged(hedge: str, requests: int) -> None:
    """The first token comes after the first-token deadline: a remote provider is hedged
    (two requests, "on"), a loopback server is waited for (one request, "auto")."""
    with FakeServer(Profile(ttft=1.4, answer_tokens=4), api_key=None) as server:
        client = client_for(server.start(), hedge=hedge)

        async def main() -> str:
            try:
                return await answer(client)
            finally:
                await client.aclose()

        assert asyncio.run(main())
        assert len(server.chat_requests()) == requests


def test_a_loopback_server_gets_no_rewarm_a_remote_one_does() -> None:
    """The choice reaches the client: its warmer keeps connections warm only for a remote URL."""
    assert client_for("http://127.0.0.1:9/v1")._warmer.rewarm_idle is None
    assert client_for("https://relay.example/v1")._warmer.rewarm_idle is not None
    assert client_for("http://127.0.0.1:9/v1", rewarm="on")._warmer.rewarm_idle is not None
