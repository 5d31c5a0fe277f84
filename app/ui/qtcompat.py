"""A guard against a reference-counting bug of the installed Qt binding.

PySide6 6.12.0 (as installed here) returns ``None`` from every void method
(``insertText``, ``setValue``, ``update``…) and ``True`` from ``SignalInstance.emit``
without taking a reference.  On Python ≥ 3.12 these singletons are immortal and nothing
happens; on 3.11 every call takes a reference away, and after a few thousand calls (one
streamed answer) CPython aborts with "Fatal Python error: none_dealloc".

:func:`protect_singletons` gives ``None``, ``True`` and ``False`` a reference count so
large that no run can exhaust it, which is what 3.12 does by making them immortal.  It
is idempotent, does nothing on 3.12+, and checks that the write landed where expected
(the reference count is a PyObject's first field in release builds) before keeping it.
"""

from __future__ import annotations

import ctypes
import sys
import threading

BOOST = 1 << 40
"""~10^12 references: at a million leaked references a second, 12 days of headroom."""

_lock = threading.Lock()
_done = False


def protect_singletons() -> bool:
    """Make None/True/False effectively immortal on CPython < 3.12; True if applied."""
    global _done
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    with _lock:
        if _done:
            return True
        for obj in (None, True, False):
            field = ctypes.c_ssize_t.from_address(id(obj))
            before = sys.getrefcount(obj)
            field.value += BOOST
            if sys.getrefcount(obj) - before < BOOST // 2:  # not the refcount: undo
                field.value -= BOOST
                return False
        _done = True
        return True


protect_singletons()
