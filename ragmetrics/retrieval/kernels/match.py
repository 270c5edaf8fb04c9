"""Matching two sorted id vocabularies: the run's document codes translated to the qrels' codes."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel


@kernel
def compare_rows(a: NDArray[np.uint32], i: int, b: NDArray[np.uint32], j: int) -> int:
    """Order of the zero-padded code-point rows a[i] and b[j] (widths may differ): -1, 0 or 1."""
    common = min(a.shape[1], b.shape[1])
    for c in range(common):
        x = a[i, c]
        y = b[j, c]
        if x != y:
            return -1 if x < y else 1
    for c in range(common, a.shape[1]):
        if a[i, c] != 0:
            return 1
    for c in range(common, b.shape[1]):
        if b[j, c] != 0:
            return -1
    return 0


@kernel
def match_sorted_rows(needles: NDArray[np.uint32], haystack: NDArray[np.uint32]) -> NDArray[np.int32]:
    """For each row of the sorted `needles`, its index in the sorted `haystack`, or -1: one merge pass.

    int32 keeps the map small: the kernels read it at random, once per run entry.
    """
    out = np.full(needles.shape[0], -1, dtype=np.int32)
    j = 0
    for i in range(needles.shape[0]):
        while j < haystack.shape[0] and compare_rows(haystack, j, needles, i) < 0:
            j += 1
        if j == haystack.shape[0]:
            break
        if compare_rows(haystack, j, needles, i) == 0:
            out[i] = j
    return out
