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
and a native crash cannot take the app down).

``packaging/entry.py`` also accepts ``-m llama_cpp.server …`` as an alias, so an
unmodified ``[sys.executable, "-m", "llama_cpp.server", …]`` command works in the bundle
too; :func:`llama_server_command` is the explicit way to build the command.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

RUN_FLAG = "--run-llama-server"
"""Hidden first argument of the bundle's executable: run llama_cpp.server in-process."""

MODULE = "llama_cpp.server"


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
    """Run ``llama_cpp.server``'s ``main()`` in this process with ``args``; blocks until
    the server exits (SIGTERM from :class:`app.llm.local_server.LocalServer`), or the app that
    started it ends (:func:`app.llm.child_guard.watch_parent`)."""
    from app.llm.child_guard import watch_parent

    _ensure_std_streams()
    watch_parent()
    try:
        from llama_cpp.server.__main__ import main
    except ImportError as exc:
        print(f"the embedded local LLM is not part of this build: {exc}", file=sys.stderr)
        return 3
    sys.argv = [f"{sys.argv[0]} {RUN_FLAG}", *args]
    try:
        main()  # type: ignore[no-untyped-call]
    except SystemExit as exc:  # argparse errors and uvicorn's own exit
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


def _ensure_std_streams() -> None:
    """A windowed Windows executable may start without stdout/stderr; uvicorn's logging
    writes to them, so point missing ones at the null device instead of crashing."""
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - process lifetime
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - process lifetime


if __name__ == "__main__":
    sys.exit(run_server(sys.argv[1:]))
