"""Every requested metric for every query, from one aligned grade vector per query.

Per query the run's ranking (already ordered: score descending, ties by document id descending) is matched
once against the query's qrels by binary search, giving the grades in rank order; every metric then reads
that vector through its family's kernel. The dispatch from a metric's kind to its kernel is here and
nowhere else; the kinds are `retrieval.registry.spec.Kind`.

Arrays travel in three tuples, the same for every function here:
- qrels = (offsets, doc codes, grades): the qrels' CSR rows, codes ascending within a row;
- run = (offsets, doc codes, doc map, utilities): the run's CSR rows in rank order, the map from the run's doc
  codes to the qrels' (-1: not in the qrels), and each entry's utility u = 1 - p_abstain for udcg (empty
  when no udcg is asked for; only the entries within a udcg cutoff are read);
- plan = (kinds, cutoffs, levels, params, weights): one entry per requested metric (cutoff 0: none; params:
  rbp's p, iprec's recall level, rprec_mult's multiple, err's g_max; weights [metrics, 2]: udcg's relevant
  and irrelevant weights);
- depths [queries, metrics]: a per-query count cutoff that replaces the plan's (a token budget turned into
  the number of passages that fit, `retrieval.budget`); -1 keeps the plan's, 0 means nothing fits (score 0).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel, parallel_kernel, prange
from ragmetrics.retrieval.kernels.bpref import bpref
from ragmetrics.retrieval.kernels.cascade import err, nerr
from ragmetrics.retrieval.kernels.gain import dcg, ndcg
from ragmetrics.retrieval.kernels.inferred import inferred_ap
from ragmetrics.retrieval.kernels.interpolated import eleven_point_at, interpolated_at, precision_curve
from ragmetrics.retrieval.kernels.rank import average_precision, reciprocal_rank
from ragmetrics.retrieval.kernels.rbp import rbp, rbp_residual
from ragmetrics.retrieval.kernels.sets import (
    judged_share,
    r_precision,
    r_precision_multiple,
    relevant_prefix,
    set_based,
    set_map,
)
from ragmetrics.retrieval.kernels.utility import udcg
from ragmetrics.retrieval.registry.spec import Kind

Ints = NDArray[np.int64]
QrelsArrays = tuple[Ints, Ints, Ints]
Floats = NDArray[np.float64]
RunArrays = tuple[Ints, Ints, NDArray[np.int32], Floats]
Plan = tuple[Ints, Ints, Ints, Floats, Floats]

F1 = int(Kind.F1)
R_PRECISION = int(Kind.R_PRECISION)
BPREF = int(Kind.BPREF)
RBP = int(Kind.RBP)
MRR = int(Kind.MRR)
MAP = int(Kind.MAP)
DCG = int(Kind.DCG)
NDCG = int(Kind.NDCG)
DCG_BURGES = int(Kind.DCG_BURGES)
NDCG_BURGES = int(Kind.NDCG_BURGES)
JUDGED = int(Kind.JUDGED)
INFAP = int(Kind.INFAP)
RBP_RESID = int(Kind.RBP_RESID)
IPREC = int(Kind.IPREC)
ELEVEN_POINT = int(Kind.ELEVEN_POINT)
GM_MAP = int(Kind.GM_MAP)
GM_BPREF = int(Kind.GM_BPREF)
SET_MAP = int(Kind.SET_MAP)
RPREC_MULT = int(Kind.RPREC_MULT)
NUM_RET = int(Kind.NUM_RET)
NUM_REL = int(Kind.NUM_REL)
NUM_Q = int(Kind.NUM_Q)
ERR = int(Kind.ERR)
NERR = int(Kind.NERR)
UDCG = int(Kind.UDCG)

NOT_IN_QRELS = -(1 << 40)
"""Grade of a retrieved document that the qrels of its query do not list: unjudged, gain 0, and outside
the pool (infAP tells it from a negative qrels grade, which marks a document pooled but not judged). Every
other kernel treats any grade below 0 alike."""


@kernel
def find(codes: Ints, lo: int, hi: int, code: int) -> int:
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


@kernel
def score_query(
    ranked: Ints, useful: Floats, judged: Ints, plan: Plan, cut_at: Ints, out: NDArray[np.float64]
) -> None:
    """Fill `out[j]` with metric j for one query: `ranked` = grades in rank order, `useful` = the passages'
    utilities in rank order (udcg), `judged` = qrels grades, `cut_at[j]` a per-query cutoff replacing the
    plan's when >= 0 (module doc)."""
    kinds, cutoffs, levels, params, weights = plan
    n = ranked.shape[0]
    max_grade = 0
    for grade in judged:
        max_grade = max(max_grade, grade)
    ideal = np.empty(0, dtype=np.int64)
    have_ideal = False
    # Per relevance level, computed when a metric first needs it: the query's R and N, and the interpolated
    # precision curve (every recall point of iprec and 11pt_avg is then a lookup).
    counted_level = -1
    n_rel = 0
    n_nonrel = 0
    prefix = np.zeros(n + 1, dtype=np.int64)
    # One result of AP and of bpref per (level, depth): gm_map and map at the same depth, or gm_bpref and
    # bpref, are the same computation.
    ap_key = (-1, -1)
    ap_value = 0.0
    bpref_key = (-1, -1)
    bpref_value = 0.0
    curve_level = -1
    curve = np.empty(n, dtype=np.float64)
    relevant_at = np.empty(n, dtype=np.int64)
    curve_hits = 0
    for j in range(kinds.shape[0]):
        kind = kinds[j]
        k = cutoffs[j]
        if cut_at[j] >= 0:
            if cut_at[j] == 0:  # not even the first passage fits the budget: nothing retrieved
                out[j] = 0.0
                continue
            k = cut_at[j]
        level = levels[j]
        depth = n if k == 0 or k > n else k
        if level != counted_level:
            counted_level = level
            n_rel = 0
            n_nonrel = 0
            for grade in judged:
                if grade >= level:
                    n_rel += 1
                elif grade >= 0:
                    n_nonrel += 1
            relevant_prefix(ranked, n, level, prefix)
        if kind in (IPREC, ELEVEN_POINT) and level != curve_level:
            curve_level = level
            curve_hits = precision_curve(ranked, n, level, curve, relevant_at)
        # The O(1) lookups first (the set-based kinds are codes 0..F1, the most often requested): a metric
        # meets as few comparisons of this chain as possible.
        if kind <= F1:
            out[j] = set_based(kind, prefix, depth, k if k > 0 else n, n_rel)
        elif kind == IPREC:
            out[j] = interpolated_at(curve, relevant_at, curve_hits, n, n_rel, params[j])
        elif kind == RPREC_MULT:
            out[j] = r_precision_multiple(prefix, n, n_rel, params[j])
        elif kind in (NDCG, NDCG_BURGES, NERR):
            if not have_ideal:
                ideal = np.sort(judged)[::-1]
                have_ideal = True
            if kind == NERR:
                out[j] = nerr(ranked, ideal, depth, k, level, params[j])
            else:
                out[j] = ndcg(ranked, ideal, depth, k, level, kind == NDCG_BURGES)
        elif kind == ERR:
            out[j] = err(ranked, depth, level, params[j])
        elif kind in (DCG, DCG_BURGES):
            out[j] = dcg(ranked, depth, level, kind == DCG_BURGES, 0)
        elif kind in (BPREF, GM_BPREF):
            if bpref_key != (level, depth):
                bpref_key = (level, depth)
                bpref_value = bpref(ranked, depth, level, n_rel, n_nonrel)
            out[j] = bpref_value
        elif kind == R_PRECISION:
            out[j] = r_precision(prefix, n, n_rel)
        elif kind == RBP:
            out[j] = rbp(ranked, depth, level, params[j], max_grade)
        elif kind == MRR:
            out[j] = reciprocal_rank(ranked, depth, level)
        elif kind in (MAP, GM_MAP):
            if ap_key != (level, depth):
                ap_key = (level, depth)
                ap_value = average_precision(ranked, depth, level, n_rel)
            out[j] = ap_value
        elif kind == RBP_RESID:
            out[j] = rbp_residual(ranked, depth, params[j])
        elif kind == INFAP:
            out[j] = inferred_ap(ranked, depth, level, n_rel, NOT_IN_QRELS)
        elif kind == ELEVEN_POINT:
            out[j] = eleven_point_at(curve, relevant_at, curve_hits, n, n_rel)
        elif kind == SET_MAP:
            out[j] = set_map(prefix, n, n_rel)
        elif kind == NUM_RET:
            out[j] = float(n)
        elif kind == NUM_REL:
            out[j] = float(n_rel)
        elif kind == NUM_Q:
            out[j] = 1.0
        elif kind == UDCG:
            out[j] = udcg(ranked, useful, depth, level, weights[j, 0], weights[j, 1])
        else:  # JUDGED
            out[j] = judged_share(ranked, depth, depth)


@kernel
def score_row(
    i: int,
    qrels: QrelsArrays,
    run: RunArrays,
    qrels_rows: Ints,
    run_rows: Ints,
    plan: Plan,
    depths: NDArray[np.int64],
    out: NDArray[np.float64],
) -> None:
    """Align query i's ranking with its qrels (binary search per document), then score it into out[i]."""
    qrels_offsets, qrels_codes, qrels_grades = qrels
    run_offsets, run_codes, doc_map, utilities = run
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
    useful = utilities[r_lo:r_hi]
    if q_hi > q_lo:
        for pos in range(r_hi - r_lo):
            code = doc_map[run_codes[r_lo + pos]]
            at = find(qrels_codes, q_lo, q_hi, code) if code >= 0 else -1
            ranked[pos] = qrels_grades[at] if at >= 0 else NOT_IN_QRELS
    else:
        ranked[:] = NOT_IN_QRELS
    score_query(ranked, useful, judged, plan, depths[i], out[i])


@parallel_kernel
def score_all_parallel(
    qrels: QrelsArrays,
    run: RunArrays,
    qrels_rows: Ints,
    run_rows: Ints,
    plan: Plan,
    depths: NDArray[np.int64],
) -> NDArray[np.float64]:
    """Every query's scores, queries spread over numba's threads (a plain loop in Python)."""
    out = np.zeros((qrels_rows.shape[0], plan[0].shape[0]), dtype=np.float64)
    for i in prange(qrels_rows.shape[0]):
        score_row(i, qrels, run, qrels_rows, run_rows, plan, depths, out)
    return out


@kernel
def score_all_serial(
    qrels: QrelsArrays,
    run: RunArrays,
    qrels_rows: Ints,
    run_rows: Ints,
    plan: Plan,
    depths: NDArray[np.int64],
) -> NDArray[np.float64]:
    """Every query's scores on the calling thread: mid-sized inputs skip the thread pool's start-up."""
    out = np.zeros((qrels_rows.shape[0], plan[0].shape[0]), dtype=np.float64)
    for i in range(qrels_rows.shape[0]):
        score_row(i, qrels, run, qrels_rows, run_rows, plan, depths, out)
    return out
