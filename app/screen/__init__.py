"""The question on the screen: a captured region read on this machine (no Qt here).

:mod:`app.screen.picture` checks and prepares a capture, :mod:`app.screen.ocr` reads it with
RapidOCR's bundled models, :mod:`app.screen.layout` puts the text back in reading order.
"""
