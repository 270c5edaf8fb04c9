"""Fisher's randomization test of paired differences (two-sided, statistic: the mean difference).

Under the null hypothesis the sign of each query's difference is exchangeable, so the p-value is the
share of random sign flips whose |sum| reaches the observed |sum|, counted as
p = (count + 1) / (permutations + 1) (the observed assignment is one of the permutations, so p > 0).

Speed and reproducibility come from the layout: all compared columns (every pair x metric) sit side
by side in one matrix, each permutation's sign vector is drawn once (64 signs per random word) and
applied to every column, and permutations are split into blocks whose counts are summed as integers,
so the result is identical for any thread count.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numpy.typing import NDArray

from ragmetrics.comparison._rng import FISHER_STREAM, stream_key, word
from ragmetrics.errors import InputError

# Permutations per parallel block; the accumulator (BLOCK x columns) stays in L1/L2.
BLOCK = 32
# Sums that are equal in exact arithmetic can differ by rounding; this relative slack counts them as ties.
RELATIVE_TOLERANCE = 1e-9


@njit(cache=True, parallel=True, fastmath=False)
def _exceed_counts(
    diffs: NDArray[np.float64], key: np.uint64, permutations: int, tolerance: NDArray[np.float64]
) -> NDArray[np.int64]:
    n, columns = diffs.shape
    n_words = (n + 63) // 64
    observed = np.zeros(columns)
    for i in range(n):
        for c in range(columns):
            observed[c] += diffs[i, c]
    threshold = np.abs(observed) - tolerance
    n_blocks = (permutations + BLOCK - 1) // BLOCK
    block_counts = np.zeros((n_blocks, columns), dtype=np.int64)
    for b in prange(n_blocks):
        first = b * BLOCK
        size = min(BLOCK, permutations - first)
        flipped = np.zeros((BLOCK, columns))
        for w in range(n_words):
            start = w * 64
            stop = min(start + 64, n)
            for k in range(size):
                bits = word(key, np.uint64((first + k) * n_words + w))
                acc = flipped[k]
                for i in range(start, stop):
                    bit = float((bits >> np.uint64(i - start)) & np.uint64(1))
                    row = diffs[i]
                    for c in range(columns):
                        acc[c] += row[c] * bit
        for k in range(size):
            for c in range(columns):
                # Flipping the queries in `flipped` turns the sum S into S - 2 * flipped.
                if abs(observed[c] - 2.0 * flipped[k, c]) >= threshold[c]:
                    block_counts[b, c] += 1
    return block_counts.sum(axis=0)  # type: ignore[no-any-return]


def fisher_p_values(
    diffs: NDArray[np.float64], *, permutations: int = 10_000, seed: int = 42
) -> NDArray[np.float64]:
    """Two-sided randomization p-value of every column of `diffs` (queries x columns).

    Column c's p depends only on its own differences, the seed and the number of permutations (not on
    the other columns nor the thread count); a zero difference never changes a sum, so a query that has
    to be left out of one column can be given 0 there.
    """
    d = np.ascontiguousarray(diffs, dtype=np.float64)
    if d.ndim == 1:
        d = d.reshape(-1, 1)
    if d.ndim != 2:
        raise InputError(f"Fisher test: differences must be 1-d or 2-d, got shape {d.shape}")
    if permutations < 1:
        raise InputError(f"Fisher test: permutations must be >= 1, got {permutations}", field="permutations")
    if not np.all(np.isfinite(d)):
        raise InputError("Fisher test: differences contain NaN or infinity")
    tolerance = RELATIVE_TOLERANCE * np.abs(d).sum(axis=0)
    counts: NDArray[np.int64] = _exceed_counts(
        d, stream_key(seed, FISHER_STREAM), int(permutations), tolerance
    )
    return (counts.astype(np.float64) + 1.0) / (permutations + 1.0)


def fisher_test(
    diffs: NDArray[np.float64] | list[float], *, permutations: int = 10_000, seed: int = 42
) -> float:
    """Randomization p-value of one vector of paired differences."""
    return float(
        fisher_p_values(np.asarray(diffs, dtype=np.float64), permutations=permutations, seed=seed)[0]
    )


def exact_permutation_p(diffs: NDArray[np.float64] | list[float]) -> float:
    """The exact two-sided p over all 2^n sign flips (n <= 24); the reference the sampled test estimates.

    The 2^n sums are built by doubling (each difference added and subtracted to every sum so far), so
    memory stays at 2^n floats (128 MiB at n = 24) instead of a 2^n x n sign matrix.
    """
    d = np.asarray(diffs, dtype=np.float64).ravel()
    n = d.size
    if n > 24:
        raise InputError(f"exact permutation p enumerates 2^n sign flips; n = {n} is too large (max 24)")
    if not np.all(np.isfinite(d)):
        raise InputError("exact permutation p: differences contain NaN or infinity")
    sums = np.zeros(1)
    for value in d.tolist():
        sums = np.concatenate((sums + value, sums - value))
    sums = np.abs(sums)
    observed = abs(float(d.sum()))
    tolerance = RELATIVE_TOLERANCE * float(np.abs(d).sum())
    return float(np.count_nonzero(sums >= observed - tolerance) / 2**n)
