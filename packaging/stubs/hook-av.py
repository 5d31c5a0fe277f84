"""PyInstaller hook for the stand-in ``av`` (packaging/stubs/av): nothing to collect.

It replaces pyinstaller-hooks-contrib's hook-av.py (hooks on the spec's ``hookspath`` come
first), which lists the real PyAV's submodules and, on Windows, copies its av.libs DLLs.
"""
