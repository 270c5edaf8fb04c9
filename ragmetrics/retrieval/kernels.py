"""Numba kernels: every requested metric for every query, one aligned grade vector per query.

Per query the run's ranking (already ordered: score descending, ties by document id descending) is matched
once against the query's qrels by binary search, giving the vector of grades in rank order; every metric then
reads that vector. Queries run in parallel (`prange`). No numba global setting is touched.

Conventions are documented in docs/metrics.md; the metric codes are `ragmetrics.retrieval.metrics.Kind`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numpy.typing import NDArray

# Must equal ragmetrics.retrieval.metrics.Kind; plain ints so numba sees compile-time constants.
HITS = 0
HIT_RATE = 1
PRECISION = 2
RECALL = 3
F1 = 4
R_PRECISION = 5
BPREF = 6
RBP = 7
MRR = 8
MAP = 9
DCG = 10
NDCG = 11
DCG_BURGES = 12
NDCG_BURGES = 13

# Grade of a retrieved document that the qrels of its query do not list: unjudged, gain 0.
UNJUDGED = -1


@njit(cache=True, nogil=True)
def _find(codes: NDArray[np.int64], lo: int, hi: int, code: int) -> int:
    """Index of `code` in the ascending slice codes[lo:hi], or -1."""
    while lo < hi:
        mid = (lo + hi) >> 1
        value = codes[mid]
        if value < code:
            lo = mid + 1
        elif value > code:
            hi = mid
        else:
            return mid
    return -1


@njit(cache=True, nogil=True)
def _gain(grade: int, level: int, burges: bool) -> float:
    if grade < level or grade <= 0:
        return 0.0
    if burges:
        return 2.0**grade - 1.0
    return float(grade)


@njit(cache=True, nogil=True)
def _dcg(grades: NDArray[np.int64], depth: int, level: int, burges: bool) -> float:
    total = 0.0
    for i in range(depth):
        gain = _gain(grades[i], level, burges)
        if gain != 0.0:
            total += gain / np.log2(i + 2.0)
    return total


@njit(cache=True, nogil=True)
def _bpref(grades: NDArray[np.int64], depth: int, level: int, n_rel: int, n_nonrel: int) -> float:
    if n_rel == 0:
        return 0.0
    denominator = float(min(n_rel, n_nonrel))
    nonrel_above = 0
    total = 0.0
    for i in range(depth):
        grade = grades[i]
        if grade < 0:
            continue
        if grade < level:
            nonrel_above += 1
        elif nonrel_above > 0:
            total += 1.0 - min(nonrel_above, n_rel) / denominator
        else:
            total += 1.0
    return total / n_rel


@njit(cache=True, nogil=True)
def _score_query(
    ranked: NDArray[np.int64],
    judged: NDArray[np.int64],
    kinds: NDArray[np.int64],
    cutoffs: NDArray[np.int64],
    levels: NDArray[np.int64],
    params: NDArray[np.float64],
    out: NDArray[np.float64],
) -> None:
    """Fill `out[j]` with metric j for one query: `ranked` = grades in rank order, `judged` = qrels grades."""
    n = ranked.shape[0]
    max_grade = 0
    for grade in judged:
        max_grade = max(max_grade, grade)
    ideal = np.empty(0, dtype=np.int64)
    have_ideal = False
    for j in range(kinds.shape[0]):
        kind = kinds[j]
        k = cutoffs[j]
        level = levels[j]
        depth = n if k == 0 or k > n else k
        n_rel = 0
        n_nonrel = 0
        for grade in judged:
            if grade >= level:
                n_rel += 1
            elif grade >= 0:
                n_nonrel += 1

        if kind in (NDCG, NDCG_BURGES):
            if not have_ideal:
                ideal = np.sort(judged)[::-1].copy()
                have_ideal = True
            burges = kind == NDCG_BURGES
            ideal_depth = ideal.shape[0] if k == 0 or k > ideal.shape[0] else k
            best = _dcg(ideal, ideal_depth, level, burges)
            out[j] = _dcg(ranked, depth, level, burges) / best if best > 0.0 else 0.0
        elif kind in (DCG, DCG_BURGES):
            out[j] = _dcg(ranked, depth, level, kind == DCG_BURGES)
        elif kind == BPREF:
            out[j] = _bpref(ranked, depth, level, n_rel, n_nonrel)
        elif kind == R_PRECISION:
            top = min(n, n_rel)
            hits = 0
            for i in range(top):
                if ranked[i] >= level:
                    hits += 1
            out[j] = hits / n_rel if n_rel > 0 else 0.0
        elif kind == RBP:
            p = params[j]
            weight = 1.0
            total = 0.0
            scale = float(max_grade) if max_grade > 1 else 1.0
            for i in range(depth):
                grade = ranked[i]
                if grade >= level and grade > 0:
                    total += weight * (grade / scale)
                weight *= p
            out[j] = (1.0 - p) * total
        elif kind == MRR:
            value = 0.0
            for i in range(depth):
                if ranked[i] >= level:
                    value = 1.0 / (i + 1.0)
                    break
            out[j] = value
        elif kind == MAP:
            hits = 0
            total = 0.0
            for i in range(depth):
                if ranked[i] >= level:
                    hits += 1
                    total += hits / (i + 1.0)
            out[j] = total / n_rel if n_rel > 0 else 0.0
        else:
            hits = 0
            for i in range(depth):
                if ranked[i] >= level:
                    hits += 1
            retrieved = k if k > 0 else n
            precision = hits / retrieved if retrieved > 0 else 0.0
            recall = hits / n_rel if n_rel > 0 else 0.0
            if kind == HITS:
                out[j] = float(hits)
            elif kind == HIT_RATE:
                out[j] = 1.0 if hits > 0 else 0.0
            elif kind == PRECISION:
                out[j] = precision
            elif kind == RECALL:
                out[j] = recall
            elif kind == F1:
                both = precision + recall
                out[j] = 2.0 * precision * recall / both if both > 0.0 else 0.0
            else:
                out[j] = np.nan  # unreachable for a validated kind; evaluate() rejects NaN


@njit(cache=True, nogil=True)
def _score_row(
    i: int,
    qrels_offsets: NDArray[np.int64],
    qrels_codes: NDArray[np.int64],
    qrels_grades: NDArray[np.int64],
    run_offsets: NDArray[np.int64],
    run_codes: NDArray[np.int64],
    doc_map: NDArray[np.int32],
    qrels_rows: NDArray[np.int64],
    run_rows: NDArray[np.int64],
    kinds: NDArray[np.int64],
    cutoffs: NDArray[np.int64],
    levels: NDArray[np.int64],
    params: NDArray[np.float64],
    out: NDArray[np.float64],
) -> None:
    """Align query i's ranking with its qrels (binary search per document), then score it into out[i]."""
    row = qrels_rows[i]
    q_lo = qrels_offsets[row]
    q_hi = qrels_offsets[row + 1]
    judged = qrels_grades[q_lo:q_hi]
    run_row = run_rows[i]
    r_lo = 0
    r_hi = 0
    if run_row >= 0:
        r_lo = run_offsets[run_row]
        r_hi = run_offsets[run_row + 1]
    ranked = np.empty(r_hi - r_lo, dtype=np.int64)
    if q_hi > q_lo:
        for pos in range(r_hi - r_lo):
            code = doc_map[run_codes[r_lo + pos]]
            at = _find(qrels_codes, q_lo, q_hi, code) if code >= 0 else -1
            ranked[pos] = qrels_grades[at] if at >= 0 else UNJUDGED
    else:
        ranked[:] = UNJUDGED
    _score_query(ranked, judged, kinds, cutoffs, levels, params, out[i])


@njit(cache=True, parallel=True)
def score_queries_parallel(
    qrels_offsets: NDArray[np.int64],
    qrels_codes: NDArray[np.int64],
    qrels_grades: NDArray[np.int64],
    run_offsets: NDArray[np.int64],
    run_codes: NDArray[np.int64],
    doc_map: NDArray[np.int32],
    qrels_rows: NDArray[np.int64],
    run_rows: NDArray[np.int64],
    kinds: NDArray[np.int64],
    cutoffs: NDArray[np.int64],
    levels: NDArray[np.int64],
    params: NDArray[np.float64],
) -> NDArray[np.float64]:
    """`score_queries` with queries spread over numba's threads."""
    out = np.zeros((qrels_rows.shape[0], kinds.shape[0]), dtype=np.float64)
    for i in prange(qrels_rows.shape[0]):
        _score_row(
            i,
            qrels_offsets,
            qrels_codes,
            qrels_grades,
            run_offsets,
            run_codes,
            doc_map,
            qrels_rows,
            run_rows,
            kinds,
            cutoffs,
            levels,
            params,
            out,
        )
    return out


@njit(cache=True, nogil=True)
def score_queries_serial(
    qrels_offsets: NDArray[np.int64],
    qrels_codes: NDArray[np.int64],
    qrels_grades: NDArray[np.int64],
    run_offsets: NDArray[np.int64],
    run_codes: NDArray[np.int64],
    doc_map: NDArray[np.int32],
    qrels_rows: NDArray[np.int64],
    run_rows: NDArray[np.int64],
    kinds: NDArray[np.int64],
    cutoffs: NDArray[np.int64],
    levels: NDArray[np.int64],
    params: NDArray[np.float64],
) -> NDArray[np.float64]:
    """`score_queries` on the calling thread: small inputs skip the thread pool's start-up and hand-off."""
    out = np.zeros((qrels_rows.shape[0], kinds.shape[0]), dtype=np.float64)
    for i in range(qrels_rows.shape[0]):
        _score_row(
            i,
            qrels_offsets,
            qrels_codes,
            qrels_grades,
            run_offsets,
            run_codes,
            doc_map,
            qrels_rows,
            run_rows,
            kinds,
            cutoffs,
            levels,
            params,
            out,
        )
    return out


# Below this many run entries the serial kernel is faster than waking the thread pool.
PARALLEL_MIN_ENTRIES = 20_000


def score_queries(
    qrels_offsets: NDArray[np.int64],
    qrels_codes: NDArray[np.int64],
    qrels_grades: NDArray[np.int64],
    run_offsets: NDArray[np.int64],
    run_codes: NDArray[np.int64],
    doc_map: NDArray[np.int32],
    qrels_rows: NDArray[np.int64],
    run_rows: NDArray[np.int64],
    kinds: NDArray[np.int64],
    cutoffs: NDArray[np.int64],
    levels: NDArray[np.int64],
    params: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Scores [len(qrels_rows), len(kinds)] of the queries `qrels_rows` (qrels CSR rows).

    `run_rows[i]` is the run's CSR row of that query, -1 if the run lacks it (an empty ranking);
    `doc_map` translates the run's document codes `run_codes` to the qrels' codes (-1: not in the qrels).
    Large inputs run in parallel over queries, small ones serially.
    """
    kernel = score_queries_parallel if run_codes.shape[0] >= PARALLEL_MIN_ENTRIES else score_queries_serial
    result: NDArray[np.float64] = kernel(
        qrels_offsets,
        qrels_codes,
        qrels_grades,
        run_offsets,
        run_codes,
        doc_map,
        qrels_rows,
        run_rows,
        kinds,
        cutoffs,
        levels,
        params,
    )
    return result


@njit(cache=True, nogil=True)
def _compare_rows(a: NDArray[np.uint32], i: int, b: NDArray[np.uint32], j: int) -> int:
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


@njit(cache=True, nogil=True)
def match_sorted_rows(needles: NDArray[np.uint32], haystack: NDArray[np.uint32]) -> NDArray[np.int32]:
    """For each row of the sorted `needles`, its index in the sorted `haystack`, or -1: one merge pass.

    int32 keeps the map small: the kernels read it at random, once per run entry.
    """
    out = np.full(needles.shape[0], -1, dtype=np.int32)
    j = 0
    for i in range(needles.shape[0]):
        while j < haystack.shape[0] and _compare_rows(haystack, j, needles, i) < 0:
            j += 1
        if j == haystack.shape[0]:
            break
        if _compare_rows(haystack, j, needles, i) == 0:
            out[i] = j
    return out
