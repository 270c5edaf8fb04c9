"""trec_eval's further measures: interpolated precision (iprec, 11pt_avg), geometric aggregates
(gm_map, gm_bpref), set_map, Rprec_mult and the counts (num_ret, num_rel, num_q).
"""

from __future__ import annotations

from ragmetrics.retrieval.registry.spec import Kind, MetricSpec

SPECS: tuple[MetricSpec, ...] = (
    MetricSpec(
        name="iprec",
        kind=Kind.IPREC,
        description="Interpolated precision at a recall level: the highest precision at any rank where "
        "recall is at least that level.",
        formula="iprec@r = max_{j >= rank of the c-th relevant document} hits@j / j with c = round(r R); 0 "
        "when fewer than c relevant documents are retrieved",
        citation="Manning, Raghavan and Schütze, 'Introduction to Information Retrieval', 2008, ch. 8.4; "
        "trec_eval's iprec_at_recall",
        cutoff=False,
        budget=False,
        point="recall",
        aliases=("iprec_at_recall", "ircl_prn"),
        trec_eval="iprec_at_recall_r",
        notes="Written iprec@0.3 (or trec_eval's iprec_at_recall_0.30); c rounds half away from zero, as "
        "trec_eval 10 does. The precision-recall plot (`ragmetrics plot ... --pr`) draws these points.",
    ),
    MetricSpec(
        name="11pt_avg",
        kind=Kind.ELEVEN_POINT,
        description="Interpolated precision averaged over the 11 recall levels 0.0, 0.1, ..., 1.0.",
        formula="11pt_avg = 1/11 sum_{r in 0, 0.1, ..., 1} iprec@r",
        citation="Salton and McGill, 'Introduction to Modern Information Retrieval', 1983; trec_eval's 11pt_avg",
        cutoff=False,
        budget=False,
        aliases=("eleven_point", "11pt"),
        trec_eval="11pt_avg",
    ),
    MetricSpec(
        name="gm_map",
        kind=Kind.GM_MAP,
        description="Average precision, aggregated by the geometric mean over queries: rewards improving "
        "the worst queries.",
        formula="gm_map = exp(1/Q sum_q log(max(AP_q, 1e-5))); per query the value is AP",
        citation="Robertson, 'On GMAP: and other transformations', CIKM 2006",
        cutoff=False,
        budget=False,
        aliases=("gmap",),
        trec_eval="gm_map",
        aggregate="geometric",
        notes="Per-query values (and the paired tests of comparisons) are the queries' AP; only the aggregate "
        "is geometric.",
    ),
    MetricSpec(
        name="gm_bpref",
        kind=Kind.GM_BPREF,
        description="bpref, aggregated by the geometric mean over queries.",
        formula="gm_bpref = exp(1/Q sum_q log(max(bpref_q, 1e-5))); per query the value is bpref",
        citation="Robertson, 'On GMAP: and other transformations', CIKM 2006; trec_eval's gm_bpref",
        cutoff=False,
        budget=False,
        trec_eval="gm_bpref",
        aggregate="geometric",
    ),
    MetricSpec(
        name="set_map",
        kind=Kind.SET_MAP,
        description="Set-based average precision: precision times recall of the whole retrieved set.",
        formula="set_map = hits^2 / (n R) (n = documents retrieved); 0 when n = 0 or R = 0",
        citation="trec_eval's set_map",
        cutoff=False,
        budget=False,
        trec_eval="set_map",
    ),
    MetricSpec(
        name="rprec_mult",
        kind=Kind.RPREC_MULT,
        description="Precision at a multiple of R: at rank floor(m R + 0.9).",
        formula="rprec_mult@m = hits@c / c with c = floor(m R + 0.9); 0 when c = 0",
        citation="trec_eval's Rprec_mult",
        cutoff=False,
        budget=False,
        point="multiple",
        trec_eval="Rprec_mult_m",
        notes="Written rprec_mult@0.5 (or trec_eval's Rprec_mult_0.50); rprec_mult@1 is r-precision whenever "
        "R >= 1.",
    ),
    MetricSpec(
        name="num_ret",
        kind=Kind.NUM_RET,
        description="Number of documents retrieved; the run's figure is the sum over queries.",
        formula="num_ret = n per query; aggregate = sum over queries",
        citation="trec_eval's num_ret",
        cutoff=False,
        budget=False,
        trec_eval="num_ret",
        aggregate="sum",
    ),
    MetricSpec(
        name="num_rel",
        kind=Kind.NUM_REL,
        description="Number of relevant documents in the qrels; the run's figure is the sum over queries.",
        formula="num_rel = R per query; aggregate = sum over queries",
        citation="trec_eval's num_rel",
        cutoff=False,
        budget=False,
        trec_eval="num_rel",
        aggregate="sum",
        notes="With -c (query_set='qrels') trec_eval sums grades > 0 whatever -l; here the sum of the "
        "per-query R at the relevance level, which equals it at level 1.",
    ),
    MetricSpec(
        name="num_q",
        kind=Kind.NUM_Q,
        description="Number of queries scored (1 per query; the run's figure is their count).",
        formula="num_q = 1 per query; aggregate = sum over queries",
        citation="trec_eval's num_q",
        cutoff=False,
        budget=False,
        trec_eval="num_q",
        aggregate="sum",
    ),
)
