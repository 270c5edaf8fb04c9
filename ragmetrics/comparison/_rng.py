"""Counter-based random words (SplitMix64), so every draw is a pure function of (seed, counter).

A shared sequential stream would make results depend on how work is split between threads; a word
that depends only on its counter gives the same permutation p-values and bootstrap intervals for the
same seed with any number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_MASK = 0xFFFFFFFFFFFFFFFF

# Domain separators: the Fisher signs and the bootstrap indices never share a word for the same seed.
FISHER_STREAM = 0x46495348
BOOTSTRAP_STREAM = 0x424F4F54


@njit(cache=True, inline="always")
def mix64(z: np.uint64) -> np.uint64:
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, inline="always")
def word(key: np.uint64, counter: np.uint64) -> np.uint64:
    """The counter-th output (0-based) of a SplitMix64 generator whose state starts at `key`."""
    return mix64(key + (counter + np.uint64(1)) * _GOLDEN)


def stream_key(seed: int, stream: int) -> np.uint64:
    """Key of one named stream for a user seed (any Python int; negative seeds are allowed)."""
    return np.uint64(_mix_py((seed & _MASK) ^ ((stream * 0xD1B54A32D192ED03) & _MASK)))


def _mix_py(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)
