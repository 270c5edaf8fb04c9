"""The metric registry and the parser of metric strings."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.errors import InputError
from ragmetrics.retrieval.metrics import REGISTRY, Kind, parse_metric, parse_metrics, render_reference

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("spelling", "canonical", "cutoff", "level"),
    [
        ("ndcg@10", "ndcg@10", 10, 1),
        ("precision@5-l2", "precision@5-l2", 5, 2),
        ("map", "map", 0, 1),
        ("r-precision", "r-precision", 0, 1),
        ("r-precision-l3", "r-precision-l3", 0, 3),
        ("hit_rate@3", "hit_rate@3", 3, 1),
        ("dcg_burges@20-l2", "dcg_burges@20-l2", 20, 2),
        # trec_eval spellings
        ("P_10", "precision@10", 10, 1),
        ("recall_100", "recall@100", 100, 1),
        ("ndcg_cut_10", "ndcg@10", 10, 1),
        ("map_cut_5", "map@5", 5, 1),
        ("success_5", "hit_rate@5", 5, 1),
        ("recip_rank", "mrr", 0, 1),
        ("Rprec", "r-precision", 0, 1),
        ("num_rel_ret", "hits", 0, 1),
        ("set_P", "precision", 0, 1),
        ("set_recall", "recall", 0, 1),
        ("set_F", "f1", 0, 1),
        ("P_5-l2", "precision@5-l2", 5, 2),
        # ir_measures-style spellings, case-insensitive names
        ("P@10", "precision@10", 10, 1),
        ("nDCG@10", "ndcg@10", 10, 1),
        ("AP", "map", 0, 1),
        ("RR@10", "mrr@10", 10, 1),
        (" MRR ", "mrr", 0, 1),
    ],
)
def test_spellings_resolve_to_canonical_metrics(
    spelling: str, canonical: str, cutoff: int, level: int
) -> None:
    request = parse_metric(spelling)
    assert request.canonical == canonical
    assert request.cutoff == cutoff
    assert request.level == level
    assert request.spelling == spelling


@pytest.mark.parametrize(
    ("spelling", "p", "canonical"),
    [
        ("rbp.80", 0.8, "rbp.80"),
        ("rbp.5", 0.5, "rbp.5"),
        ("rbp.95@10-l2", 0.95, "rbp.95@10-l2"),
        ("rbp", 0.9, "rbp.9"),
    ],
)
def test_rbp_persistence(spelling: str, p: float, canonical: str) -> None:
    request = parse_metric(spelling)
    assert request.spec.kind is Kind.RBP
    assert request.persistence == pytest.approx(p)
    assert request.canonical == canonical


@pytest.mark.parametrize(
    ("spelling", "message"),
    [
        ("nope", "unknown metric"),
        ("ndcg@0", "cutoff"),
        ("ndcg@", "cutoff"),
        ("ndcg@ten", "cutoff"),
        ("ndcg@-3", "cutoff"),
        ("ndcg@2.5", "cutoff"),
        ("ndcg@99999999999999999999", "cutoff"),
        ("map-l4294967296", "relevance level"),
        ("map-l0", "relevance level"),
        ("map-lx", "relevance level"),
        ("map-l", "relevance level"),
        ("P_10@5", "cutoff is given twice"),
        ("P_0", "cutoff"),
        ("bpref@10", "takes no cutoff"),
        ("r-precision@5", "takes no cutoff"),
        ("rbp.0", "persistence"),
        ("rbp.", "persistence"),
        ("rbp.8x", "persistence"),
        ("", "empty"),
        ("ndcg_10", "unknown metric"),
    ],
)
def test_bad_metric_strings_raise_input_error_naming_them(spelling: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_metric(spelling)
    assert repr(spelling) in str(info.value)
    assert message in str(info.value)
    assert info.value.field == "metrics"


def test_non_string_metric_is_rejected() -> None:
    with pytest.raises(InputError, match="must be strings"):
        parse_metric(10)  # type: ignore[arg-type]


def test_parse_metrics_keeps_order_and_drops_exact_repeats_only() -> None:
    requests = parse_metrics(["ndcg@10", "map", "ndcg@10", "ndcg_cut_10"])
    assert [r.spelling for r in requests] == ["ndcg@10", "map", "ndcg_cut_10"]
    assert parse_metrics("map")[0].canonical == "map"
    with pytest.raises(InputError, match="no metric requested"):
        parse_metrics([])


def test_registry_holds_every_metric_once_with_unique_kinds() -> None:
    names = [spec.name for spec in REGISTRY]
    assert names == [
        "hits", "hit_rate", "precision", "recall", "f1", "r-precision", "bpref",
        "rbp", "mrr", "map", "dcg", "ndcg", "dcg_burges", "ndcg_burges", "judged",
        "infap", "rbp_resid", "iprec", "11pt_avg", "gm_map", "gm_bpref", "set_map", "rprec_mult",
        "num_ret", "num_rel", "num_q", "err", "nerr", "udcg",
        "alpha_ndcg", "err_ia", "nerr_ia", "nrbp", "nnrbp", "p_ia", "strec", "map_ia",
    ]  # fmt: skip
    assert len({spec.kind for spec in REGISTRY}) == len(REGISTRY)
    for spec in REGISTRY:
        assert spec.description and spec.formula and spec.citation


def test_kernel_codes_come_from_the_registry() -> None:
    """The kernels' int constants are derived from `Kind`, never restated: a source scan finds no literal."""
    import inspect
    import re

    from ragmetrics.retrieval.kernels import (
        cascade,
        diversity,
        gain,
        inferred,
        interpolated,
        rank,
        rbp,
        score,
        sets,
    )  # fmt: skip

    for module in (score, sets, gain, rank, rbp, cascade, inferred, interpolated, diversity):
        source = inspect.getsource(module)
        assert not re.search(r"^[A-Z_]+ = \d+$", source, re.M) or module is gain, module.__name__
        for name in re.findall(r"^([A-Z_]+) = int\(Kind\.([A-Z_]+)\)$", source, re.M):
            assert name[0] == name[1] and getattr(module, name[0]) == int(getattr(Kind, name[1]))


def test_docs_metric_reference_is_generated_from_the_registry() -> None:
    doc = REPO / "docs" / "metrics.md"
    assert doc.read_text(encoding="utf-8") == render_reference(), (
        "docs/metrics.md is stale: run `python -m ragmetrics.retrieval.metrics > docs/metrics.md`"
    )


def test_judged_counts_judged_documents_of_the_top_k_whatever_their_grade() -> None:
    from ragmetrics import Qrels, Run, evaluate

    qrels = Qrels.from_dict({"q1": {"a": 1, "b": 0, "c": 2}, "q2": {"x": 1}})
    run = Run.from_dict({"q1": {"a": 0.9, "z": 0.8, "b": 0.7, "y": 0.6}, "q2": {"m": 0.5}})
    result = evaluate(qrels, run, ["judged@3", "judged@10", "judged"])
    # @10 of a 4-document ranking: the share of what was retrieved, as ir_measures' Judged@10.
    assert result.per_query["q1"] == {"judged@3": 2 / 3, "judged@10": 2 / 4, "judged": 2 / 4}
    assert result.per_query["q2"] == {"judged@3": 0.0, "judged@10": 0.0, "judged": 0.0}
    with pytest.raises(InputError, match="judged takes no relevance level"):
        parse_metric("judged@10-l2")
