"""The embedded local LLM: llama.cpp's OpenAI-compatible server running SmolLM2-135M,
or a GGUF file the user chose (``[llm] local_model``).

Without an API key the app still suggests answers, from a tiny model on the CPU.  It runs
as a child process rather than in-process so its GIL-heavy decoding never stalls audio
capture or the UI, so a crash in native code cannot take the app down, and so the rest
of the app talks to it exactly as to a cloud provider (same client, same code paths).

Known behaviour of llama-cpp-python's server: it sends no usage even with
``stream_options.include_usage`` (callers estimate it), and it serves one request at a
time.  ``interrupt_requests`` is off: with it on, any request arriving while an answer
streams — the next question's, even a ``GET /models`` (served under the same lock) —
ends that answer, and the demo's first answer was lost to the second question.  A
replaced guess needs no interrupt: the client closes it and the server stops at its
next token.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Self

import httpx2

from app.llm.bundle_server import llama_server_command
from app.llm.child_guard import spawn
from app.llm.errors import LlmError
from app.llm.gguf import LocalModelError, check_gguf
from app.platform.bundled import GGUF_NAME, cpu_problem, fast_model, llama_cpp_installed
from app.platform.cores import server_threads

MODEL_ALIAS = "smollm2-135m-instruct"
BUNDLED_N_CTX = 2048
"""The bundled model's context: its compact prompt keeps no history (app.prompt.builder)."""
CHOSEN_N_CTX = 8192
"""A chosen model's context: it gets the full prompt — résumé, job description and up to
8 turns of answers of up to 300 tokens, ~5k tokens at most — and 8k is what current small
models are trained for; more would only grow the KV cache (~1 GB at 8k for a 7B model)."""
BUNDLED_START_S = 60.0
CHOSEN_START_S = 180.0
"""How long a chosen model may take to come up: a 7B GGUF is ~4.5 GB, read cold from a
100 MB/s disk in ~45 s before the server answers, then its first evaluation; the bundled
100 MB model is up in seconds, so its 60 s only catches a server that is stuck."""
INSTALL_HINT = (
    "the embedded local LLM is not installed: pip install 'interview-copilot[local]' "
    "(build with CMAKE_ARGS=-DGGML_NATIVE=OFF)"
)


def llama_cpp_available() -> bool:
    """Whether ``llama_cpp.server`` can be started (checked without importing it)."""
    try:
        return llama_cpp_installed() and importlib.util.find_spec("llama_cpp.server") is not None
    except (ImportError, ValueError):
        return False


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LocalServer:
    """Starts and stops llama.cpp's server (``llama_cpp.server``) on a free loopback port."""

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        *,
        log_path: str | os.PathLike[str] | None = None,
        model_alias: str | None = None,
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else None
        """None = the bundled SmolLM2 (:func:`app.platform.bundled.fast_model`)."""
        self.n_ctx = n_ctx or (BUNDLED_N_CTX if model_path is None else CHOSEN_N_CTX)
        self.n_threads = n_threads or server_threads()
        """Unset: what the recogniser and the words model leave (see :mod:`app.platform.cores`)."""
        self.log_path = Path(log_path) if log_path is not None else None
        self.model = model_alias or (MODEL_ALIAS if model_path is None else Path(model_path).stem)
        """The name the server answers to (``--model_alias``): a chosen file's stem."""
        self.base_url = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._stopped = False
        """Set by :meth:`stop` from any thread: a start still in progress gives up."""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float | None = None, *, warm_model: bool = True) -> str:
        """Start the server and wait until ``GET /v1/models`` answers; returns the base URL.

        Raises :class:`LlmError` (kind ``not_found``) with the install hint when
        llama-cpp-python or the bundled model is missing, naming the file and the reason
        when a chosen model is missing or not GGUF, and (kind ``server``) with the tail of
        the server's log when it exits or does not come up in time (a damaged GGUF).
        """
        if self.running():
            return self.base_url
        if timeout is None:
            timeout = BUNDLED_START_S if self.model_path is None else CHOSEN_START_S
        if self._stopped:
            raise LlmError("server", "The local LLM server was stopped.", retryable=False)
        cpu = cpu_problem()
        if cpu is not None:  # loading llama.cpp here would crash with an illegal instruction
            raise LlmError("not_found", cpu[0].upper() + cpu[1:] + ".", retryable=False)
        if self.model_path is not None:
            try:
                check_gguf(self.model_path)
            except LocalModelError as exc:
                raise LlmError("not_found", str(exc), retryable=False) from exc
        model = self.model_path or fast_model()
        if not llama_cpp_available() or model is None or not Path(model).is_file():
            missing = "llama-cpp-python" if not llama_cpp_available() else f"the model {GGUF_NAME}"
            raise LlmError("not_found", f"{INSTALL_HINT} ({missing} is missing)", retryable=False)
        port = _free_port()
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - lives as long as the process
        cmd = llama_server_command([
            "--model", str(model),
            "--model_alias", self.model,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads),
            "--interrupt_requests", "False",
            "--verbose", "False",
        ])  # fmt: skip
        # Tied to the app's life: a killed app leaves no server (app.llm.child_guard).
        proc = self._proc = spawn(cmd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
        atexit.register(self.stop)
        self.base_url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + timeout
        with httpx2.Client(timeout=httpx2.Timeout(2.0), trust_env=False) as http:
            while True:
                if self._stopped:  # stop() was called meanwhile (the app is quitting)
                    self.stop()
                    raise LlmError("server", "The local LLM server was stopped while starting.",
                                   retryable=False)
                if proc.poll() is not None:
                    code = proc.returncode
                    self.stop()
                    raise LlmError(
                        "server",
                        f"The local LLM server exited (code {code}) while starting. "
                        f"Last log lines ({self.log_path}):\n{self.log_tail()}",
                        retryable=False,
                    )
                with contextlib.suppress(httpx2.TransportError):
                    if http.get(f"{self.base_url}/models").status_code == 200:
                        if warm_model:
                            self._warm_model(http)
                        return self.base_url
                if time.monotonic() > deadline:
                    self.stop()
                    raise LlmError(
                        "timeout",
                        f"The local LLM server did not answer within {timeout:g} s. "
                        f"Last log lines ({self.log_path}):\n{self.log_tail()}",
                        retryable=False,
                    )
                time.sleep(0.1)

    def _warm_model(self, http: httpx2.Client) -> None:
        """One 1-token completion: the first evaluation after loading is ~10x slower
        (buffers allocated, weights paged in), and that should not be the first answer."""
        with contextlib.suppress(httpx2.HTTPError):
            http.post(
                f"{self.base_url}/chat/completions",
                json={
                    "model": self.model,
                    "messages": [{"role": "user", "content": "Hi"}],
                    "max_tokens": 1,
                },
                timeout=httpx2.Timeout(30.0),
            )

    def stop(self, timeout: float = 5.0) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after ``timeout``); any thread."""
        self._stopped = True
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        if self._log is not None:
            self._log.close()
            self._log = None
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)

    def log_tail(self, lines: int = 20) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
