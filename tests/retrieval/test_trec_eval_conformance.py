"""Values equal to trec_eval's own printed outputs (../shared/trec_eval_conformance), to 4 decimals.

Every measure both define is compared, per query and for `all`: map, P_k, recall_k, Rprec, recip_rank,
bpref, ndcg, ndcg_cut_k, success_k, map_cut_k, set_P, set_recall, set_F, rbp (p = 0.9) and num_rel_ret
(summed hits). trec_eval ignores -l for ndcg and rbp (their gain is the grade), so under -l2 those are
compared with ragmetrics' metrics at level 1; every other measure gets ``-l2``.
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
    r"|(P|recall|ndcg_cut|map_cut|success)_\d+)$"
)
LEVEL_BLIND = re.compile(r"^(ndcg|ndcg_cut_\d+|rbp)$")

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
    name = "rbp.9" if measure == "rbp" else measure
    return name if level == 1 or LEVEL_BLIND.match(measure) else f"{name}-l{level}"


@pytest.mark.parametrize(
    ("output", "qrels_file", "run_file", "level", "query_set"), CASES, ids=[c[0] for c in CASES]
)
def test_matches_trec_eval(
    output: str, qrels_file: str, run_file: str, level: int, query_set: QuerySet
) -> None:
    expected = _expected(DATA / output)
    measures = sorted(m for m in expected if SHARED.match(m))
    assert len(measures) == (14 if output == "out.test" else 49)
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
            ok = got == float(printed) if measure == "num_rel_ret" else f"{got:.4f}" == printed
            if not ok:
                mismatches.append(f"{measure} ({spelling}) {qid}: trec_eval {printed}, ragmetrics {got:.6f}")
    assert not mismatches, "\n".join(mismatches)


def _ours(result: RunResult, measure: str, spelling: str, qid: str) -> float:
    """Our value as trec_eval prints it: `all` is the mean, except num_rel_ret whose `all` is the sum."""
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
