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


@SETTINGS
@given(
    data=collections(ties=True, min_grade=-1, max_grade=3),
    level=st.integers(1, 3),
)
def test_equals_pytrec_eval_on_the_further_trec_eval_measures(
    data: tuple[Qrels, RunDict], level: int
) -> None:
    """infAP (a grade of -1 is pooled but unjudged, an absent document outside the pool), interpolated
    precision at the 11 recall points and their average, Rprec_mult, set_map, gm_map and gm_bpref (per query
    trec_eval keeps log(max(v, 1e-5)); ours keeps v), and the counts num_ret and num_rel.

    pytrec_eval is trec_eval 9, which turned a recall level r into the c-th relevant document by
    floor(r R + 0.9); trec_eval 10, which ragmetrics follows (the conformance test), rounds r R. Interpolated
    precision is compared where both give the same c, 11pt_avg where they do at all 11 points."""
    qrels, run = data
    points = [f"{i / 10:.2f}" for i in range(11)]
    multiples = [f"{m / 10:.2f}" for m in range(2, 21, 2)]
    names = {
        f"infap-l{level}": "infAP",
        f"11pt_avg-l{level}": "11pt_avg",
        f"set_map-l{level}": "set_map",
        "num_ret": "num_ret",
        f"num_rel-l{level}": "num_rel",
        **{f"iprec@{p}-l{level}": f"iprec_at_recall_{p}" for p in points},
        **{f"rprec_mult@{m}-l{level}": f"Rprec_mult_{m}" for m in multiples},
    }
    logged = {f"gm_map-l{level}": "gm_map", f"gm_bpref-l{level}": "gm_bpref"}
    measures = {"infAP", "11pt_avg", "set_map", "num_ret", "num_rel", "iprec_at_recall", "Rprec_mult",
                "gm_map", "gm_bpref"}  # fmt: skip
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level).evaluate(run)
    ours = evaluate(qrels, run, [*names, *logged], query_set="intersection")
    compared = 0
    for qid, scores in theirs.items():
        n_rel = sum(1 for grade in qrels[qid].values() if grade >= level)
        same = {p for p in points if int(float(p) * n_rel + 0.9) == int(float(p) * n_rel + 0.5)}
        for mine, trec in names.items():
            if trec.startswith("iprec_at_recall_") and trec[-4:] not in same:
                continue
            if trec == "11pt_avg" and len(same) < len(points):
                continue
            value = ours.per_query[qid][mine]
            assert value is not None and _close(value, scores[trec]), (qid, mine, value, scores[trec])
            compared += 1
        for mine, trec in logged.items():
            value = ours.per_query[qid][mine]
            assert value is not None and _close(math.log(max(value, 1e-5)), scores[trec]), (qid, mine)
    assert compared >= len(theirs) * (len(names) - len(points) - 1)


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
