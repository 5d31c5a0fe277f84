"""A stand-in for a ctypes-loaded OS library (Carbon, user32) we cannot load on Linux.

The code under test sets ``argtypes``/``restype`` on each function and calls it exactly
as it would call the real DLL.  Each :class:`CFunction` knows the real prototype (from
the OS headers) and, on every call:

* checks the declared types against it, size by size: a pointer declared as ``c_int``
  or a 64-bit ``ItemCount`` declared as ``c_uint32`` works on Linux by luck and corrupts
  arguments on a real arm64/x64 OS;
* converts the arguments through a real ctypes call of the real prototype, so the fake's
  implementation receives what C would (addresses, not Python objects) and has to read
  and write memory the way the OS does.

An exception inside an implementation (a C callback cannot raise) is kept and re-raised
to the caller, so a test never passes over a fake that failed.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

CType = Any  # a ctypes type (simple, pointer, structure or function prototype)


class CFunction:
    """One function of a fake library, with the real prototype ``restype(*argtypes)``."""

    def __init__(self, name: str, restype: CType | None, argtypes: Sequence[CType],
                 impl: Callable[..., Any]) -> None:
        self.__name__ = name
        self._real_restype = restype
        self._real_argtypes = list(argtypes)
        self._impl = impl
        self._error: BaseException | None = None
        self.argtypes: Sequence[CType] | None = None
        self.restype: CType | None = ctypes.c_int  # what ctypes assumes when nobody says
        self.calls = 0
        self._proto = ctypes.CFUNCTYPE(restype, *argtypes)(self._guarded)

    def _guarded(self, *args: Any) -> Any:
        try:
            return self._impl(*args)
        except BaseException as exc:
            self._error = exc
            return 0 if self._real_restype is not None else None

    def __call__(self, *args: Any) -> Any:
        name = self.__name__
        if self.argtypes is None and self._real_argtypes:
            raise AssertionError(f"{name}: argtypes not declared (ctypes would pass ints as C int)")
        declared_args = self.argtypes or []
        if len(declared_args) != len(self._real_argtypes):
            raise AssertionError(f"{name}: declared {len(declared_args)} arguments, "
                                 f"the real function takes {len(self._real_argtypes)}")
        for i, (declared, real) in enumerate(zip(declared_args, self._real_argtypes, strict=True)):
            if ctypes.sizeof(declared) != ctypes.sizeof(real):
                raise AssertionError(f"{name}: argument {i} declared {declared.__name__} "
                                     f"({ctypes.sizeof(declared)} bytes), the real one is "
                                     f"{ctypes.sizeof(real)} bytes")
        if (self.restype is None) != (self._real_restype is None) or (
                self.restype is not None and self._real_restype is not None
                and ctypes.sizeof(self.restype) != ctypes.sizeof(self._real_restype)):
            raise AssertionError(f"{name}: restype {self.restype} does not match the real "
                                 f"{self._real_restype}")
        converted = [real.from_buffer_copy(arg) if isinstance(real, type) and issubclass(
            real, ctypes.Structure) and isinstance(arg, ctypes.Structure) else arg
            for real, arg in zip(self._real_argtypes, args, strict=True)]
        self.calls += 1
        self._error = None
        result = self._proto(*converted)
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return result


class FakeLibrary:
    """A namespace of :class:`CFunction` s; a name the real library lacks is an AttributeError."""

    def __init__(self, functions: Sequence[CFunction]) -> None:
        self._functions = {f.__name__: f for f in functions}

    def __getattr__(self, name: str) -> CFunction:
        try:
            return self.__dict__["_functions"][name]  # type: ignore[no-any-return]
        except KeyError:
            raise AttributeError(f"function '{name}' not found") from None


def write_at(address: int | None, ctype: CType, value: Any) -> None:
    """``*address = value`` for an out-parameter the caller may pass as NULL."""
    if address:
        ctype.from_address(address).value = value
