"""The recogniser's one error type, apart from the modules that raise it, so that the model
loader and the multilingual model's assembler can both raise it without importing each
other."""

from __future__ import annotations


class ModelError(Exception):
    """The ASR model could not be found or loaded; the message says how to fix it."""
