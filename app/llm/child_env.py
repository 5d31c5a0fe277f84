"""The embedded server's environment: the run's credential in, everything that would
reconfigure the server out.

``llama_cpp.server`` reads its settings with pydantic-settings, without a prefix and in
any case: every field name is also an environment variable (``HOST``, ``PORT``,
``API_KEY``, ``MODEL``, ``ROOT_PATH``, ``SSL_KEYFILE``…), and ``CONFIG_FILE`` replaces them
all with a file.  With ``HOST=0.0.0.0 PORT=8080`` exported for some other program, a
headless run's server listened on every interface, without a credential.  So the child
is started with those names dropped (:func:`server_environment`, in the app), and drops
them again itself from the settings classes it actually loaded
(:func:`scrub`, in the child: a newer llama-cpp-python's new field included).

Design notes: decision 0039.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

KEY_ENV = "INTERVIEW_COPILOT_SERVER_KEY"
"""The run's credential, from :class:`app.llm.local_server.LocalServer` to its child."""

SERVER_SETTINGS = frozenset({
    # ServerSettings
    "host", "port", "ssl_keyfile", "ssl_certfile", "api_key", "interrupt_requests", "disable_ping_events",
    "root_path",
    # ConfigFileSettings, and the file itself (read by __main__ and create_app)
    "models", "config_file",
    # ModelSettings
    "model", "model_alias", "n_gpu_layers", "split_mode", "main_gpu", "tensor_split", "vocab_only",
    "use_mmap", "use_mlock", "kv_overrides", "rpc_servers", "seed", "n_ctx", "n_batch", "n_ubatch",
    "n_threads", "n_threads_batch", "rope_scaling_type", "rope_freq_base", "rope_freq_scale",
    "yarn_ext_factor", "yarn_attn_factor", "yarn_beta_fast", "yarn_beta_slow", "yarn_orig_ctx", "mul_mat_q",
    "logits_all", "embedding", "offload_kqv", "flash_attn", "last_n_tokens_size", "lora_base", "lora_path",
    "numa", "chat_format", "chat_template_kwargs", "clip_model_path", "cache", "cache_type", "cache_size",
    "hf_tokenizer_config_path", "hf_pretrained_model_name_or_path", "hf_model_repo_id", "draft_model",
    "draft_model_num_pred_tokens", "type_k", "type_v", "verbose",
    # uvicorn's Config: more workers (which cannot serve an app object: it exits), trusted proxies
    "web_concurrency", "forwarded_allow_ips",
})
"""Every environment variable llama_cpp.server 0.3.x and the uvicorn under it read, lowercased
(the fields of ``Settings`` and ``ConfigFileSettings``; a test checks the installed version's)."""


def server_environment(key: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: this process's (or ``environ``) without :data:`SERVER_SETTINGS`,
    with ``key`` in :data:`KEY_ENV`."""
    source = os.environ if environ is None else environ
    env = {name: value for name, value in source.items()
           if name.lower() not in SERVER_SETTINGS and name.upper() != KEY_ENV}
    env[KEY_ENV] = key
    return env


def settings_names(*classes: Any) -> frozenset[str]:
    """The lowercased environment names pydantic-settings ``classes`` read (prefix + field)."""
    names: set[str] = set()
    for cls in classes:
        prefix = str(cls.model_config.get("env_prefix") or "")
        names.update(f"{prefix}{field}".lower() for field in cls.model_fields)
    return frozenset(names)


def scrub(environ: MutableMapping[str, str], names: Iterable[str] = SERVER_SETTINGS) -> None:
    """In the child: drop ``names`` (any case) from ``environ``, before a settings class reads it."""
    drop = {name.lower() for name in names}
    for name in [n for n in environ if n.lower() in drop]:
        del environ[name]
