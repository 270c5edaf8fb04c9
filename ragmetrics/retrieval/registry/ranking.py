"""Rank-position measures on binary or graded relevance: bpref, rank-biased precision,
reciprocal rank and average precision.
"""

from __future__ import annotations

from ragmetrics.retrieval.registry.spec import Kind, MetricSpec

SPECS: tuple[MetricSpec, ...] = (
    MetricSpec(
        name="bpref",
        kind=Kind.BPREF,
        description="Binary preference: how often judged relevant documents rank above judged non-relevant ones.",
        formula="bpref = 1/R sum_{relevant retrieved r} (1 - min(nonrel above r, R) / min(R, N)); "
        "N = judged non-relevant documents; unjudged documents are skipped",
        citation="Buckley and Voorhees, 'Retrieval evaluation with incomplete information', SIGIR 2004",
        cutoff=False,
        budget=False,
        trec_eval="bpref",
        ranx="bpref",
        notes="Documents absent from the qrels and documents with a negative grade are unjudged. "
        "When N = 0 every retrieved relevant document counts 1 (trec_eval); ranx divides by zero there.",
    ),
    MetricSpec(
        name="rbp",
        kind=Kind.RBP,
        description="Rank-biased precision with persistence p: expected utility of a user who continues with probability p.",
        formula="rbp.P = (1 - p) sum_i gain_i p^(i-1); gain_i = grade_i / g_max when g_max > 1, else grade_i "
        "(g_max = highest grade of the query); grades below the relevance level gain 0",
        citation="Moffat and Zobel, 'Rank-biased precision for measurement of retrieval effectiveness', ACM TOIS 27(1), 2008",
        persistence=True,
        budget=False,
        trec_eval="rbp (-m rbp.p=0.P; bare 'rbp' is p = 0.9)",
        ranx="rbp.P",
        notes="Gains are normalised to [0, 1] as in trec_eval; ranx uses the raw grade as gain, so the two "
        "agree on binary qrels only. trec_eval ignores -l for rbp; here -lN zeroes the gain below N.",
    ),
    MetricSpec(
        name="mrr",
        kind=Kind.MRR,
        description="Reciprocal rank of the first relevant document (within the top k).",
        formula="mrr@k = 1 / rank of the first relevant document in the top k, 0 if none",
        citation="Voorhees, 'The TREC-8 question answering track report', TREC 1999",
        aliases=("recip_rank", "rr", "reciprocal_rank"),
        trec_eval="recip_rank",
        ranx="mrr",
    ),
    MetricSpec(
        name="map",
        kind=Kind.MAP,
        description="Average precision: mean of the precision at the rank of each relevant document.",
        formula="map@k = 1/R sum_{i <= k, rel_i} hits@i / i (R counts every relevant document, retrieved or not)",
        citation="Harman, 'Overview of the first TREC conference', TREC 1992",
        aliases=("ap", "average_precision", "map_cut"),
        trec_eval="map (map_cut_k with a cutoff)",
        ranx="map",
    ),
)
