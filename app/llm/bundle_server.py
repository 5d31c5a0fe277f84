"""Running llama.cpp's OpenAI-compatible server from a frozen (PyInstaller) bundle.

From a Python install the local LLM is started as ``python -m app.llm.bundle_server …``
(this module, which runs llama_cpp.server's ``main()`` after :func:`app.llm.child_guard.
watch_parent` has tied it to the app's life).  A
frozen app has no interpreter to pass ``-m`` to: ``sys.executable`` *is* the app.  So the
bundle's own executable takes a hidden first argument, ``--run-llama-server``, followed
by the usual ``llama_cpp.server`` arguments, and runs that server's ``main()`` in the
child process (packaging/entry.py dispatches it before anything else is imported, so the
child never loads Qt or the ASR model).  The server still runs in its own process, for
the same reasons as from source (its GIL-heavy decoding never stalls capture or the UI,
and a native crash cannot take the app down). Design notes: decision 0039.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Sequence

RUN_FLAG = "--run-llama-server"
"""Hidden first argument of the bundle's executable: run llama_cpp.server in-process."""

MODULE = "llama_cpp.server"
LOOPBACK = "127.0.0.1"
LISTEN_FD = "--listen_fd"
"""The listening socket the app bound and the child inherited (POSIX): no port race."""


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def llama_server_command(args: Sequence[str]) -> list[str]:
    """The command line that starts ``llama_cpp.server`` with ``args``.

    From source: ``[python, -m, app.llm.bundle_server, *args]``; in a frozen bundle:
    ``[bundle executable, --run-llama-server, *args]``.  Both run :func:`run_server`.
    """
    if is_frozen():
        return [sys.executable, RUN_FLAG, *args]
    return [sys.executable, "-m", __name__ if __name__ != "__main__" else "app.llm.bundle_server", *args]


def server_args(argv: Sequence[str]) -> list[str] | None:
    """The server's own arguments when ``argv`` (without argv[0]) asks to run the server,
    else None: ``--run-llama-server ARGS…`` or ``-m llama_cpp.server ARGS…``."""
    if argv[:1] == [RUN_FLAG]:
        return list(argv[1:])
    if list(argv[:2]) == ["-m", MODULE]:
        return list(argv[2:])
    return None


def run_server(args: Sequence[str]) -> int:
    """Run the embedded server in this process with ``args``; blocks until it exits
    (SIGTERM from :class:`app.llm.local_server.LocalServer`), or the app that started it
    ends (:func:`app.llm.child_guard.watch_parent`)."""
    from app.llm.child_guard import watch_parent

    _ensure_std_streams()
    watch_parent()
    try:
        import llama_cpp.server.app  # noqa: F401 - the web stack: fastapi, uvicorn, sse-starlette
    except ImportError as exc:
        print(f"the embedded local LLM is not part of this build: {exc}", file=sys.stderr)
        return 3
    try:
        return serve(args)
    except SystemExit as exc:  # argparse's --help and errors, uvicorn's own exit
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)


def serve(args: Sequence[str]) -> int:
    """llama_cpp.server's app, answering this app only (see the module's docstring)."""
    import uvicorn
    from fastapi.middleware.cors import CORSMiddleware
    from llama_cpp.server.app import create_app
    from llama_cpp.server.cli import add_args_from_model
    from llama_cpp.server.settings import ConfigFileSettings, ModelSettings, ServerSettings, Settings

    from app.llm.child_env import KEY_ENV, scrub, settings_names
    from app.llm.server_guard import Guard

    parser = argparse.ArgumentParser(prog=f"{os.path.basename(sys.argv[0])} {RUN_FLAG}",
                                     description="llama.cpp's server, answering Interview Copilot only")
    add_args_from_model(parser, Settings)
    parser.add_argument(LISTEN_FD, type=int, help="a listening socket to serve on (inherited)")
    given = {name: value for name, value in vars(parser.parse_args(args)).items() if value is not None}
    key = os.environ.pop(KEY_ENV, "")
    # Before any settings class reads the environment: its field names are variables too.
    scrub(os.environ, settings_names(Settings, ConfigFileSettings) | {"config_file", "host", "port"})
    if not key:
        print(f"no credential in {KEY_ENV}: the embedded server never runs without one", file=sys.stderr)
        return 2
    if given.pop("api_key", None) is not None or given.pop("host", LOOPBACK) != LOOPBACK:
        print(f"the credential comes from {KEY_ENV}, and the server listens on {LOOPBACK} only",
              file=sys.stderr)
        return 2
    listener = _listener(given.pop("listen_fd", None), int(given.pop("port", 0)))
    server = ServerSettings(**{k: v for k, v in given.items() if k in ServerSettings.model_fields},
                            host=LOOPBACK, port=listener.getsockname()[1], api_key=key)
    model = ModelSettings(**{k: v for k, v in given.items() if k in ModelSettings.model_fields})
    app = create_app(server_settings=server, model_settings=[model])  # loads the model
    app.user_middleware = [m for m in app.user_middleware if m.cls is not CORSMiddleware]
    config = uvicorn.Config(Guard(app, key), host=LOOPBACK, port=server.port, workers=1, proxy_headers=False,
                            forwarded_allow_ips=[])
    uvicorn.Server(config).run(sockets=[listener])
    return 0


def _listener(fd: int | None, port: int) -> socket.socket:
    """The socket to serve on: the app's (``fd``), or one bound to ``port`` right away,
    before the model loads, so the port chosen for us is ours as early as can be."""
    if fd is not None:
        return socket.socket(fileno=fd)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if sys.platform == "win32":  # no other socket may bind it too and take connections
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_EXCLUSIVEADDRUSE, 1)
    sock.bind((LOOPBACK, port))
    sock.listen(64)
    return sock


def _ensure_std_streams() -> None:
    """A windowed Windows executable may start without stdout/stderr; uvicorn's logging
    writes to them, so point missing ones at the null device instead of crashing."""
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - process lifetime
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - process lifetime


if __name__ == "__main__":
    sys.exit(run_server(sys.argv[1:]))
