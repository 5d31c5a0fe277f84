"""PyInstaller entry point of the Interview Copilot bundle.

``interview-copilot [ARGS]``                      the app (``app.frontends.cli.main``)
``interview-copilot --run-llama-server ARGS``     hidden: llama_cpp.server in this process
``interview-copilot -m llama_cpp.server ARGS``    the same (what ``python -m`` would do)

The server dispatch happens before ``app.frontends.cli`` is imported, so the server child process
never loads Qt, the ASR model or the audio stack.
"""

from __future__ import annotations

import multiprocessing
import sys


def _main() -> None:
    multiprocessing.freeze_support()
    from app.llm.bundle_server import run_server, server_args

    args = server_args(sys.argv[1:])
    if args is not None:
        sys.exit(run_server(args))
    from app.frontends.cli import exit_process, main

    exit_process(main())  # as ``python -m app`` does: no teardown once all is saved


if __name__ == "__main__":
    _main()
