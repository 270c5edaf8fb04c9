"""Review fix: in a night, a pooled passage without a grade (a failed call, the budget spent) makes that
question's `utility:` scores failures for every run ranking it in the top k, never a silent 0 (a metric reads an
absent judgment as not relevant)."""

from __future__ import annotations

import json
from pathlib import Path

from test_utility_night import _config

from ragmetrics.nightly.pipeline import run_pipeline
from ragmetrics.retrieval.run import Run
from ragmetrics.utility.build import pool_pairs


def test_an_ungraded_pair_fails_the_question_instead_of_counting_as_irrelevant(tmp_path: Path) -> None:
    outcome = run_pipeline(_config(tmp_path, max_requests=4))
    assert outcome.folder is not None
    rows = [json.loads(line) for line in (outcome.folder / "utility" / "judgments.jsonl").read_text().splitlines()]
    ungraded = {(r["query_id"], r["doc_id"]) for r in rows if r["grade"] is None}
    assert ungraded and all(r["cause"] == "budget_reached" for r in rows if r["grade"] is None)
    weaker = Run.from_trec(tmp_path / "weaker.trec")
    hit = {q for q, d in pool_pairs([weaker], 5) if (q, d) in ungraded}
    result = next(r for r in outcome.report.runs if r.name == "weaker")
    for q in hit:  # before: a number, the ungraded passages read as not relevant
        assert result.per_query[q].get("utility:ndcg@5") is None
    failed = {(f.query_id, f.metric): f.cause for f in result.failures}
    assert all(failed.get((q, "utility:ndcg@5")) == "budget_reached" for q in hit)
    assert any("their utility: scores are failures, not 0" in n for n in outcome.notes)
    graded_only = {q for q, _ in pool_pairs([weaker], 5)} - hit
    assert all(result.per_query[q].get("utility:ndcg@5") is not None for q in graded_only)
