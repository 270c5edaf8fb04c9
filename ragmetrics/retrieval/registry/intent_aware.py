"""The intent-aware (diversity) measures: they need subtopic qrels; kernels in `kernels/diversity.py`."""

from __future__ import annotations

from ragmetrics.retrieval.registry.spec import Kind, MetricSpec

_CLARKE = "Clarke et al., 'Novelty and diversity in information retrieval evaluation', SIGIR 2008"

SPECS: tuple[MetricSpec, ...] = (
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
