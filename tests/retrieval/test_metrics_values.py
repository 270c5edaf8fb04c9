"""Metric values on small hand-checked cases: conventions, edge cases, query sets and result metadata."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragmetrics.errors import InputError
from ragmetrics.retrieval._lazy import force_path
from ragmetrics.retrieval.evaluate import (
    _params,
    _utilities,
    _weights,
    evaluate,
    score_matrix,
    translate_docs,
)
from ragmetrics.retrieval.kernels import score
from ragmetrics.retrieval.metrics import REGISTRY
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run
from ragmetrics.retrieval.utilities import AbstentionProbabilities
from ragmetrics.schema import RunResult

ALL_METRICS = [
    "hits", "hit_rate", "precision", "recall", "f1", "r-precision", "bpref", "rbp.80", "mrr", "map",
    "dcg", "ndcg", "dcg_burges", "ndcg_burges", "precision@10", "ndcg@5-l2", "map@3", "mrr@2",
]  # fmt: skip


def one(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], metric: str, qid: str = "q"
) -> float:
    value = evaluate(qrels, run, [metric]).per_query[qid][metric]
    assert value is not None
    return value


def test_every_metric_is_zero_for_an_empty_run() -> None:
    qrels = Qrels.from_dict({"q1": {"a": 1, "b": 2}, "q2": {"c": 1}})
    for run in (Run.from_dict({}), Run.from_dict({"q1": {}, "q2": {}})):
        result = evaluate(qrels, run, ALL_METRICS)
        assert set(result.per_query) == {"q1", "q2"}
        for scores in result.per_query.values():
            assert scores == dict.fromkeys(ALL_METRICS, 0.0)
        assert result.aggregate == dict.fromkeys(ALL_METRICS, 0.0)


def test_a_query_without_relevant_documents_scores_zero_and_counts_in_the_mean() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 0, "c": -1}}
    run = {"q1": {"a": 1.0}, "q2": {"b": 1.0, "c": 0.5}}
    result = evaluate(qrels, run, ALL_METRICS)
    assert all(v == 0.0 for v in result.per_query["q2"].values())
    assert result.aggregate["ndcg"] == 0.5
    assert result.aggregate["map"] == 0.5
    assert result.metadata.num_queries == 2


def test_ties_are_broken_by_document_id_descending_whatever_the_input_order() -> None:
    qrels = {"q": {"a": 1}}
    assert one(qrels, {"q": {"a": 1.0, "b": 1.0}}, "mrr") == 0.5
    assert one(qrels, {"q": {"b": 1.0, "a": 1.0}}, "mrr") == 0.5
    assert one(qrels, {"q": {"a": 1.0, "b": 0.5}}, "mrr") == 1.0
    # id order is string order: "a10" < "a9", so a9 ranks first among tied documents
    assert one({"q": {"a10": 1}}, {"q": {"a10": 2.0, "a9": 2.0}}, "mrr") == 0.5


def test_precision_at_k_divides_by_k_and_without_cutoff_by_the_number_retrieved() -> None:
    qrels = {"q": {"a": 1, "b": 1, "c": 0}}
    run = {"q": {"a": 3.0, "c": 2.0, "b": 1.0}}
    assert one(qrels, run, "precision@10") == pytest.approx(2 / 10)
    assert one(qrels, run, "precision@2") == pytest.approx(1 / 2)
    assert one(qrels, run, "precision") == pytest.approx(2 / 3)
    assert one(qrels, run, "hits@2") == 1.0
    assert one(qrels, run, "f1@2") == pytest.approx(2 * 0.5 * 0.5 / (0.5 + 0.5))


def test_map_at_k_divides_by_all_relevant_documents() -> None:
    qrels = {"q": {"a": 1, "b": 1, "c": 1, "d": 1}}
    run = {"q": {"a": 4.0, "x": 3.0, "b": 2.0, "c": 1.0}}
    assert one(qrels, run, "map@3") == pytest.approx((1 + 2 / 3) / 4)
    assert one(qrels, run, "map") == pytest.approx((1 + 2 / 3 + 3 / 4) / 4)
    assert one(qrels, run, "r-precision") == pytest.approx(3 / 4)
    assert one(qrels, run, "recall@2") == pytest.approx(1 / 4)


def test_graded_ndcg_uses_the_grade_and_an_ideal_cut_at_k() -> None:
    qrels = {"q": {"a": 3, "b": 2, "c": 1}}
    run = {"q": {"c": 3.0, "x": 2.0, "a": 1.0}}
    dcg = 1 / math.log2(2) + 3 / math.log2(4)
    assert one(qrels, run, "dcg") == pytest.approx(dcg)
    assert one(qrels, run, "ndcg") == pytest.approx(dcg / (3 + 2 / math.log2(3) + 1 / 2))
    assert one(qrels, run, "ndcg@1") == pytest.approx(1 / 3)
    burges = 1 + 7 / 2
    assert one(qrels, run, "dcg_burges") == pytest.approx(burges)
    assert one(qrels, run, "ndcg_burges") == pytest.approx(burges / (7 + 3 / math.log2(3) + 1 / 2))
    # -l2: grade 1 gains nothing, in the ranking and in the ideal
    assert one(qrels, run, "ndcg-l2") == pytest.approx((3 / 2) / (3 + 2 / math.log2(3)))


def test_relevance_level_applies_to_binary_metrics() -> None:
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    assert one(qrels, run, "mrr") == 1.0
    assert one(qrels, run, "mrr-l2") == 0.5
    assert one(qrels, run, "recall@1-l2") == 0.0
    assert one(qrels, run, "P_2-l2") == 0.5


def test_rbp_gains_are_normalised_by_the_highest_grade() -> None:
    p = 0.8
    assert one({"q": {"a": 1, "b": 1}}, {"q": {"x": 2.0, "a": 1.0}}, "rbp.8") == pytest.approx((1 - p) * p)
    graded = {"q": {"a": 3, "b": 1}}
    run = {"q": {"b": 2.0, "a": 1.0}}
    assert one(graded, run, "rbp.8") == pytest.approx((1 - p) * (1 / 3 + p))
    assert one(graded, run, "rbp.8-l2") == pytest.approx((1 - p) * p)
    assert one(graded, run, "rbp.8@1") == pytest.approx((1 - p) / 3)


def test_bpref_skips_unjudged_and_negative_grades() -> None:
    qrels = {"q": {"r1": 1, "r2": 1, "n1": 0, "u": -1}}
    run = {"q": {"u": 5.0, "x": 4.0, "r1": 3.0, "n1": 2.0, "r2": 1.0}}
    # N = 1: r1 has no judged non-relevant above it, r2 has one: 1 - min(1, 2) / min(2, 1) = 0
    assert one(qrels, run, "bpref") == pytest.approx(0.5)
    # negative grades are not relevant elsewhere either
    assert one(qrels, run, "precision@1") == 0.0
    # without any judged non-relevant document each retrieved relevant one counts fully
    assert one({"q": {"a": 1, "b": 1}}, {"q": {"z": 2.0, "a": 1.0}}, "bpref") == 0.5


def test_query_sets_missing_and_extra_queries() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 1.0}, "q3": {"c": 1.0}}
    default = evaluate(qrels, run, ["mrr"])
    assert default.per_query == {"q1": {"mrr": 1.0}, "q2": {"mrr": 0.0}}
    assert default.aggregate == {"mrr": 0.5}
    assert default.metadata.missing_queries == ["q2"]
    assert default.metadata.extra_queries == ["q3"]
    assert (default.metadata.num_queries, default.metadata.num_qrels_queries) == (2, 2)
    assert default.metadata.num_run_queries == 2
    inter = evaluate(qrels, run, ["mrr"], query_set="intersection")
    assert inter.per_query == {"q1": {"mrr": 1.0}}
    assert inter.aggregate == {"mrr": 1.0}
    assert inter.metadata.missing_queries == ["q2"]
    assert inter.metadata.metric_settings["query_set"] == "intersection"


def test_bad_query_set_and_disjoint_intersection_raise() -> None:
    with pytest.raises(InputError, match="unknown query set"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["map"], query_set="all")
    with pytest.raises(InputError, match="shares no query"):
        evaluate({"q": {"a": 1}}, {"other": {"a": 1.0}}, ["map"], query_set="intersection")
    with pytest.raises(InputError, match="unknown metric"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["ndcg@10", "bogus@5"])


def test_result_is_keyed_by_the_spelling_used_and_records_the_canonical_form() -> None:
    result = evaluate(
        {"q": {"a": 1}}, {"q": {"b": 2.0, "a": 1.0}}, ["P_2", "precision@2", "recip_rank"], name="bm25"
    )
    assert result.name == "bm25"
    assert result.metrics == ["P_2", "precision@2", "recip_rank"]
    assert result.per_query["q"] == {"P_2": 0.5, "precision@2": 0.5, "recip_rank": 0.5}
    settings = result.metadata.metric_settings
    assert settings["metrics"]["P_2"] == {
        "canonical": "precision@2", "metric": "precision", "cutoff": 2, "relevance_level": 1,
    }  # fmt: skip
    assert settings["relevance_level"] == {"P_2": 1, "precision@2": 1, "recip_rank": 1}
    assert settings["tie_rule"].startswith("score descending")
    assert result.metadata.kind == "retrieval"
    assert RunResult.model_validate_json(result.model_dump_json()) == result


def test_run_name_defaults_to_the_run() -> None:
    run = Run.from_dict({"q": {"a": 1.0}}, name="dense")
    assert evaluate(Qrels.from_dict({"q": {"a": 1}}), run, "map").name == "dense"


def test_score_matrix_rows_follow_the_qrels_and_columns_the_metrics() -> None:
    qrels = {"q2": {"a": 1}, "q1": {"a": 1, "b": 1}}
    matrix = score_matrix(qrels, {"q1": {"a": 2.0, "b": 1.0}, "q2": {"b": 1.0}}, ["recall", "hits"])
    assert matrix.query_ids == ("q1", "q2")
    assert matrix.metrics == ("recall", "hits")
    np.testing.assert_array_equal(matrix.values, [[1.0, 2.0], [0.0, 0.0]])
    np.testing.assert_array_equal(matrix.column("hits"), [2.0, 0.0])
    assert matrix.means() == {"recall": 0.5, "hits": 1.0}
    with pytest.raises(KeyError):
        matrix.column("map")


def test_translate_docs_maps_run_vocabulary_to_qrels_codes() -> None:
    qrels_vocab = np.array(["a", "c", "e"])
    np.testing.assert_array_equal(translate_docs(qrels_vocab, np.array(["a", "b", "e", "z"])), [0, -1, 2, -1])
    np.testing.assert_array_equal(translate_docs(np.array([], dtype=str), np.array(["a"])), [-1])
    # different widths, non-ASCII ids and object arrays; order is code-point order
    qrels_vocab = np.array(sorted(["doc-1", "doc-10", "dóc", "日本", "😀x"]), dtype=object)
    run_vocab = np.array(sorted(["doc-1", "doc-100", "dóc", "x", "😀x", "😀"]))
    expected = [list(qrels_vocab).index(d) if d in qrels_vocab else -1 for d in run_vocab]
    np.testing.assert_array_equal(translate_docs(qrels_vocab, run_vocab), expected)


def test_python_serial_and_parallel_kernels_agree() -> None:
    """The same kernels run as plain Python (small inputs), compiled on one thread, and compiled in parallel."""
    rng = np.random.default_rng(7)
    n_q, n_docs = 40, 60
    qrels = {
        f"q{i}": {f"d{j}": int(rng.integers(-1, 4)) for j in rng.choice(n_docs, 15, replace=False)}
        for i in range(n_q)
    }
    run = {
        f"q{i}": {f"d{j}": float(rng.integers(0, 5)) for j in rng.choice(n_docs, 30, replace=False)}
        for i in range(n_q)
    }
    q, r = Qrels.from_dict(qrels), Run.from_dict(run)
    points = {"recall": "@0.3", "multiple": "@0.5"}
    metrics = [
        f"{spec.name}.9" if spec.persistence else spec.name + points.get(spec.point or "", "")
        for spec in REGISTRY
        if not spec.subtopics  # intent-aware metrics read subtopic qrels: tests/retrieval/test_diversity.py
    ] + [
        "ndcg@5-l2",
        "map@10",
        "err@5",
        "nerr@5-l2",
        "rbp_resid.8@4",
        "infap-l2",
        "udcg@10",
        "udcg.irr=-0.5@5-l2",
    ]
    # udcg's utilities: a probability for every retrieved passage, some exactly 0 or 1
    utilities = AbstentionProbabilities.from_dict(
        {qid: {doc: float(rng.choice([0.0, 1.0, rng.random()])) for doc in docs} for qid, docs in run.items()}
    )
    matrix = score_matrix(q, r, metrics, utilities=utilities)
    doc_map = translate_docs(q.doc_vocab, r.doc_vocab)
    rows = np.arange(n_q, dtype=np.int64)
    useful = _utilities(matrix.requests, utilities, r, q, matrix.query_ids, rows, None)
    assert useful.shape == r.doc_codes.shape and (useful != 1.0).any()
    args = (
        (q.offsets, q.doc_codes, q.grades), (r.offsets, r.doc_codes, doc_map, useful),
        np.arange(n_q, dtype=np.int64), np.arange(n_q, dtype=np.int64),
        (
            np.array([int(x.spec.kind) for x in matrix.requests], dtype=np.int64),
            np.array([x.cutoff for x in matrix.requests], dtype=np.int64),
            np.array([x.level for x in matrix.requests], dtype=np.int64),
            _params(matrix.requests, q),
            _weights(matrix.requests),
        ),
        np.full((n_q, len(matrix.requests)), -1, dtype=np.int64),
    )  # fmt: skip
    python = score.score_all_serial.py(*args)
    serial = score.score_all_serial.compiled(*args)
    parallel = score.score_all_parallel.compiled(*args)
    np.testing.assert_array_equal(serial, parallel)
    np.testing.assert_array_equal(serial, python)
    np.testing.assert_array_equal(serial, matrix.values)
    with force_path(True):
        np.testing.assert_array_equal(score_matrix(q, r, metrics, utilities=utilities).values, python)


def test_wrong_container_types_are_rejected() -> None:
    qrels = Qrels.from_dict({"q": {"a": 1}})
    with pytest.raises(TypeError, match=r"run must be a ragmetrics\.Run"):
        evaluate(qrels, qrels, ["map"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"qrels must be a ragmetrics\.Qrels"):
        evaluate([("q", "a", 1)], {"q": {"a": 1.0}}, ["map"])  # type: ignore[arg-type]


def test_the_further_trec_eval_measures_by_hand() -> None:
    # Ranking: a (grade 2), x (absent: outside the pool), b (0), p (-1: pooled, not judged), c (1); R = 3 (a, c, e).
    qrels = {"q": {"a": 2, "b": 0, "c": 1, "e": 3, "p": -1}}
    run = {"q": {"a": 5.0, "x": 4.0, "b": 3.0, "p": 2.0, "c": 1.0}}
    got = evaluate(
        qrels, run,
        ["infap", "rbp_resid.5", "rbp_resid.5@2", "iprec@0", "iprec@0.5", "iprec@1", "set_map",
         "rprec_mult@0.5", "num_ret", "num_rel", "err@5", "nerr@5", "judged@10"],
    ).per_query["q"]  # fmt: skip
    # infAP: a at rank 1 counts 1; c at rank 5 (j = 4 above it; pool above = a, b, p = 3; judged: 1 rel, 1 non):
    # 1/5 + 4/5 * (3/4) * (1 + e) / (2 + 2e).
    e = 1e-5
    assert got["infap"] == pytest.approx((1 + 1 / 5 + 4 / 5 * 3 / 4 * (1 + e) / (2 + 2 * e)) / 3)
    # rbp_resid.5: unjudged at ranks 2 (x) and 4 (p): 0.5^5 + 0.5 (0.5 + 0.125); at @2 only x: 0.25 + 0.5 * 0.5.
    assert got["rbp_resid.5"] == pytest.approx(0.5**5 + 0.5 * (0.5 + 0.125))
    assert got["rbp_resid.5@2"] == pytest.approx(0.25 + 0.25)
    # Precision at ranks 1..5: 1, 1/2, 1/3, 1/4, 2/5. iprec@0: the best, 1; @0.5 (c = round(1.5) = 2, the
    # second relevant at rank 5): 2/5; @1 (c = 3 > 2 retrieved): 0.
    assert (got["iprec@0"], got["iprec@0.5"], got["iprec@1"]) == (1.0, pytest.approx(0.4), 0.0)
    assert got["set_map"] == pytest.approx(2 * 2 / (5 * 3))
    assert got["rprec_mult@0.5"] == pytest.approx(1 / 2)  # c = floor(1.5 + 0.9) = 2: a of (a, x)
    assert (got["num_ret"], got["num_rel"]) == (5.0, 3.0)
    # ERR with g_max 4: R(2) = 3/16 at rank 1, R(1) = 1/16 at rank 5; the ideal is e, a, c (3, 2, 1).
    err = 3 / 16 + (1 - 3 / 16) * (1 / 16) / 5
    ideal = 7 / 16 + (1 - 7 / 16) * (3 / 16) / 2 + (1 - 7 / 16) * (1 - 3 / 16) * (1 / 16) / 3
    assert got["err@5"] == pytest.approx(err)
    assert got["nerr@5"] == pytest.approx(err / ideal)
    assert got["judged@10"] == pytest.approx(3 / 5)  # x is absent, p pooled but not judged


def test_sums_and_geometric_means_aggregate_as_trec_eval_and_survive_a_merge() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1, "c": 1}}
    run = {"q1": {"a": 1.0, "z": 0.5}, "q2": {"z": 1.0}}
    result = evaluate(qrels, run, ["num_ret", "num_rel", "num_q", "gm_map", "map"])
    assert result.aggregate["num_ret"] == 3.0 and result.aggregate["num_rel"] == 3.0
    assert result.aggregate["num_q"] == 2.0
    # AP 1 and 0: the mean 0.5, the geometric mean sqrt(1 * 1e-5).
    assert result.aggregate["map"] == 0.5
    assert result.aggregate["gm_map"] == pytest.approx(math.sqrt(1e-5))
    result.recompute_aggregate()  # what merges and reloaded reports do: the aggregation is in the metadata
    assert result.aggregate["gm_map"] == pytest.approx(math.sqrt(1e-5)) and result.aggregate["num_ret"] == 3.0
