"""Measures for incomplete judgments: how much of a ranking is judged (judged@k), inferred AP
from a judged sample of the pool, and rbp's residual.
"""

from __future__ import annotations

from ragmetrics.retrieval.registry.spec import Kind, MetricSpec

SPECS: tuple[MetricSpec, ...] = (
    MetricSpec(
        name="judged",
        kind=Kind.JUDGED,
        description="Fraction of the retrieved documents (the top k) that the qrels judge, whatever the grade: "
        "how far a metric on this run rests on judgments rather than on unjudged documents counted as "
        "non-relevant.",
        formula="judged@k = |{i <= k : d_i in qrels}| / min(k, n) (n = documents retrieved); 0 when n = 0",
        citation="ir_measures' Judged@k (MacAvaney and others, 'Streamlining evaluation with ir-measures', ECIR 2022)",
        aliases=("judged_k",),
        ranx=None,
        notes="Relevance levels (-lN) do not apply: a judged non-relevant document counts. The denominator is "
        "what was retrieved of the top k, as ir_measures' Judged@k (a ranking of 4 judged documents is fully "
        "judged at @10). A negative grade (pooled, not judged) does not count as judged; ir_measures counts "
        "every document the qrels list.",
    ),
    MetricSpec(
        name="infap",
        kind=Kind.INFAP,
        description="Inferred average precision: average precision estimated from a judged random sample of "
        "the pool.",
        formula="infap = 1/R sum over judged relevant retrieved d at rank k of (1 if k = 1, else 1/k + "
        "(k-1)/k * (|pool above| / (k-1)) * (rel above + 1e-5) / (rel above + nonrel above + 2e-5))); "
        "pool above = judged and pooled-but-unjudged documents above d",
        citation="Yilmaz and Aslam, 'Estimating average precision with incomplete and imperfect judgments', "
        "CIKM 2006",
        cutoff=False,
        budget=False,
        aliases=("inf_ap", "inferred_ap"),
        trec_eval="infAP",
        notes="A qrels grade below 0 marks a document pooled but not judged (it counts in the pool above, not "
        "as relevant or non-relevant); a document absent from the qrels is outside the pool and skipped.",
    ),
    MetricSpec(
        name="rbp_resid",
        kind=Kind.RBP_RESID,
        description="Residual of rank-biased precision: how much higher rbp could be if every unjudged "
        "retrieved document were fully relevant, plus the weight beyond the ranking's end.",
        formula="rbp_resid.P = p^n + (1 - p) sum_{unjudged i <= n} p^(i-1) (n = documents retrieved, or k); "
        "0 when no retrieved document is unjudged (trec_eval)",
        citation="Moffat and Zobel, 'Rank-biased precision for measurement of retrieval effectiveness', ACM "
        "TOIS 27(1), 2008",
        persistence=True,
        budget=False,
        aliases=("rbp_residual",),
        trec_eval="rbp_resid (-m rbp_resid.p=0.P; bare is p = 0.9)",
        notes="Read beside rbp and judged@k: rbp is a lower bound and rbp + rbp_resid the upper bound of the "
        "score unjudged documents allow. As in trec_eval, the value is 0 when nothing retrieved is unjudged "
        "(the tail p^n is then not counted either).",
    ),
)
