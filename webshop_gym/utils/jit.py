"""What the Numba kernel modules share: the compile options and the rebinding of helpers.

Every kernel is written once as plain Python (the pure-Python twin, used by the tests and when a
kernel is debugged) and compiled from the same function.  A kernel that calls helpers is compiled
from a copy of itself whose global names point at the compiled helpers.
"""

from __future__ import annotations

import types

import numba

__all__ = ["jit", "rebind"]

jit = numba.njit(cache=True, nogil=True)


def rebind(func, **names):
    """Copy ``func`` with some global names pointing at compiled helpers."""
    scope = dict(func.__globals__)
    scope.update(names)
    copy = types.FunctionType(func.__code__, scope, func.__name__, func.__defaults__, func.__closure__)
    copy.__qualname__ = func.__qualname__ + "_jit"
    copy.__module__ = func.__module__
    copy.__doc__ = func.__doc__
    return copy
