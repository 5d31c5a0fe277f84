"""What can be wrong with a capture: each a one-line message that says what to do."""

from __future__ import annotations


class ScreenError(Exception):
    """A capture that cannot be read; ``str()`` is the one line the user sees."""


class NotAnImage(ScreenError):
    """A file (or pixels) that is not an image."""


class OneColour(ScreenError):
    """A capture that is all one colour: a missing permission, a locked screen, a black frame."""


class NothingReadable(ScreenError):
    """An image in which the recogniser found no text."""


class OcrUnavailable(ScreenError):
    """The recogniser or its bundled models cannot be loaded (a broken install)."""
