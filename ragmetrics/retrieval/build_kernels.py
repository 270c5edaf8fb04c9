"""Numba kernels of the container builder: group entries by query, catch duplicates, order each query.

A counting sort by query and a sort per query replace three global argsorts of a million keys. They run on
one thread on purpose: a parallel kernel would start numba's thread pool (GNU OpenMP here) while merely
loading data, and a process that has started GNU OpenMP can no longer `fork` (multiprocessing's default on
Linux); loading containers in a parent that forks workers must keep working. A million entries sort in
~0.04 s this way.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel

_INSERTION_RUN = 16


@kernel
def group_by_query(
    query_codes: NDArray[np.int64], doc_codes: NDArray[np.int64], nq: int, nd: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], int, int]:
    """Entries grouped by query (input order kept within a query), the CSR offsets, and the first duplicate.

    The duplicate is the first entry, scanning queries in code order and each query's entries in input
    order, whose document already appeared for that query; returned as (earlier entry, entry), or (-1, -1).
    """
    n = query_codes.shape[0]
    offsets = np.zeros(nq + 1, dtype=np.int64)
    for q in query_codes:
        offsets[q + 1] += 1
    for q in range(nq):
        offsets[q + 1] += offsets[q]
    fill = offsets[:-1].copy()
    grouped = np.empty(n, dtype=np.int64)
    for i in range(n):
        q = query_codes[i]
        grouped[fill[q]] = i
        fill[q] += 1
    last_seen = np.full(max(nd, 1), -1, dtype=np.int64)
    for position in range(n):
        entry = grouped[position]
        earlier = last_seen[doc_codes[entry]]
        if earlier >= 0 and query_codes[earlier] == query_codes[entry]:
            return grouped, offsets, earlier, entry
        last_seen[doc_codes[entry]] = entry
    return grouped, offsets, -1, -1


@kernel
def _before(a: int, b: int, scores: NDArray[np.float64], doc_codes: NDArray[np.int64], ranked: bool) -> bool:
    """Whether entry a comes before entry b: score descending then document descending, or document ascending.

    -0.0 == 0.0, so signed zeros tie, as in trec_eval.
    """
    if ranked:
        if scores[a] != scores[b]:
            return bool(scores[a] > scores[b])
        return bool(doc_codes[a] > doc_codes[b])
    return bool(doc_codes[a] < doc_codes[b])


@kernel
def _sort_entries(
    entries: NDArray[np.int64],
    scratch: NDArray[np.int64],
    scores: NDArray[np.float64],
    doc_codes: NDArray[np.int64],
    ranked: bool,
) -> None:
    """Sort one query's entries in place: insertion sort of short runs, then bottom-up merges.

    Documents are distinct within a query (checked before), so the order is total and stability moot.
    """
    m = entries.shape[0]
    for lo in range(0, m, _INSERTION_RUN):
        hi = min(lo + _INSERTION_RUN, m)
        for i in range(lo + 1, hi):
            entry = entries[i]
            j = i - 1
            while j >= lo and _before(entry, entries[j], scores, doc_codes, ranked):
                entries[j + 1] = entries[j]
                j -= 1
            entries[j + 1] = entry
    source = entries
    target = scratch[:m]
    in_scratch = False
    width = _INSERTION_RUN
    while width < m:
        for lo in range(0, m, 2 * width):
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            i = lo
            j = mid
            for k in range(lo, hi):
                if j >= hi or (i < mid and not _before(source[j], source[i], scores, doc_codes, ranked)):
                    target[k] = source[i]
                    i += 1
                else:
                    target[k] = source[j]
                    j += 1
        source, target = target, source
        in_scratch = not in_scratch
        width *= 2
    if in_scratch:
        entries[:] = source


@kernel
def _longest(offsets: NDArray[np.int64]) -> int:
    longest = 0
    for q in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[q + 1] - offsets[q])
    return longest


@kernel
def order_queries(
    grouped: NDArray[np.int64],
    offsets: NDArray[np.int64],
    scores: NDArray[np.float64],
    doc_codes: NDArray[np.int64],
    ranked: bool,
) -> None:
    """Sort each query's slice of `grouped` in place (see `_before` for the order)."""
    scratch = np.empty(_longest(offsets), dtype=np.int64)
    for q in range(offsets.shape[0] - 1):
        _sort_entries(grouped[offsets[q] : offsets[q + 1]], scratch, scores, doc_codes, ranked)
