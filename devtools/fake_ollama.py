"""A stand-in for a running Ollama's model listing (``GET /api/tags``), for tests.

It answers with the JSON shape Ollama itself sends (``{"models": [{"name", "model",
"modified_at", "size", "digest", "details": {...}}]}``), over a real socket, so the probe
in :mod:`app.llm.ollama` and the settings dialog are tested as they meet a real Ollama.
Anything else is a 404, as Ollama answers an unknown path.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


def tags_body(models: Sequence[str]) -> dict[str, Any]:
    """What ``ollama list`` would show for ``models``, in /api/tags's shape."""
    return {"models": [{
        "name": name,
        "model": name,
        "modified_at": "2026-11-30T10:12:03.512466+01:00",
        "size": 1_929_912_432,
        "digest": f"{i:064x}",
        "details": {"parent_model": "", "format": "gguf", "family": "qwen2", "families": ["qwen2"],
                    "parameter_size": "3.1B", "quantization_level": "Q4_K_M"},
    } for i, name in enumerate(models)]}


class FakeOllama:
    """``with FakeOllama(["qwen2.5:3b"]) as ollama:`` serves on ``ollama.host`` (loopback)."""

    def __init__(self, models: Sequence[str]) -> None:
        body = json.dumps(tags_body(models)).encode()
        self.requests: list[str] = []
        requests = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # http.server's naming
                requests.append(self.path)
                ok = self.path == "/api/tags"
                payload = body if ok else b"404 page not found"
                self.send_response(200 if ok else 404)
                self.send_header("Content-Type", "application/json; charset=utf-8" if ok else "text/plain")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # quiet in tests
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self._server.server_address[1]}"
        """What ``OLLAMA_HOST`` would say."""
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-ollama", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
