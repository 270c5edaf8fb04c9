"""compare(): scoring runs against qrels, then comparing them, end to end through the retrieval core."""

from __future__ import annotations

from typing import Any

import pytest
import scipy.stats as ss

from ragmetrics import Qrels, Run, compare
from ragmetrics.errors import InputError

QRELS = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}, "q3": {"d4": 1}, "q4": {"d5": 1, "d6": 1}}


def _runs() -> list[Run]:
    a = Run.from_dict(
        {"q1": {"d1": 0.9, "d2": 0.5}, "q2": {"d3": 0.1, "d9": 0.8}, "q4": {"d7": 1.0}}, name="a"
    )
    b = Run.from_dict(
        {
            "q1": {"d2": 0.9, "d1": 0.5},
            "q2": {"d3": 0.9},
            "q3": {"d4": 1.0},
            "q4": {"d5": 0.4},
            "q9": {"d1": 1.0},
        },
        name="b",
    )
    return [a, b]


def test_missing_query_scores_zero_and_is_reported() -> None:
    report = compare(Qrels.from_dict(QRELS), _runs(), ["mrr"], test="t", bootstrap_samples=200)
    assert report.metadata.query_count == 4
    assert report.metadata.missing_queries == {"a": ["q3"]}
    (c,) = report.comparisons
    # reciprocal ranks: a = [1, 1/2, 0, 0], b = [1/2, 1, 1, 1]
    a, b = [1.0, 0.5, 0.0, 0.0], [0.5, 1.0, 1.0, 1.0]
    assert (c.mean_baseline, c.mean_candidate) == pytest.approx((0.375, 0.875))
    assert c.p_value == pytest.approx(ss.ttest_rel(b, a).pvalue, abs=1e-12)
    assert (c.wins, c.ties, c.losses) == (3, 0, 1)
    assert any("absent from the qrels" in note for note in report.metadata.notes)


def test_intersection_compares_shared_queries_only() -> None:
    report = compare(Qrels.from_dict(QRELS), _runs(), ["mrr"], test="sign", query_set="intersection")
    assert report.metadata.query_count == 3
    assert report.comparisons[0].n == 3


def test_errors_before_scoring() -> None:
    qrels = Qrels.from_dict(QRELS)
    with pytest.raises(InputError, match="at least two runs"):
        compare(qrels, _runs()[:1], ["mrr"])
    with pytest.raises(InputError, match="unknown test 'z'"):
        compare(qrels, _runs(), ["mrr"], test="z")
    # Checked before scoring: the qrels argument is never looked at.
    not_qrels: Any = None
    for kwargs, message in [
        ({"alpha": 1.5}, "alpha must be in"),
        ({"confidence": 0.0}, "confidence must be in"),
        ({"bootstrap_samples": 0}, "bootstrap_samples must be >= 1"),
        ({"correction_scope": "run"}, "unknown correction scope"),
    ]:
        with pytest.raises(InputError, match=message):
            compare(not_qrels, _runs(), ["mrr"], **kwargs)
    a, b = _runs()
    with pytest.raises(InputError, match=r"repeated: \['a'\]"):
        compare(not_qrels, [a, b.renamed("a")], ["mrr"])


def test_confidence_and_scope_reach_the_report() -> None:
    report = compare(
        Qrels.from_dict(QRELS),
        _runs(),
        ["mrr", "ndcg"],
        test="sign",
        correction="bonferroni",
        bootstrap_samples=200,
        confidence=0.9,
        correction_scope="all",
    )
    assert report.settings.confidence == 0.9
    assert report.settings.correction_scope == "all"
    for c in report.comparisons:
        assert c.p_corrected == pytest.approx(min(1.0, 2 * c.p_value))


def test_public_compare_is_callable_whatever_the_import_order() -> None:
    import ragmetrics
    import ragmetrics.render.tables  # a submodule import must not rebind ragmetrics.compare

    report = ragmetrics.compare(Qrels.from_dict(QRELS), _runs(), ["mrr"], test="sign", bootstrap_samples=50)
    assert len(report.comparisons) == 1
