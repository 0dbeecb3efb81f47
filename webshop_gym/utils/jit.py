"""What the Numba kernel modules share: the compile options and the rebinding of helpers.

Every kernel is written once as plain Python (the pure-Python twin, used by the tests and when a
kernel is debugged) and compiled from the same function.  A kernel that calls helpers is compiled
from a copy of itself whose global names point at the compiled helpers.
"""

from __future__ import annotations

import types

import numba

__all__ = ["entry_point", "jit", "rebind"]

jit = numba.njit(cache=True, nogil=True)


def entry_point(kernel, args):
    """The compiled specialization of ``kernel`` for the types of ``args``, to call directly.

    A dispatcher call types every argument before it finds the machine code (about 60 ns an array
    argument); the entry point skips that.  It checks nothing, so every later call must pass
    arguments of exactly these types (dtype, dimensions, C-contiguous, writable or not).  Resolved
    from numba's on-disk cache, or compiled, if this process has not compiled it yet.
    """
    return kernel.compile(tuple(numba.typeof(a) for a in args))


def rebind(func, **names):
    """Copy ``func`` with some global names pointing at compiled helpers."""
    scope = dict(func.__globals__)
    scope.update(names)
    copy = types.FunctionType(func.__code__, scope, func.__name__, func.__defaults__, func.__closure__)
    copy.__qualname__ = func.__qualname__ + "_jit"
    copy.__module__ = func.__module__
    copy.__doc__ = func.__doc__
    return copy
