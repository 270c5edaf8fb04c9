"""Measures of a reader who stops: expected reciprocal rank (a cascade user) and UDCG (a generator
that answers from a passage or is distracted by it).
"""

from __future__ import annotations

from ragmetrics.retrieval.registry.spec import Kind, MetricSpec

UDCG_RELEVANT_WEIGHT = 1.0
UDCG_IRRELEVANT_WEIGHT = -1 / 3
"""UDCG's default weights, the paper's and its reference code's (`compute_udcg_score`)."""
UDCG_MAX_WEIGHT = 500.0
"""The largest |weight| accepted: |mean| <= |weight| (utilities lie in [0, 1]), and e^x overflows float64
beyond x = 709; the sigmoid is already 1 - 1e-217 at 500."""

SPECS: tuple[MetricSpec, ...] = (
    MetricSpec(
        name="err",
        kind=Kind.ERR,
        description="Expected reciprocal rank: a cascade user stops at a document with the probability its "
        "grade gives.",
        formula="err@k = sum_{i <= k} R_i / i prod_{j < i} (1 - R_j), R_i = (2^grade_i - 1) / 2^g_max; g_max = "
        "4 (gdeval's), or the highest grade of the qrels when that is higher",
        citation="Chapelle, Metzler, Zhang and Grinspan, 'Expected reciprocal rank for graded relevance', "
        "CIKM 2009; gdeval (TREC Web track)",
        aliases=("expected_reciprocal_rank",),
        notes="ir_measures' ERR@k (through gdeval) equals it on qrels with grades up to 4 (gdeval refuses "
        "higher ones). Grades below the relevance level (-lN) and negative grades give R = 0.",
    ),
    MetricSpec(
        name="nerr",
        kind=Kind.NERR,
        description="ERR normalised by the ERR of the ideal ranking of the qrels (cut at k too).",
        formula="nerr@k = err@k / ideal err@k; 0 when the ideal is 0",
        citation="Chapelle et al., CIKM 2009 (ERR); normalised as nDCG is (Järvelin and Kekäläinen 2002)",
        aliases=("n_err",),
        notes="Equal to gdeval's ERR of the run over gdeval's ERR of the ideal run.",
    ),
    MetricSpec(
        name="udcg",
        kind=Kind.UDCG,
        description="Utility and distraction-aware cumulative gain: relevant passages the generator answers "
        "from help, irrelevant ones it answers from (distractors) hurt; the sigmoid of their weighted mean.",
        formula="udcg@k = sigmoid(1/n sum_{i <= n} w_i u_i), n = min(k, documents retrieved); w_i = rel "
        "(default 1) when grade_i >= level, else irr (default -1/3); u_i = 1 - p_abstain(i), or 1 without "
        "utilities; 0 when n = 0",
        citation="Trappolini, Cuconasu, Filice, Maarek and Silvestri, 'Redefining Retrieval Evaluation in the "
        "Era of LLMs', arXiv 2510.21440, 2025; reference code GiovanniTRA/UDCG (MIT)",
        weights=True,
        notes="u_i is the generator's probability of not abstaining given passage i alone: pass "
        "`evaluate(..., utilities=AbstentionProbabilities.read(path))` (CLI `--utilities PATH`; "
        "docs/utilities.md). Without utilities every u_i is 1 and udcg rests on the relevance labels alone. "
        "Weights: `udcg.irr=-0.5@5`, `udcg.rel=2.irr=-1/2@10` (decimals or fractions, |w| <= 500). Unjudged "
        "passages (absent from the qrels, or a negative grade) are irrelevant, as the reference's "
        "is_relevant False. A retrieved passage within the cutoff without a probability is an error, or, "
        "with `missing='skip'` (the reference's behaviour), adds nothing but counts in n. As the reference: an "
        "empty ranking scores 0, not sigmoid(0). Equal to `compute_udcg_score` to 1e-12 "
        "(benchmarks/check_udcg_reference.py).",
    ),
)
