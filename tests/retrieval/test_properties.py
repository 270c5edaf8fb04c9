"""Property tests: per-query values equal pytrec_eval's (trec_eval, tied scores) and ranx's (untied) to 1e-9.

Random small collections: a few queries, a shared pool of document ids whose string order differs from
their numeric order (d10 < d2), grades from -1 (judged, unassessed) to 3, scores with many ties for the
trec_eval comparison. ranx is imported with numba's threading-layer setting restored afterwards, and its
thread count is restored after each call, so the rest of the test session keeps numba's defaults.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numba
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmetrics.retrieval.evaluate import evaluate

pytrec_eval = pytest.importorskip("pytrec_eval")

DOCS = [f"d{i}" for i in range(14)]
TOL = 1e-9
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RANX_SETTINGS = settings(SETTINGS, max_examples=40)  # ranx converts its inputs slowly on every call

Qrels = dict[str, dict[str, int]]
RunDict = dict[str, dict[str, float]]


@st.composite
def collections(draw: st.DrawFn, *, ties: bool, min_grade: int, max_grade: int) -> tuple[Qrels, RunDict]:
    """Qrels and a run over 1-4 shared queries; the run may add a query the qrels lack, every ranking is non-empty."""
    n_queries = draw(st.integers(1, 4))
    qrels: Qrels = {}
    run: RunDict = {}
    for q in range(n_queries):
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=10, unique=True))
        # the first judgement is non-negative: trec_eval reads stale memory for a query whose grades are all negative
        grades = [draw(st.integers(max(min_grade, 0), max_grade))]
        grades += [draw(st.integers(min_grade, max_grade)) for _ in judged[1:]]
        qrels[f"q{q}"] = dict(zip(judged, grades, strict=True))
        retrieved = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=12, unique=True))
        if ties:
            scores = [float(draw(st.integers(0, 3))) for _ in retrieved]
        else:
            scores = [float(s) / 7 for s in draw(st.permutations(range(len(retrieved))))]
        run[f"q{q}"] = dict(zip(retrieved, scores, strict=True))
    return qrels, run


def _close(ours: float, theirs: float) -> bool:
    return math.isclose(ours, theirs, rel_tol=0.0, abs_tol=TOL)


# ---------------------------------------------------------------------------------------------- pytrec_eval


@SETTINGS
@given(
    data=collections(ties=True, min_grade=-1, max_grade=3),
    k=st.integers(1, 14),
    level=st.integers(1, 3),
    extra_query=st.booleans(),
)
def test_equals_pytrec_eval_per_query(
    data: tuple[Qrels, RunDict], k: int, level: int, extra_query: bool
) -> None:
    qrels, run = data
    if extra_query:
        run = {**run, "zz": {"d1": 1.0}}  # a run query the qrels lack: ignored by both
    # ours <- trec_eval; ndcg and ndcg_cut ignore trec_eval's relevance level, so they map to level 1
    names = {
        f"P_{k}-l{level}": f"P_{k}",
        f"recall_{k}-l{level}": f"recall_{k}",
        f"map_cut_{k}-l{level}": f"map_cut_{k}",
        f"success_{k}-l{level}": f"success_{k}",
        f"map-l{level}": "map",
        f"r-precision-l{level}": "Rprec",
        f"mrr-l{level}": "recip_rank",
        f"bpref-l{level}": "bpref",
        f"hits-l{level}": "num_rel_ret",
        f"precision-l{level}": "set_P",
        f"recall-l{level}": "set_recall",
        f"f1-l{level}": "set_F",
        "ndcg": "ndcg",
        f"ndcg@{k}": f"ndcg_cut_{k}",
    }
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(names.values()), relevance_level=level)
    theirs = evaluator.evaluate(run)
    ours = evaluate(qrels, run, list(names), query_set="intersection")
    assert set(ours.per_query) == set(theirs)
    for qid, scores in theirs.items():
        for mine, trec in names.items():
            value = ours.per_query[qid][mine]
            assert value is not None
            assert _close(value, scores[trec]), (qid, mine, value, scores[trec])


# ---------------------------------------------------------------------------------------------- ranx


@pytest.fixture(scope="module")
def ranx() -> Iterator[Any]:
    layer = numba.config.THREADING_LAYER
    module = pytest.importorskip("ranx")
    numba.config.THREADING_LAYER = layer  # ranx sets "workqueue" on import
    yield module


def _ranx_per_query(ranx: Any, qrels: Qrels, run: RunDict, metrics: list[str]) -> dict[str, dict[str, float]]:
    threads = numba.get_num_threads()
    try:
        ranx_run = ranx.Run(run)
        ranx.evaluate(ranx.Qrels(qrels), ranx_run, metrics, return_mean=False)
    finally:
        numba.set_num_threads(threads)  # ranx sets 1 thread for fewer than 10 queries
    return {metric: {q: float(v) for q, v in ranx_run.scores[metric].items()} for metric in metrics}


def _compare_with_ranx(ranx: Any, qrels: Qrels, run: RunDict, metrics: list[str]) -> None:
    theirs = _ranx_per_query(ranx, qrels, run, metrics)
    ours = evaluate(qrels, run, metrics)
    for metric in metrics:
        for qid, expected in theirs[metric].items():
            value = ours.per_query[qid][metric]
            assert value is not None
            assert _close(value, expected), (qid, metric, value, expected)


@pytest.mark.slow  # ~60 s, most of it ranx compiling its kernels; CI runs it in the slow step
@RANX_SETTINGS
@given(data=collections(ties=False, min_grade=0, max_grade=3), k=st.integers(1, 14), level=st.integers(1, 2))
def test_equals_ranx_per_query(ranx: Any, data: tuple[Qrels, RunDict], k: int, level: int) -> None:
    qrels, run = data
    suffix = "" if level == 1 else f"-l{level}"
    names = [
        "hits",
        "hit_rate",
        "precision",
        "recall",
        "f1",
        "mrr",
        "map",
        "dcg",
        "ndcg",
        "dcg_burges",
        "ndcg_burges",
    ]
    metrics = [f"{n}{suffix}" for n in names] + [f"{n}@{k}{suffix}" for n in names]
    metrics.append(f"r-precision{suffix}")
    if all(
        any(g >= level for g in judged.values()) and any(g < level for g in judged.values())
        for judged in qrels.values()
    ):
        metrics.append(f"bpref{suffix}")  # ranx divides by zero without a relevant or a non-relevant document
    _compare_with_ranx(ranx, qrels, run, metrics)


@RANX_SETTINGS
@given(data=collections(ties=False, min_grade=0, max_grade=1), p=st.sampled_from([1, 5, 8, 95]))
def test_rbp_equals_ranx_on_binary_qrels(ranx: Any, data: tuple[Qrels, RunDict], p: int) -> None:
    qrels, run = data
    _compare_with_ranx(
        ranx, qrels, run, [f"rbp.{p}"]
    )  # ranx has no rbp cutoff, and its gain is the raw grade
