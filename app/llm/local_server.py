"""The embedded local LLM: llama.cpp's OpenAI-compatible server running SmolLM2-135M,
or a GGUF file the user chose (``[llm] local_model``).

Without an API key the app still suggests answers, from a tiny model on the CPU.  It runs
as a child process rather than in-process so its GIL-heavy decoding never stalls audio
capture or the UI, so a crash in native code cannot take the app down, and so the rest
of the app talks to it exactly as to a cloud provider (same client, same code paths).

Design notes: decision 0039.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Self

import httpx2

from app.core.private import DIR_MODE, private_fd
from app.llm.body_cap import sync_hook
from app.llm.bundle_server import LISTEN_FD, llama_server_command
from app.llm.child_env import server_environment
from app.llm.child_guard import spawn
from app.llm.endpoint import LOCAL_MODEL
from app.llm.errors import LlmError
from app.llm.gguf import LocalModelError, check_gguf
from app.llm.server_identity import NotOurServer, prove
from app.platform.bundled import GGUF_NAME, cpu_problem, fast_model, llama_cpp_installed
from app.platform.cores import server_threads
from app.platform.redact import register_secret

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


HAND_OVER_SOCKET = sys.platform != "win32"
"""POSIX: the app binds the port and the child inherits the listening socket (``pass_fds``),
so no other program can take the port between the two; the app keeps its own copy open
until :meth:`LocalServer.stop`, so none can take it after a child died either.  Windows'
``Popen`` hands over no sockets: there the port is chosen by binding and closing, the child
binds it at once and exclusively, and the identity check (:mod:`app.llm.server_identity`) finds out a program
that took it first, before it is sent anything."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _listen() -> socket.socket:
    """A listening socket on a free loopback port, for the child to inherit."""
    return socket.create_server(("127.0.0.1", 0))


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
        """The server's log; unset: a file in a private folder of its own, made by :meth:`start`."""
        self.model = model_alias or (LOCAL_MODEL if model_path is None else Path(model_path).stem)
        """The name the server answers to (``--model_alias``): a chosen file's stem."""
        self.base_url = ""
        self.api_key = secrets.token_urlsafe(32)
        """This server's credential: requests without it are refused (401)."""
        register_secret(self.api_key)  # never in a log, a status or an error
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._log_dir: Path | None = None
        """The private folder :meth:`start` made for the log (removed after a clean stop)."""
        self._keep_log = False
        """A failed start or a server that ended on its own: the log stays, for the message."""
        self._stopped = False
        """Set by :meth:`stop` from any thread: a start still in progress gives up."""
        self._listener: socket.socket | None = None
        """POSIX: the port, bound by the app for as long as the server may run, handed to each
        child and kept here between them, so no other program can take it while a child
        restarts or after one died (:mod:`app.llm.server_watch`)."""
        self._starts = 0

    @property
    def auth_headers(self) -> dict[str, str]:
        """What a request to this server carries (LlmClient sends :attr:`api_key` as its key)."""
        return {"Authorization": f"Bearer {self.api_key}"}

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The child started last (it may have exited since): what :mod:`app.llm.server_watch` watches."""
        return self._proc

    @property
    def start_timeout(self) -> float:
        """How long :meth:`start` waits for the server by default."""
        return BUNDLED_START_S if self.model_path is None else CHOSEN_START_S

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float | None = None, *, warm_model: bool = True) -> str:
        """Start the server and wait until it proves it is our child; returns the base URL
        (requests to it carry :attr:`api_key`).

        Raises :class:`LlmError` (kind ``not_found``) with the install hint when
        llama-cpp-python or the bundled model is missing, naming the file and the reason
        when a chosen model is missing or not GGUF, (kind ``server``) with the tail of the
        server's log when it exits or does not come up in time (a damaged GGUF), and (kind
        ``server``) naming the port when another program answers there instead.
        """
        if self.running():
            return self.base_url
        if timeout is None:
            timeout = self.start_timeout
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
        if HAND_OVER_SOCKET and self._listener is None:
            self._listener = _listen()
        listener = self._listener if HAND_OVER_SOCKET else None
        port: int = listener.getsockname()[1] if listener is not None else _free_port()
        try:
            log = self._open_log()
            where = [LISTEN_FD, str(listener.fileno())] if listener is not None else ["--port", str(port)]
            cmd = llama_server_command([
                "--model", str(model),
                "--model_alias", self.model,
                *where,
                "--n_ctx", str(self.n_ctx),
                "--n_threads", str(self.n_threads),
                "--n_threads_batch", str(self.n_threads),
                "--interrupt_requests", "False",
                "--verbose", "False",
            ])  # fmt: skip
            handed = {"pass_fds": (listener.fileno(),)} if listener is not None else {}
            # Tied to the app's life: a killed app leaves no server (app.llm.child_guard).  The
            # credential goes in the environment, never on the command line (app.llm.child_env).
            self._proc = spawn(cmd, env=server_environment(self.api_key), stdin=subprocess.DEVNULL,
                               stdout=log, stderr=subprocess.STDOUT, **handed)
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self._wait_until_up(self._proc, port, timeout)
        if warm_model:
            self._warm_model()
        return self.base_url

    def _wait_until_up(self, proc: subprocess.Popen[bytes], port: int, timeout: float) -> None:
        """Until the server proves it is our child (:func:`app.llm.server_identity.prove`):
        whatever else answers on the port is never sent the credential or a prompt."""
        deadline = time.monotonic() + timeout
        with httpx2.Client(timeout=httpx2.Timeout(2.0), trust_env=False,
                           event_hooks={"response": [sync_hook]}) as http:
            while True:
                if self._stopped:  # stop() was called meanwhile (the app is quitting)
                    self.stop()
                    raise LlmError("server", "The local LLM server was stopped while starting.",
                                   retryable=False)
                try:
                    if prove(http, f"http://127.0.0.1:{port}", self.api_key):
                        return
                except NotOurServer as exc:
                    self._fail()
                    raise LlmError(
                        "server",
                        f"Another program answers on 127.0.0.1:{port}, the port chosen for the local LLM, "
                        f"and it is not the local LLM server ({exc}): it was sent nothing. Start again; if "
                        "this repeats, a program on this computer is taking the port.",
                        retryable=False,
                    ) from exc
                if proc.poll() is not None:
                    code = proc.returncode
                    self._fail()
                    raise LlmError(
                        "server",
                        f"The local LLM server exited (code {code}) while starting. "
                        f"Last log lines ({self.log_path}):\n{self.log_tail()}",
                        retryable=False,
                    )
                if time.monotonic() > deadline:
                    self._fail()
                    raise LlmError(
                        "timeout",
                        f"The local LLM server did not answer within {timeout:g} s. "
                        f"Last log lines ({self.log_path}):\n{self.log_tail()}",
                        retryable=False,
                    )
                time.sleep(0.1)

    def _open_log(self) -> IO[bytes]:
        """The server's log, readable by the user alone: unless the caller named a file, in a
        folder of its own (0700, the file 0600, whatever the umask: ``mkdtemp`` and
        :mod:`app.core.private`), as the server may log what it was asked.  On Windows the
        temporary folder is in the user's profile, whose ACL already keeps others out."""
        if self.log_path is None:
            self._log_dir = Path(tempfile.mkdtemp(prefix="interview-copilot-llm-"))
            if sys.platform != "win32":
                os.chmod(self._log_dir, DIR_MODE)
            self.log_path = self._log_dir / "llama-server.log"
        if self._log is not None:  # a child that died: its successor logs after what it said
            self._log.close()
        # A restart appends: what the child before it logged says why it ended.
        again = os.O_APPEND if self._starts else os.O_TRUNC
        self._starts += 1
        self._log = open(private_fd(self.log_path, os.O_WRONLY | os.O_CREAT | again), "wb")  # noqa: SIM115
        return self._log

    def _fail(self) -> None:
        """Stop a server that did not come up, keeping its log for the error message."""
        self._keep_log = True
        self.stop()

    def _warm_model(self) -> None:
        """One 1-token completion: the first evaluation after loading is ~10x slower
        (buffers allocated, weights paged in), and that should not be the first answer."""
        with contextlib.suppress(httpx2.HTTPError, LlmError), \
                httpx2.Client(trust_env=False, event_hooks={"response": [sync_hook]}) as http:
            http.post(
                f"{self.base_url}/chat/completions",
                headers=self.auth_headers,
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
        if proc is not None and proc.poll() is not None:
            self._keep_log = True  # it ended on its own: what it logged says why
        elif proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._listener is not None:
            self._listener.close()  # the port is free only once no child will serve on it
            self._listener = None
        if self._log_dir is not None and not self._keep_log:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None
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
