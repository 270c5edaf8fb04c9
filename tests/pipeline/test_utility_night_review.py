"""Review fix: a night with `utility_qrels:`, two runs and a question without a reference answer runs, the
question's `utility:` scores not applicable with the reason (it used to stop the night: the comparisons refuse
a run with a question missing a metric)."""

from __future__ import annotations

from pathlib import Path

import yaml

from ragmetrics.nightly.pipeline import run_pipeline

from .helpers import passages, qa_rows, write_jsonl


def test_a_question_without_a_reference_is_not_applicable_on_utility_qrels(tmp_path: Path) -> None:
    rows = qa_rows()
    del rows[0]["reference"]
    write_jsonl(tmp_path / "qa.jsonl", rows)
    write_jsonl(tmp_path / "passages.jsonl", passages())
    weak = [f"{row['id']} Q0 {d} {r + 1} {10 - r} weak" for row in rows
            for r, d in enumerate(reversed(row["retrieved_ids"]))]  # fmt: skip
    (tmp_path / "weak.trec").write_text("\n".join(weak) + "\n", encoding="utf-8")
    config = {
        "name": "utility without references", "dataset": {"path": "qa.jsonl", "passages": "passages.jsonl"},
        "retrieval": {"metrics": ["ndcg@3"]},
        "runs": [{"source": "dataset", "name": "pipeline"}, {"source": "file", "path": "weak.trec", "name": "weak"}],
        "compare": {"test": "t"}, "output": {"dir": "out", "plots": False, "formats": ["json"]},
        "progress": False, "utility_qrels": {"k": 3},
    }  # fmt: skip
    (tmp_path / "n.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    outcome = run_pipeline(tmp_path / "n.yaml")
    for result in outcome.report.runs:
        assert result.per_query["q00"]["utility:ndcg@3"] is None
        reasons = {n.reason for n in result.not_applicable if n.query_id == "q00" and n.metric == "utility:ndcg@3"}
        assert reasons == {"no reference answer: utility qrels skip the question"}
        assert all(v is not None for q, s in result.per_query.items() if q != "q00" for v in [s["utility:ndcg@3"]])
    assert any(c.metric == "utility:ndcg@3" for c in outcome.report.comparisons)
