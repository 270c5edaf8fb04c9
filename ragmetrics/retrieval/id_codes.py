"""Sorted id vocabularies and per-entry codes, computed over UTF-8 bytes by the `trec_scan` kernels.

Every reader needs the same thing: the distinct ids in code-point order and each entry's index among them.
Sorting a numpy str array of millions of ids is slow (a generic string compare per step); here ids are
sorted by packed 8-byte words of their UTF-8 bytes, whose order is code-point order. TREC files already
are such a buffer; in-memory ids are joined into one with NUL separators (an id never holds a NUL).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._build import Origin
from ragmetrics.retrieval._lazy import numba_for

EMPTY_VOCAB = np.zeros(0, dtype="<U1")


def factorize_tokens(
    buf: NDArray[np.uint8], starts: NDArray[np.int64], lengths: NDArray[np.int64], ascii_only: bool
) -> tuple[NDArray[np.str_], NDArray[np.int64]]:
    """Sorted distinct tokens of `buf` (decoded) and, per token, its index among them."""
    from ragmetrics.retrieval import trec_scan

    if starts.shape[0] == 0:
        return EMPTY_VOCAB, np.zeros(0, dtype=np.int64)
    keys, shared = trec_scan.prefix_words(buf, starts, lengths)
    order = np.argsort(keys).astype(np.int64, copy=False)  # numpy's SIMD sort; ties refined in numba
    codes, firsts = trec_scan.sorted_codes(buf, starts, lengths, keys, shared, order)
    points = trec_scan.code_points(buf, starts[firsts], lengths[firsts], keys[firsts], shared, ascii_only)
    vocab: NDArray[np.str_] = points.view(f"<U{points.shape[1]}").reshape(points.shape[0])
    return vocab, codes


def factorize_strings(
    ids: Sequence[str], origin: Origin, label: str
) -> tuple[NDArray[np.str_], NDArray[np.int64]]:
    """Sorted distinct ids and per-entry codes of a list of str ids; a NUL in an id is an error.

    NUL is refused because numpy's str arrays drop trailing NULs ("d\\x00" would silently become "d"),
    which also makes it a safe separator. Lone surrogates (from JSON "\\ud800") pass through unchanged.
    """
    n = len(ids)
    if n == 0:
        return EMPTY_VOCAB, np.zeros(0, dtype=np.int64)
    data = "\x00".join(ids).encode("utf-8", "surrogatepass")
    with numba_for(n):
        return _factorize_joined(data, ids, origin, label)


def _factorize_joined(
    data: bytes, ids: Sequence[str], origin: Origin, label: str
) -> tuple[NDArray[np.str_], NDArray[np.int64]]:
    n = len(ids)
    buf = np.frombuffer(data, dtype=np.uint8)
    separators = np.flatnonzero(buf == 0)
    if separators.shape[0] != n - 1:
        i = next(i for i, x in enumerate(ids) if "\x00" in x)
        raise origin.error(f"{label} {ids[i]!r} contains a NUL character", i, field=label)
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    starts[1:] = separators + 1
    ends = np.empty(n, dtype=np.int64)
    ends[:-1] = separators
    ends[-1] = buf.shape[0]
    return factorize_tokens(buf, starts, ends - starts, data.isascii())
