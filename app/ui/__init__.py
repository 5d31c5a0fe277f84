"""The desktop window.  This ``__init__`` stays free of Qt imports so that Qt-free helpers
(:mod:`app.ui.latency`) can be used headless; the entry point is :func:`app.ui.app.run_window`.
"""
