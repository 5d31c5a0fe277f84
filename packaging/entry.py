"""PyInstaller entry point of the Interview Copilot bundle.

``interview-copilot [ARGS]``                      the app (``app.cli.main``)
``interview-copilot --run-llama-server ARGS``     hidden: llama_cpp.server in this process
``interview-copilot -m llama_cpp.server ARGS``    the same (what ``python -m`` would do)

The server dispatch happens before ``app.cli`` is imported, so the server child process
never loads Qt, the ASR model or the audio stack.
"""

from __future__ import annotations

import multiprocessing
import sys


def _main() -> int:
    multiprocessing.freeze_support()
    from app.llm.bundle_server import run_server, server_args

    args = server_args(sys.argv[1:])
    if args is not None:
        return run_server(args)
    from app.cli import main

    return main()


if __name__ == "__main__":
    sys.exit(_main())
