"""Paired bootstrap of means: percentile confidence intervals of a mean difference.

Resampling draws queries with replacement; every column of the input shares the same resampled query
sets, so the bootstrap distribution of (mean of B) - (mean of A) follows from the per-run means, and
each sample's indices depend only on (seed, sample number, n) through a counter-based generator:
identical intervals for any thread count. Indices come from 32-bit halves of 64-bit words by
multiply-shift (bias below n / 2^32, far under the Monte Carlo error).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numpy.typing import NDArray

from ragmetrics.comparison._rng import BOOTSTRAP_STREAM, stream_key, word
from ragmetrics.errors import InputError

# Bootstrap samples per parallel block: their resampling counts (n x BLOCK) are built first, then the
# data is streamed once for the whole block.
BLOCK = 16
_LOW32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


@njit(cache=True, parallel=True)
def _resampled_sums(values: NDArray[np.float64], key: np.uint64, samples: int) -> NDArray[np.float64]:
    n, columns = values.shape
    n_words = (n + 1) // 2
    n_u = np.uint64(n)
    out = np.zeros((samples, columns))
    n_blocks = (samples + BLOCK - 1) // BLOCK
    for b in prange(n_blocks):
        first = b * BLOCK
        size = min(BLOCK, samples - first)
        counts = np.zeros((n, BLOCK))
        for k in range(size):
            base = np.uint64((first + k) * n_words)
            for w in range(n_words):
                bits = word(key, base + np.uint64(w))
                counts[((bits & _LOW32) * n_u) >> _S32, k] += 1.0
                if 2 * w + 1 < n:
                    counts[((bits >> _S32) * n_u) >> _S32, k] += 1.0
        acc = np.zeros((BLOCK, columns))
        for i in range(n):
            row = values[i]
            weights = counts[i]
            for k in range(size):
                weight = weights[k]
                target = acc[k]
                for c in range(columns):
                    target[c] += weight * row[c]
        for k in range(size):
            out[first + k] = acc[k]
    return out


def bootstrap_means(
    values: NDArray[np.float64], *, samples: int = 10_000, seed: int = 42
) -> NDArray[np.float64]:
    """Means of `samples` bootstrap resamples of the rows of `values` (queries x columns)."""
    x = np.ascontiguousarray(values, dtype=np.float64)
    if x.ndim == 1:
        x = x.reshape(-1, 1)
    if x.ndim != 2 or x.shape[0] == 0:
        raise InputError(f"bootstrap: need a non-empty 1-d or 2-d array, got shape {x.shape}")
    if samples < 1:
        raise InputError(f"bootstrap: samples must be >= 1, got {samples}", field="bootstrap_samples")
    if not np.all(np.isfinite(x)):
        raise InputError("bootstrap: values contain NaN or infinity")
    sums: NDArray[np.float64] = _resampled_sums(x, stream_key(seed, BOOTSTRAP_STREAM), int(samples))
    means: NDArray[np.float64] = sums / float(x.shape[0])
    return means


def percentile_interval(
    sample_means: NDArray[np.float64], confidence: float = 0.95
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The (1 - confidence) / 2 and (1 + confidence) / 2 quantiles of each column (linear interpolation)."""
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence must be in (0, 1), got {confidence}", field="confidence")
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(sample_means, [tail, 1.0 - tail], axis=0)
    return low, high


def bootstrap_ci(
    diffs: NDArray[np.float64] | list[float],
    *,
    samples: int = 10_000,
    seed: int = 42,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of one vector of paired differences."""
    low, high = percentile_interval(
        bootstrap_means(np.asarray(diffs, dtype=np.float64), samples=samples, seed=seed), confidence
    )
    return float(low[0]), float(high[0])
