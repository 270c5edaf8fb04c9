"""Per-query equality with ir_measures on the measures trec_eval lacks: ERR@k through gdeval (TREC Web track's
script, grades 0-4, 5 printed decimals, tied scores ordered by docno descending as trec_eval), nERR@k as
gdeval's ERR of the run over gdeval's ERR of the ideal run, and Judged@k. gdeval needs perl and numeric
topic ids."""

from __future__ import annotations

import math
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmetrics.retrieval.evaluate import evaluate

ir_measures = pytest.importorskip("ir_measures")
needs_perl = pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval (ir_measures' ERR) needs perl")

DOCS = [f"d{i}" for i in range(14)]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Qrels = dict[str, dict[str, int]]
RunDict = dict[str, dict[str, float]]


@st.composite
def collections(draw: st.DrawFn, *, ties: bool = True) -> tuple[Qrels, RunDict]:
    """1-4 numeric queries, each with at least one relevant document (gdeval prints no other), grades 0-4."""
    qrels: Qrels = {}
    run: RunDict = {}
    for q in range(draw(st.integers(1, 4))):
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=10, unique=True))
        grades = [draw(st.integers(1, 4))] + [draw(st.integers(0, 4)) for _ in judged[1:]]
        qrels[str(100 + q)] = dict(zip(judged, grades, strict=True))
        retrieved = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=12, unique=True))
        if ties:
            run[str(100 + q)] = {d: float(draw(st.integers(0, 3))) for d in retrieved}
        else:
            order = draw(st.permutations(range(len(retrieved))))
            run[str(100 + q)] = {d: float(s) for d, s in zip(retrieved, order, strict=True)}
    return qrels, run


def _per_query(measure: object, qrels: Qrels, run: RunDict) -> dict[str, float]:
    return {m.query_id: float(m.value) for m in ir_measures.iter_calc([measure], qrels, run)}


@needs_perl
@SETTINGS
@given(data=collections(), k=st.integers(1, 14))
def test_err_and_nerr_equal_gdeval(data: tuple[Qrels, RunDict], k: int) -> None:
    qrels, run = data
    ours = evaluate(qrels, run, [f"err@{k}", f"nerr@{k}"], query_set="intersection")
    err = _per_query(ir_measures.ERR @ k, qrels, run)
    # The ideal run: every judged document by grade, best first (ties as gdeval orders them: docno descending).
    ideal = {q: {d: float(g) for d, g in docs.items() if g > 0} or {"none": 0.0} for q, docs in qrels.items()}
    best = _per_query(ir_measures.ERR @ k, qrels, ideal)
    assert set(err) == set(ours.per_query)
    for qid, value in err.items():
        mine = ours.per_query[qid]
        assert f"{mine[f'err@{k}']:.5f}" == f"{value:.5f}", (qid, mine, value)
        normalised = value / best[qid] if best[qid] > 0 else 0.0
        # gdeval prints 5 decimals of each ERR; their ratio is known to within that rounding.
        tolerance = 1e-5 * (1 + normalised) / best[qid] if best[qid] > 0 else 1e-9
        assert math.isclose(mine[f"nerr@{k}"], normalised, abs_tol=tolerance), (qid, mine, normalised)


@SETTINGS
@given(data=collections(ties=False), k=st.integers(1, 14))
def test_judged_equals_ir_measures(data: tuple[Qrels, RunDict], k: int) -> None:
    """Untied scores: ir_measures' own Judged orders tied documents otherwise than trec_eval's rule."""
    qrels, run = data
    ours = evaluate(qrels, run, [f"judged@{k}"], query_set="intersection")
    theirs = _per_query(ir_measures.Judged @ k, qrels, run)
    for qid, value in theirs.items():
        assert math.isclose(ours.per_query[qid][f"judged@{k}"] or 0.0, value, abs_tol=1e-9), qid
