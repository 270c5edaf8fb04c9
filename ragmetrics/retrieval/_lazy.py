"""Kernels written once, run as plain Python on small inputs and compiled by numba on large ones.

Importing numba, loading its cached machine code and its BLAS check cost about 0.5 s per process, and
compiling the kernels the first time about 15 s; a CLI call on a three-line qrels file should pay neither.
So every kernel is a plain Python function over numpy arrays, wrapped in a `Kernel`. Inside
`numba_for(size)` with a size at or above the threshold, calling a kernel runs its numba-compiled twin
(compiled, and cached on disk, on first use); otherwise it runs the Python function itself. Both run the
same code, so they return the same values (tests compare them on random inputs).

Compiling a kernel compiles a copy of its function whose globals name the compiled twins of the kernels it
calls (numba can only call compiled code) and numba's `prange` where the source says `prange` (plain
`range` in Python). numba is imported only then.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import types
from collections.abc import Callable, Iterator
from typing import Generic, ParamSpec, TypeVar

import numpy as np

__all__ = [
    "NUMBA_MIN_SIZE",
    "Kernel",
    "force_path",
    "kernel",
    "numba_for",
    "parallel_kernel",
    "prange",
    "using_numba",
]

P = ParamSpec("P")
R = TypeVar("R")

prange = range
"""Parallel range in compiled kernels (numba.prange), a plain range in Python."""

NUMBA_MIN_SIZE = int(os.environ.get("RAGMETRICS_NUMBA_MIN_SIZE", "10000"))
"""Input size (entries; a file's bytes / 32) from which compiled kernels pay for numba's start-up (~0.5 s:
importing numba, loading the cached machine code) in a fresh process."""

NUMBA_LOADED_MIN_SIZE = 1000
"""Once our compiled kernels have run in the process, numba's start-up and their machine code are paid
for: compiled kernels win from this size."""

_COMPILED_RAN = False
"""Whether compiled kernels have run in this process. Not `"numba" in sys.modules`: a library that imports
numba (bm25s does) pays numba's import, not the compilation or cache loading of our kernels (about 15 s cold),
and taking it for paid made the quickstart compile kernels for 6,400-entry runs."""

_USE_NUMBA: contextvars.ContextVar[bool] = contextvars.ContextVar("ragmetrics_use_numba", default=False)
_FORCED: contextvars.ContextVar[bool | None] = contextvars.ContextVar("ragmetrics_forced_path", default=None)
_COMPILE_LOCK = threading.RLock()


class Kernel(Generic[P, R]):
    """A plain function and, on demand, its numba-compiled twin; calls pick one by the current context."""

    def __init__(self, function: Callable[P, R], *, parallel: bool = False) -> None:
        self.py = function
        self.parallel = parallel
        self._compiled: Callable[P, R] | None = None
        self.__name__ = function.__name__
        self.__qualname__ = function.__qualname__
        self.__doc__ = function.__doc__
        self.__module__ = function.__module__

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if _USE_NUMBA.get():
            return self.compiled(*args, **kwargs)
        # numba computes on a uint8 byte as on an int64; numpy keeps uint8 (NEP 50), and `digit * 10 + byte`
        # would wrap at 256. Byte buffers are read-only inputs of the kernels, so a widened copy is safe.
        widened = [
            a.astype(np.int64) if isinstance(a, np.ndarray) and a.dtype == np.uint8 else a for a in args
        ]
        return self.py(*widened, **kwargs)  # type: ignore[arg-type]

    @property
    def compiled(self) -> Callable[P, R]:
        """The numba dispatcher (nopython, cached on disk), compiled with the kernels it calls."""
        if self._compiled is None:
            with _COMPILE_LOCK:
                if self._compiled is None:
                    self._compiled = self._compile()
        return self._compiled

    def _compile(self) -> Callable[P, R]:
        import numba

        source = self.py
        namespace = dict(source.__globals__)
        for name in source.__code__.co_names:
            value = namespace.get(name)
            if isinstance(value, Kernel):
                namespace[name] = value.compiled
            elif value is range and name == "prange":
                namespace[name] = numba.prange
        twin = types.FunctionType(
            source.__code__, namespace, source.__name__, source.__defaults__, source.__closure__
        )
        twin.__qualname__ = source.__qualname__
        twin.__module__ = source.__module__
        twin.__doc__ = source.__doc__
        compiled: Callable[P, R] = numba.njit(cache=True, nogil=True, parallel=self.parallel)(twin)
        return compiled


def kernel(function: Callable[P, R]) -> Kernel[P, R]:
    """Decorator: a serial kernel."""
    return Kernel(function)


def parallel_kernel(function: Callable[P, R]) -> Kernel[P, R]:
    """Decorator: a kernel whose `prange` loops run on numba's threads when compiled."""
    return Kernel(function, parallel=True)


@contextlib.contextmanager
def numba_for(size: int) -> Iterator[bool]:
    """Run kernels called in this block compiled when `size` reaches NUMBA_MIN_SIZE (or a forced path says so).

    Yields whether they run compiled. Nested blocks keep the outer decision, so an operation decides once
    for all the kernels it calls.
    """
    if _USE_NUMBA.get():
        yield True
        return
    global _COMPILED_RAN
    forced = _FORCED.get()
    use = (
        forced if forced is not None else size >= (NUMBA_LOADED_MIN_SIZE if _COMPILED_RAN else NUMBA_MIN_SIZE)
    )
    token = _USE_NUMBA.set(use)
    try:
        yield use
        if use:
            _COMPILED_RAN = True
    finally:
        _USE_NUMBA.reset(token)


@contextlib.contextmanager
def force_path(compiled: bool | None) -> Iterator[None]:
    """Tests and benchmarks: run every kernel compiled (True) or in Python (False) whatever the input size."""
    token = _FORCED.set(compiled)
    try:
        yield
    finally:
        _FORCED.reset(token)


def using_numba() -> bool:
    return _USE_NUMBA.get()
