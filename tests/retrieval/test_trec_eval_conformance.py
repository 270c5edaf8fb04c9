"""Values equal to trec_eval's own printed outputs (../shared/trec_eval_conformance), to 4 decimals.

Every measure both define is compared, per query and for `all`: map, P_k, recall_k, Rprec, recip_rank,
bpref, ndcg, ndcg_cut_k, success_k, map_cut_k, set_P, set_recall, set_F, rbp (p = 0.9) and num_rel_ret
(summed hits); infAP, rbp_resid, iprec_at_recall_r, 11pt_avg, gm_map, gm_bpref (geometric means), set_map,
Rprec_mult_m, num_ret, num_rel and num_q (sums). trec_eval ignores -l for ndcg, rbp and rbp_resid (their gain
is the grade), and num_ret and num_q do not depend on grades, so under -l2 those are compared with
ragmetrics' metrics at level 1; every other measure gets ``-l2``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragmetrics.retrieval.evaluate import QuerySet, evaluate
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run
from ragmetrics.schema import RunResult

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "trec_eval_conformance"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"trec_eval conformance data absent: {DATA}")

SHARED = re.compile(
    r"^(map|bpref|Rprec|recip_rank|ndcg|num_rel_ret|set_P|set_recall|set_F|rbp"
    r"|infAP|rbp_resid|11pt_avg|gm_map|gm_bpref|set_map|num_ret|num_rel|num_q"
    r"|(P|recall|ndcg_cut|map_cut|success)_\d+|(iprec_at_recall|Rprec_mult)_[\d.]+)$"
)
LEVEL_BLIND = re.compile(r"^(ndcg|ndcg_cut_\d+|rbp|rbp_resid|num_ret|num_q)$")
SUMMED = frozenset({"num_rel_ret", "num_ret", "num_rel", "num_q"})

# expected output, qrels, run, relevance level, query set (trec_eval -c is ragmetrics' default)
CASES: list[tuple[str, str, str, int, QuerySet]] = [
    ("out.test", "qrels.test", "results.test", 1, "intersection"),
    ("out.test.aq", "qrels.test", "results.test", 1, "intersection"),
    ("out.test.aqc", "qrels.test", "results.trunc", 1, "qrels"),
    ("out.test.aql", "qrels.rel_level", "results.test", 2, "intersection"),
]


def _expected(path: Path) -> dict[str, dict[str, str]]:
    """measure -> query (or 'all') -> printed value."""
    table: dict[str, dict[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        measure, qid, value = (field.strip() for field in line.split("\t"))
        table.setdefault(measure, {})[qid] = value
    return table


def _spelling(measure: str, level: int) -> str:
    name = {"rbp": "rbp.9", "rbp_resid": "rbp_resid.9"}.get(measure, measure)
    return name if level == 1 or LEVEL_BLIND.match(measure) else f"{name}-l{level}"


@pytest.mark.parametrize(
    ("output", "qrels_file", "run_file", "level", "query_set"), CASES, ids=[c[0] for c in CASES]
)
def test_matches_trec_eval(
    output: str, qrels_file: str, run_file: str, level: int, query_set: QuerySet
) -> None:
    expected = _expected(DATA / output)
    measures = sorted(m for m in expected if SHARED.match(m))
    assert len(measures) == (29 if output == "out.test" else 79)
    spellings = {m: _spelling(m, level) for m in measures}
    result = evaluate(
        Qrels.from_trec(DATA / qrels_file),
        Run.from_trec(DATA / run_file),
        list(spellings.values()),
        query_set=query_set,
    )
    assert result.metadata.num_queries == int(expected["num_q"]["all"])
    mismatches = []
    for measure, spelling in spellings.items():
        for qid, printed in expected[measure].items():
            got = _ours(result, measure, spelling, qid)
            ok = got == float(printed) if measure in SUMMED else f"{got:.4f}" == printed
            if not ok:
                mismatches.append(f"{measure} ({spelling}) {qid}: trec_eval {printed}, ragmetrics {got:.6f}")
    assert not mismatches, "\n".join(mismatches)


def _ours(result: RunResult, measure: str, spelling: str, qid: str) -> float:
    """Our value as trec_eval prints it: `all` is our aggregate (mean, sum or geometric mean), except
    num_rel_ret whose `all` trec_eval sums while our hits averages."""
    if qid != "all":
        value = result.per_query[qid][spelling]
    elif measure == "num_rel_ret":
        value = sum(scores[spelling] or 0.0 for scores in result.per_query.values())
    else:
        value = result.aggregate[spelling]
    assert value is not None
    return value


def test_missing_run_query_is_reported_under_minus_c() -> None:
    result = evaluate(Qrels.from_trec(DATA / "qrels.test"), Run.from_trec(DATA / "results.trunc"), ["map"])
    assert result.metadata.missing_queries == ["302"]
    assert result.per_query["302"] == {"map": 0.0}
    assert result.name == "STANDARD"


def test_measure_parameters_match_trec_eval() -> None:
    """out.test.meas_params: iprec_at_recall and Rprec_mult at trec_eval's non-default points (per query and
    all), beside P_k, recall_k, ndcg_cut_k and success_k at theirs."""
    expected = _expected(DATA / "out.test.meas_params")
    measures = sorted(
        m for m in expected if re.match(r"^(iprec_at_recall|Rprec_mult|P|recall|ndcg_cut|success)_[\d.]+$", m)
    )
    assert len(measures) == 19
    result = evaluate(
        Qrels.from_trec(DATA / "qrels.test"),
        Run.from_trec(DATA / "results.test"),
        measures,
        query_set="intersection",
    )
    compared = 0
    for measure in measures:
        for qid, printed in expected[measure].items():
            assert f"{_ours(result, measure, measure, qid):.4f}" == printed, (measure, qid)
            compared += 1
    assert compared == 19 * 4
