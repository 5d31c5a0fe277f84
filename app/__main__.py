"""``python -m app``: the CLI.  Guarded, because a ``spawn`` child (a document reader,
:mod:`app.prompt.worker`) imports the main module again under another name."""

from app.frontends.cli import exit_process, main

if __name__ == "__main__":
    exit_process(main())
