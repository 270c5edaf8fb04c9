"""The registry of retrieval metrics: one declarative spec per metric, and the parser of metric strings.

Everything else (the kernels' metric codes, the CLI help, `docs/metrics.md`) is derived from `REGISTRY`, so
each metric is described in exactly one place. A metric string reads ``name[@k][-lN]`` (``rbp.P`` carries the
persistence 0.P); trec_eval's spellings (``P_10``, ``ndcg_cut_10``, ``recip_rank``, ``Rprec``, ``success_5``,
``map_cut_10``, ``recall_100``, ``num_rel_ret``, ``set_F``, ...) and ir_measures-style ones (``P@10``, ``AP``,
``RR``, ``nDCG@10``) are accepted as aliases. Run ``python -m ragmetrics.retrieval.metrics`` to print the
metric reference in Markdown.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

from ragmetrics.errors import InputError


class Kind(IntEnum):
    """Metric codes shared with the numba kernels (plain integers there)."""

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
    JUDGED = 14
    INFAP = 15
    RBP_RESID = 16
    IPREC = 17
    ELEVEN_POINT = 18
    GM_MAP = 19
    GM_BPREF = 20
    SET_MAP = 21
    RPREC_MULT = 22
    NUM_RET = 23
    NUM_REL = 24
    NUM_Q = 25
    ERR = 26
    NERR = 27
    ALPHA_NDCG = 28
    ERR_IA = 29
    NERR_IA = 30
    NRBP = 31
    NNRBP = 32
    P_IA = 33
    STREC = 34
    MAP_IA = 35
    UDCG = 36


Aggregate = Literal["mean", "sum", "geometric"]
"""How per-query values become the run's figure: their mean, their sum (the counts num_ret, num_rel, num_q,
as trec_eval prints them), or their geometric mean with values floored at 1e-5 (gm_map, gm_bpref)."""


@dataclass(frozen=True)
class MetricSpec:
    """What a metric is, how it may be parameterised and what others call it."""

    name: str
    kind: Kind
    description: str
    formula: str
    citation: str
    cutoff: bool = True
    persistence: bool = False
    aliases: tuple[str, ...] = ()
    trec_eval: str | None = None
    ranx: str | None = None
    notes: str = ""
    aggregate: Aggregate = "mean"
    point: Literal["recall", "multiple"] | None = None
    """A real number after @ instead of a cutoff: a recall level in [0, 1] (iprec@0.3) or a multiple of R
    (rprec_mult@0.5)."""
    budget: bool = True
    """Whether a token budget (@Ntok) may replace the cutoff."""
    subtopics: bool = False
    """Intent-aware: needs subtopic qrels (`SubtopicQrels`, the TREC diversity format)."""
    weights: bool = False
    """Takes a relevant and an irrelevant weight, written ``.rel=W`` and ``.irr=W`` after the name (udcg)."""


_JARVELIN = (
    "Järvelin and Kekäläinen, 'Cumulated gain-based evaluation of IR techniques', ACM TOIS 20(4), 2002"
)
_BURGES = "Burges et al., 'Learning to rank using gradient descent', ICML 2005"
_CLARKE = "Clarke et al., 'Novelty and diversity in information retrieval evaluation', SIGIR 2008"
UDCG_RELEVANT_WEIGHT = 1.0
UDCG_IRRELEVANT_WEIGHT = -1 / 3
"""UDCG's default weights, the paper's and its reference code's (`compute_udcg_score`)."""
UDCG_MAX_WEIGHT = 500.0
"""The largest |weight| accepted: |mean| <= |weight| (utilities lie in [0, 1]), and e^x overflows float64
beyond x = 709; the sigmoid is already 1 - 1e-217 at 500."""

REGISTRY: tuple[MetricSpec, ...] = (
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
    *(
        MetricSpec(
            name=name,
            kind=kind,
            description=description,
            formula=formula,
            citation=citation,
            cutoff=cutoff,
            budget=False,
            subtopics=True,
            trec_eval=None,
            notes=f"ndeval's {ndeval} (ir_measures: {irm}); alpha = 0.5 and beta = 0.5 unless "
            "evaluate_diversity is given others; a grade at or above the relevance level is relevant to "
            "its subtopic. Needs subtopic qrels (TREC diversity format: query subtopic document grade).",
        )
        for name, kind, description, formula, citation, cutoff, ndeval, irm in (
            (
                "alpha_ndcg",
                Kind.ALPHA_NDCG,
                "Novelty-biased nDCG: a document gains less for subtopics already covered above it.",
                "alpha_ndcg@k = sum_{i<k} g_i / log2(i + 2) over the greedy ideal's; "
                "g_i = sum_s rel(i, s) (1 - alpha)^(relevant to s above i)",
                _CLARKE,
                True,
                "alpha-nDCG@k",
                "alpha_nDCG@k",
            ),
            (
                "err_ia",
                Kind.ERR_IA,
                "Intent-aware expected reciprocal rank.",
                "err_ia@k = sum_{i<k} g_i / (i + 1) "
                "over sum_{i<k} M (1 - alpha)^i / (i + 1) (M: subtopics with a relevant document)",
                "Chapelle et al., 'Intent-based diversification of web search results', IR 2011",
                True,
                "ERR-IA@k (at k = 1 ndeval skips the normalisation; here it applies at every k)",
                "ERR_IA@k",
            ),
            (
                "nerr_ia",
                Kind.NERR_IA,
                "ERR-IA normalised by the greedy ideal ranking's.",
                "nerr_ia@k = sum_{i<k} g_i / (i + 1) over the same for the ideal",
                "Chapelle et al., IR 2011; ndeval",
                True,
                "nERR-IA@k",
                "nERR_IA@k",
            ),
            (
                "nrbp",
                Kind.NRBP,
                "Novelty- and rank-biased precision.",
                "nrbp = (1 - (1 - alpha) beta) / M sum_i beta^i g_i",
                "Clarke, Kolla and Vechtomova, 'An effectiveness measure for ambiguous and "
                "underspecified queries', ICTIR 2009",
                False,
                "NRBP",
                "NRBP",
            ),
            (
                "nnrbp",
                Kind.NNRBP,
                "NRBP normalised by the greedy ideal ranking's.",
                "nnrbp = nrbp / ideal nrbp",
                "Clarke et al., ICTIR 2009; ndeval",
                False,
                "nNRBP",
                "nNRBP",
            ),
            (
                "p_ia",
                Kind.P_IA,
                "Intent-aware precision: precision averaged over the subtopics.",
                "p_ia@k = sum_{i<k} sum_s rel(i, s) / (k M)",
                "Agrawal et al., 'Diversifying search results', WSDM 2009",
                True,
                "P-IA@k",
                "P_IA@k",
            ),
            (
                "strec",
                Kind.STREC,
                "Subtopic recall: the share of subtopics the top k cover.",
                "strec@k = |{s : some i < k has rel(i, s)}| / M",
                "Zhai, Cohen and Lafferty, 'Beyond independent relevance', SIGIR 2003",
                True,
                "strec@k",
                "StRecall@k",
            ),
            (
                "map_ia",
                Kind.MAP_IA,
                "Intent-aware average precision: AP per subtopic, averaged.",
                "map_ia = 1/M sum_s AP_s",
                "Agrawal et al., WSDM 2009",
                False,
                "MAP-IA",
                "-",
            ),
        )
    ),
)

_BY_NAME: dict[str, MetricSpec] = {}
for _spec in REGISTRY:
    for _alias in (_spec.name, *_spec.aliases):
        if _alias in _BY_NAME:
            raise RuntimeError(f"metric alias {_alias!r} registered twice")
        _BY_NAME[_alias] = _spec

# trec_eval names that carry the cutoff after an underscore: P_10, recall_100, ndcg_cut_10, map_cut_5, success_1.
_TREC_CUTOFF: dict[str, str] = {
    "p": "precision",
    "recall": "recall",
    "ndcg_cut": "ndcg",
    "map_cut": "map",
    "success": "hit_rate",
}
_TREC_CUTOFF_RE = re.compile(r"^(p|recall|ndcg_cut|map_cut|success)_(\d+)$")
_BUDGET_RE = re.compile(r"(?P<n>\d+)(?P<k>k?)tok")
_LEVEL_RE = re.compile(r"^(?P<base>.+)-l(?P<level>[^-]*)$")
_RBP_RE = re.compile(r"^(?P<name>rbp_resid|rbp)(?:\.(?P<digits>[^@]*))?$")
_TREC_POINT_RE = re.compile(r"^(?P<name>iprec_at_recall|rprec_mult)_(?P<value>[0-9.]+)$")
_DEFAULT_RBP_DIGITS = "9"


@dataclass(frozen=True)
class MetricRequest:
    """One parsed metric string: the spec plus its cutoff (0 = none), relevance level and persistence."""

    spelling: str
    spec: MetricSpec
    cutoff: int = 0
    level: int = 1
    persistence: float = 0.0
    persistence_digits: str = ""
    budget: int = 0
    """A token budget instead of a count cutoff (``recall@512tok``): the ranking is cut where the retrieved
    passages' cumulative token count exceeds it (`ragmetrics.retrieval.budget`); 0 = none."""
    point: float = 0.0
    """iprec's recall level or rprec_mult's multiple of R (`MetricSpec.point`)."""
    relevant_weight: float = UDCG_RELEVANT_WEIGHT
    irrelevant_weight: float = UDCG_IRRELEVANT_WEIGHT
    weights_text: str = ""
    """udcg's weights (`MetricSpec.weights`) and their canonical suffix (``.irr=-0.5``; empty for the defaults)."""

    @property
    def param(self) -> float:
        """The kernel's real parameter: rbp's persistence, or the point."""
        return self.persistence if self.spec.persistence else self.point

    @property
    def canonical(self) -> str:
        """The ranx-style spelling, e.g. ``ndcg@10``, ``precision@5-l2``, ``rbp.80``."""
        text = self.spec.name
        if self.spec.persistence:
            text += f".{self.persistence_digits}"
        text += self.weights_text
        if self.spec.point is not None:
            text += f"@{self.point:g}"
        if self.cutoff:
            text += f"@{self.cutoff}"
        if self.budget:
            text += f"@{self.budget}tok"
        if self.level != 1:
            text += f"-l{self.level}"
        return text

    def settings(self) -> dict[str, object]:
        """What the result metadata records for this metric."""
        out: dict[str, object] = {
            "canonical": self.canonical,
            "metric": self.spec.name,
            "cutoff": self.cutoff or None,
            "relevance_level": self.level,
        }
        if self.budget:
            out["token_budget"] = self.budget
        if self.spec.persistence:
            out["persistence"] = self.persistence
        if self.spec.point == "recall":
            out["recall_level"] = self.point
        elif self.spec.point == "multiple":
            out["multiple_of_r"] = self.point
        if self.spec.weights:
            out["relevant_weight"] = self.relevant_weight
            out["irrelevant_weight"] = self.irrelevant_weight
        if self.spec.aggregate != "mean":
            out["aggregate"] = self.spec.aggregate
        return out


def _bad(spelling: str, what: str) -> InputError:
    return InputError(f"metric {spelling!r}: {what}", field="metrics")


_MAX_INT = 2**31 - 1


def _parse_int(spelling: str, text: str, what: str, minimum: int) -> int:
    if not re.fullmatch(r"\d+", text):
        raise _bad(spelling, f"{what} must be an integer >= {minimum}, got {text!r}")
    value = int(text)
    if not minimum <= value <= _MAX_INT:
        raise _bad(spelling, f"{what} must be an integer from {minimum} to {_MAX_INT}, got {value}")
    return value


def _known() -> str:
    return ", ".join(spec.name for spec in REGISTRY)


def _parse_point(spelling: str, spec: MetricSpec, text: str) -> float:
    """iprec's recall level (0..1) or rprec_mult's multiple of R (> 0), written after @."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if spec.point == "recall":
        if not 0.0 <= value <= 1.0:
            raise _bad(
                spelling,
                f"{spec.name} needs a recall level from 0 to 1 after @ (e.g. {spec.name}@0.3), got {text!r}",
            )
    elif not 0.0 < value <= 1000.0:
        raise _bad(
            spelling,
            f"{spec.name} needs a multiple of R above 0 after @ (e.g. {spec.name}@0.5), got {text!r}",
        )
    return value


_WEIGHT_RE = re.compile(
    r"\.(?P<which>rel|irr)=(?P<value>[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:/(?:\d+(?:\.\d+)?|\.\d+))?)"
)


def _parse_weights(spelling: str, text: str) -> tuple[float, float, str]:
    """udcg's ``.rel=W`` and ``.irr=W`` (each at most once, decimals or fractions such as -1/3) after the
    name: the relevant and irrelevant weights and the canonical suffix."""
    found: dict[str, float] = {}
    pos = 0
    while pos < len(text):
        match = _WEIGHT_RE.match(text, pos)
        if match is None:
            raise _bad(
                spelling,
                "udcg takes its weights as .rel=W and .irr=W after the name (e.g. udcg.irr=-0.5@5, "
                f"udcg.rel=1.irr=-1/3@10), got {text[pos:]!r}",
            )
        which, value_text = match["which"], match["value"]
        if which in found:
            raise _bad(spelling, f"the {which} weight is given twice")
        top, _, bottom = value_text.partition("/")
        if bottom and float(bottom) == 0.0:
            raise _bad(spelling, f"the {which} weight divides by zero: {value_text!r}")
        value = float(top) / float(bottom) if bottom else float(top)
        if not math.isfinite(value) or abs(value) > UDCG_MAX_WEIGHT:
            raise _bad(spelling, f"the {which} weight must be a number from -500 to 500, got {value_text!r}")
        found[which] = value
        pos = match.end()
    relevant = found.get("rel", UDCG_RELEVANT_WEIGHT)
    irrelevant = found.get("irr", UDCG_IRRELEVANT_WEIGHT)
    suffix = "" if relevant == UDCG_RELEVANT_WEIGHT else f".rel={relevant!r}"
    suffix += "" if irrelevant == UDCG_IRRELEVANT_WEIGHT else f".irr={irrelevant!r}"
    return relevant, irrelevant, suffix


_NO_LEVEL = frozenset({Kind.JUDGED, Kind.NUM_RET, Kind.NUM_Q})
"""Metrics a relevance level (-lN) does not apply to: the parser refuses it and the reference says so."""


def parse_metric(spelling: str) -> MetricRequest:
    """Parse ``name[@k][-lN]`` (or an alias); raise `InputError` naming the string for anything unknown or bad."""
    if not isinstance(spelling, str):
        raise InputError(f"metric names must be strings, got {spelling!r}", field="metrics")
    text = spelling.strip()
    if not text:
        raise _bad(spelling, "empty metric name")
    level = 1
    match = _LEVEL_RE.match(text)
    if match:
        text = match["base"]
        level = _parse_int(spelling, match["level"], "relevance level (-lN)", 1)
    at_text: str | None = None
    if "@" in text:
        text, _, at_text = text.partition("@")
    base = text.lower()

    trec_point = _TREC_POINT_RE.match(base)
    if trec_point:
        if at_text is not None:
            raise _bad(spelling, "the point is given twice (trec_eval suffix and @)")
        base, at_text = trec_point["name"], trec_point["value"]
        base = "iprec" if base == "iprec_at_recall" else base

    point_spec = _BY_NAME.get(base)
    if point_spec is not None and point_spec.point is not None:
        if at_text is None:
            example = "0.3" if point_spec.point == "recall" else "0.5"
            raise _bad(
                spelling, f"{point_spec.name} needs its point after @ (e.g. {point_spec.name}@{example})"
            )
        return MetricRequest(
            spelling, point_spec, 0, level, point=_parse_point(spelling, point_spec, at_text)
        )

    cutoff = 0
    budget = 0
    if at_text is not None:
        tokens = _BUDGET_RE.fullmatch(at_text.lower())
        if tokens:
            budget = _parse_int(spelling, tokens["n"], "token budget (@Ntok)", 1) * (
                1000 if tokens["k"] else 1
            )
        else:
            cutoff = _parse_int(spelling, at_text, "cutoff (@k, or @Ntok for a token budget)", 1)

    if base.startswith("udcg."):
        relevant, irrelevant, suffix = _parse_weights(spelling, base[len("udcg") :])
        return MetricRequest(
            spelling,
            _BY_NAME["udcg"],
            cutoff,
            level,
            budget=budget,
            relevant_weight=relevant,
            irrelevant_weight=irrelevant,
            weights_text=suffix,
        )

    rbp = _RBP_RE.match(base)
    if rbp:
        digits = rbp["digits"]
        if digits is None:
            digits = _DEFAULT_RBP_DIGITS
        name = rbp["name"]
        if not re.fullmatch(r"\d+", digits) or int(digits) == 0:
            raise _bad(
                spelling,
                f"{name} needs a persistence 0 < p < 1 written as {name}.P (e.g. {name}.80), got {digits!r}",
            )
        spec = _BY_NAME[name]
        if budget:
            raise _bad(spelling, f"{name} takes no token budget (it is not a metric of the top k)")
        return MetricRequest(spelling, spec, cutoff, level, float(f"0.{digits}"), digits)

    trec = _TREC_CUTOFF_RE.match(base)
    if trec:
        if cutoff:
            raise _bad(spelling, "the cutoff is given twice (trec_eval suffix and @k)")
        spec = _BY_NAME[_TREC_CUTOFF[trec[1]]]
        cutoff = _parse_int(spelling, trec[2], "cutoff", 1)
        return MetricRequest(spelling, spec, cutoff, level)

    found = _BY_NAME.get(base)
    if found is None:
        close = difflib.get_close_matches(base, [*_BY_NAME, "rbp.80"], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise _bad(
            spelling, f"unknown metric {text!r}; {hint}known metrics: {_known()} (and trec_eval spellings)"
        )
    if (cutoff or budget) and not found.cutoff:
        raise _bad(spelling, f"{found.name} takes no cutoff")
    if match and found.kind == Kind.JUDGED:
        raise _bad(spelling, "judged takes no relevance level (-lN): any judgment counts, whatever its grade")
    if match and found.kind in _NO_LEVEL:
        raise _bad(spelling, f"{found.name} takes no relevance level (-lN): it does not depend on grades")
    if budget:
        if not found.budget:
            raise _bad(spelling, f"{found.name} takes no token budget (it is not a metric of the top k)")
        return MetricRequest(spelling, found, 0, level, budget=budget)
    return MetricRequest(spelling, found, cutoff, level)


def parse_metrics(spellings: Iterable[str] | str) -> tuple[MetricRequest, ...]:
    """Parse a list of metric strings, keeping the first of identical spellings; at least one is required."""
    if isinstance(spellings, str):
        spellings = [spellings]
    requests: dict[str, MetricRequest] = {}
    for spelling in spellings:
        if spelling not in requests:
            requests[spelling] = parse_metric(spelling)
    if not requests:
        raise InputError("no metric requested", field="metrics")
    return tuple(requests.values())


def metric_help() -> str:
    """One line per metric for the CLI's help text."""
    return "\n".join(f"  {spec.name:<12} {spec.description}" for spec in REGISTRY)


def _cell(text: str | None) -> str:
    return "-" if not text else text.replace("|", "\\|")


def render_reference() -> str:
    """The Markdown metric reference (docs/metrics.md), generated from the registry."""
    lines = [
        "# Retrieval metric reference",
        "",
        "Generated from `ragmetrics/retrieval/metrics.py` by `python -m ragmetrics.retrieval.metrics`; edit the "
        "registry, not this file.",
        "",
        "## Syntax",
        "",
        "A metric string reads `name[@k][-lN]`: `@k` cuts the ranking at rank k, `-lN` makes grade >= N relevant "
        "(default 1). Rank-biased precision is `rbp.P` with persistence 0.P (`rbp.80` is p = 0.8). Names are "
        "case-insensitive. trec_eval spellings with the cutoff after an underscore (`P_10`, `recall_100`, "
        "`ndcg_cut_10`, `map_cut_10`, `success_5`) and the aliases listed below are accepted; results are keyed "
        "by the spelling you used, and `metadata.metric_settings['metrics']` records the canonical form. "
        "Two metrics take a real number after `@` instead of a cutoff: `iprec@0.3` (interpolated precision at "
        "recall 0.3; trec_eval's `iprec_at_recall_0.30`) and `rprec_mult@0.5` (precision at 0.5 R; "
        "`Rprec_mult_0.50`). `rbp_resid.P` takes a persistence as `rbp.P` does. The intent-aware metrics (`alpha_ndcg`, `err_ia`, "
        "`nerr_ia`, `nrbp`, `nnrbp`, `p_ia`, `strec`, `map_ia`) need subtopic qrels: "
        "`ragmetrics.evaluate(SubtopicQrels.from_trec(path), run, [...])` reads the TREC diversity format "
        "(`query subtopic document grade`) and scores the other metrics on its collapsed form (a document's "
        "highest grade over the subtopics); `ragmetrics retrieval` and `compare` read the qrels file in that format "
        "whenever an intent-aware metric is asked for. `udcg` takes its weights after the name: `udcg@5` is "
        "the paper's (relevant 1, irrelevant -1/3), `udcg.irr=-0.5@5` and `udcg.rel=2.irr=-1/2@10-l2` others "
        "(decimals or fractions); it reads per-passage abstention probabilities given as "
        "`evaluate(..., utilities=)` or `--utilities PATH` (see docs/utilities.md), and the relevance labels "
        "alone without them.",
        "",
        "**Aggregates.** A run's figure is the mean over queries, except the counts `num_ret`, `num_rel` and "
        "`num_q` (summed, as trec_eval prints them) and `gm_map` and `gm_bpref` (geometric mean of the "
        "per-query values floored at 1e-5, trec_eval's). Per-query values are always the plain ones (AP for "
        "gm_map), and so are the paired tests of a comparison; `metadata.metric_settings['aggregation']` "
        "records the rule, so a merged or reloaded result keeps it.",
        "",
        "**Token budgets.** `@Ntok` (or `@Nktok`, thousands) in place of `@k` cuts each query's ranking where the "
        "retrieved passages stop fitting into N tokens: `recall@512tok`, `ndcg@2ktok`, `precision@1ktok-l2`. The "
        "metric is then the `@k` metric at that query's depth k_q (precision's denominator and nDCG's ideal "
        "ranking at k_q too). A passage that straddles the budget is left out (`straddle='exclude'`, default: "
        "what fits whole; a first passage longer than the budget scores 0) or counted (`'include'`). Token "
        "counts per document come from `evaluate(..., lengths=)` (a mapping, or a `retrieval.budget.TokenLengths` "
        "built once), counted by `retrieval.budget.count_tokens(passages, tokenizer)`: whitespace words by "
        "default, or a `tokenizers` JSON file; a model's own tokenizer gives its true budget. rbp, bpref and "
        "r-precision take no budget; a retrieved document without a count is an error.",
        "",
        "## Conventions",
        "",
        "- Ranking: score descending, ties broken by document id descending (as trec_eval), so a result never "
        "depends on input order.",
        "- R is the number of documents of the query with grade >= the relevance level; N the number with "
        "0 <= grade < level (judged non-relevant). Negative grades mean judged-but-unassessed: unjudged for bpref, "
        "non-relevant (gain 0) everywhere else. Documents absent from the qrels are non-relevant and unjudged.",
        "- Query set: by default the mean is over every query of the qrels, and a qrels query absent from the "
        "run scores 0 on every metric (trec_eval -c). `query_set='intersection'` (CLI `--intersection`) gives "
        "trec_eval's default: the mean over queries both have. Run queries missing from the qrels are reported "
        "in `metadata.extra_queries` and left out.",
        "- Queries whose qrels hold no relevant document are evaluated, as trec_eval does: every metric is 0 "
        "for them (recall, map, ndcg, r-precision and bpref define 0/0 as 0) and they count in the mean.",
        "- An empty ranking scores 0 on every metric (precision without cutoff defines 0/0 as 0).",
        "",
        "## Differences from trec_eval and ranx",
        "",
        "- `hits` is averaged over queries; trec_eval's `num_rel_ret` is summed over queries.",
        "- `precision` without a cutoff is hits / retrieved (trec_eval `set_P`, ranx `precision`); trec_eval's "
        "`P` always has a cutoff.",
        "- `ndcg`/`dcg` with -lN: trec_eval ignores -l for ndcg and rbp (gain = grade always); here grades "
        "below N gain 0, as in ranx.",
        "- `rbp`: gains normalised to [0, 1] by the query's highest grade as in trec_eval; ranx uses the raw grade.",
        "- `bpref` with no judged non-relevant document: trec_eval (and ragmetrics) count each retrieved relevant "
        "document as 1; ranx produces NaN.",
        "- Tied scores: ranx's order for ties is not specified; ragmetrics and trec_eval break ties by document "
        "id descending.",
        "- Query set: ranx averages over the run's and qrels' common queries and raises on mismatches; "
        "ragmetrics scores missing queries 0 by default and reports both kinds of mismatch.",
        "",
        "## Verification",
        "",
        "- `tests/retrieval/test_trec_eval_conformance.py`: equal, to the 4 printed decimals, to trec_eval 10.0's "
        "own outputs on its test collection (default, -q, -c, -l2) for every measure both define.",
        "- `tests/retrieval/test_properties.py`: per-query equality (1e-9) with pytrec_eval on random data with "
        "tied scores and relevance levels, and with ranx on untied data.",
        "- `tests/retrieval/test_properties.py` also compares infAP (a grade of -1 pooled but unjudged), "
        "interpolated precision and 11pt_avg, Rprec_mult, set_map, gm_map, gm_bpref, num_ret and num_rel with "
        "pytrec_eval (trec_eval 9, which placed recall levels with floor(r R + 0.9) where trec_eval 10 rounds: "
        "compared where both agree).",
        "- `tests/retrieval/test_ir_measures.py`: ERR@k equal to ir_measures' (gdeval, 5 decimals), nERR@k to "
        "gdeval's ERR of the run over that of the ideal run, Judged@k to ir_measures'.",
        "- `tests/retrieval/test_seed_cases.py`: the shared acceptance cases.",
        "- `tests/retrieval/test_udcg.py`: udcg equal to 1e-12 to the values GiovanniTRA/UDCG's "
        "`compute_udcg_score` gives on its sample data and on random passage lists (a fixture of its outputs); "
        "`python benchmarks/check_udcg_reference.py` runs the reference code itself on thousands more.",
        "- trec_eval reads stale memory for a query whose judgements are all negative; ragmetrics scores such a "
        "query 0 on every metric.",
        "",
        "## Metrics",
        "",
        "| metric | description | cutoff | trec_eval | ranx | aliases |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for spec in REGISTRY:
        aliases = ", ".join(f"`{a}`" for a in spec.aliases)
        name = f"`{spec.name}.P`" if spec.persistence else f"`{spec.name}`"
        lines.append(
            f"| {name} | {_cell(spec.description)} | {'yes' if spec.cutoff else 'no'} | "
            f"{_cell(spec.trec_eval)} | {_cell(spec.ranx)} | {_cell(aliases)} |"
        )
    for spec in REGISTRY:
        lines += ["", f"### {spec.name}", "", spec.description, "", f"- Formula: `{spec.formula}`"]
        levels = "not accepted" if spec.kind in _NO_LEVEL else "accepted"
        lines.append(f"- Cutoff `@k`: {'accepted' if spec.cutoff else 'not accepted'}; `-lN`: {levels}")
        if spec.persistence:
            lines.append(
                "- Persistence: required, written `rbp.P` (bare `rbp` means p = 0.9, trec_eval's default)"
            )
        if spec.weights:
            lines.append(
                "- Weights: `.rel=W` (relevant, default 1) and `.irr=W` (irrelevant, default -1/3) after the "
                "name, decimals or fractions: `udcg.irr=-0.5@5`"
            )
        lines.append(f"- trec_eval: {spec.trec_eval or 'not defined'}; ranx: {spec.ranx or 'not defined'}")
        if spec.aliases:
            lines.append(f"- Aliases: {', '.join(f'`{a}`' for a in spec.aliases)}")
        if spec.notes:
            lines.append(f"- Notes: {spec.notes}")
        lines.append(f"- Reference: {spec.citation}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_reference(), end="")
