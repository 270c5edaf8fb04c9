"""Gain-based measures: DCG and nDCG with the grade as gain (Järvelin and Kekäläinen) and with
exponential gain (Burges).
"""

from __future__ import annotations

from ragmetrics.retrieval.registry.spec import Kind, MetricSpec

_JARVELIN = (
    "Järvelin and Kekäläinen, 'Cumulated gain-based evaluation of IR techniques', ACM TOIS 20(4), 2002"
)
_BURGES = "Burges et al., 'Learning to rank using gradient descent', ICML 2005"

SPECS: tuple[MetricSpec, ...] = (
    MetricSpec(
        name="dcg",
        kind=Kind.DCG,
        description="Discounted cumulative gain with the grade as gain.",
        formula="dcg@k = sum_{i <= k} grade_i / log2(i + 1)",
        citation=_JARVELIN,
        trec_eval="dcg (needs -m dcg; no cutoff form)",
        ranx="dcg",
        notes="Grades below the relevance level gain 0; negative grades gain 0.",
    ),
    MetricSpec(
        name="ndcg",
        kind=Kind.NDCG,
        description="DCG normalised by the DCG of the ideal ranking of the qrels (cut at k too).",
        formula="ndcg@k = dcg@k / idcg@k; idcg sorts the query's qualifying grades descending; 0 when idcg = 0",
        citation=_JARVELIN,
        aliases=("ndcg_cut",),
        trec_eval="ndcg (ndcg_cut_k with a cutoff)",
        ranx="ndcg",
        notes="The ideal ranking comes from the qrels, not from the retrieved documents. trec_eval ignores -l "
        "for ndcg; here -lN zeroes the gain of grades below N in both the ranking and the ideal.",
    ),
    MetricSpec(
        name="dcg_burges",
        kind=Kind.DCG_BURGES,
        description="Discounted cumulative gain with exponential gain 2^grade - 1.",
        formula="dcg_burges@k = sum_{i <= k} (2^grade_i - 1) / log2(i + 1)",
        citation=_BURGES,
        ranx="dcg_burges",
    ),
    MetricSpec(
        name="ndcg_burges",
        kind=Kind.NDCG_BURGES,
        description="dcg_burges normalised by its value on the ideal ranking of the qrels (cut at k too).",
        formula="ndcg_burges@k = dcg_burges@k / ideal dcg_burges@k; 0 when the ideal is 0",
        citation=_BURGES,
        ranx="ndcg_burges",
    ),
)
