"""Set measures: how many of the top k documents are relevant (hits, hit rate, precision,
recall, F1, R-precision).
"""

from __future__ import annotations

from ragmetrics.retrieval.registry.spec import Kind, MetricSpec

SPECS: tuple[MetricSpec, ...] = (
    MetricSpec(
        name="hits",
        kind=Kind.HITS,
        description="Number of relevant documents retrieved (in the top k).",
        formula="hits@k = |{i <= k : rel_i}|",
        citation="-",
        aliases=("num_rel_ret",),
        trec_eval="num_rel_ret (no cutoff)",
        ranx="hits",
        notes="The aggregate is the mean over queries; trec_eval's num_rel_ret prints the sum.",
    ),
    MetricSpec(
        name="hit_rate",
        kind=Kind.HIT_RATE,
        description="1 if at least one relevant document is retrieved (in the top k), else 0.",
        formula="hit_rate@k = [hits@k > 0]",
        citation="-",
        aliases=("success", "hit-rate", "hitrate"),
        trec_eval="success_k",
        ranx="hit_rate",
    ),
    MetricSpec(
        name="precision",
        kind=Kind.PRECISION,
        description="Fraction of the retrieved documents (the top k) that are relevant.",
        formula="precision@k = hits@k / k; without a cutoff hits / n (n = documents retrieved)",
        citation="-",
        aliases=("p", "set_p"),
        trec_eval="P_k (set_P without a cutoff)",
        ranx="precision",
        notes="With a cutoff the denominator is k even when fewer than k documents were retrieved.",
    ),
    MetricSpec(
        name="recall",
        kind=Kind.RECALL,
        description="Fraction of the relevant documents that are retrieved (in the top k).",
        formula="recall@k = hits@k / R (R = relevant documents in the qrels; 0 when R = 0)",
        citation="-",
        aliases=("r", "set_recall"),
        trec_eval="recall_k (set_recall without a cutoff)",
        ranx="recall",
    ),
    MetricSpec(
        name="f1",
        kind=Kind.F1,
        description="Harmonic mean of precision and recall (at k).",
        formula="f1@k = 2 P R / (P + R), 0 when P + R = 0",
        citation="van Rijsbergen, 'Information Retrieval', 2nd ed., Butterworths 1979",
        aliases=("f", "set_f"),
        trec_eval="set_F (without a cutoff; beta = 1)",
        ranx="f1",
    ),
    MetricSpec(
        name="r-precision",
        kind=Kind.R_PRECISION,
        description="Precision at rank R, the number of relevant documents of the query.",
        formula="r-precision = hits@R / R (0 when R = 0)",
        citation="Buckley and Voorhees, 'Retrieval System Evaluation', in TREC, MIT Press 2005",
        cutoff=False,
        budget=False,
        aliases=("rprec", "r_precision", "rprecision"),
        trec_eval="Rprec",
        ranx="r-precision",
    ),
)
