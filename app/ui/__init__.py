"""The desktop window, the only place Qt is imported; the entry point is
:func:`app.ui.app.run_window`.  This ``__init__`` stays free of Qt imports so that
``import app.ui.<module>`` costs nothing until a module needs Qt.
"""
