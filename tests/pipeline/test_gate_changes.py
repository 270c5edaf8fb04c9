"""The gate sees what changed: a judge (backend, model, embedding model, a metric's prompt) or the questions and
judgments differing from the baseline's is reported first and, by default, makes the touched pairs "not
comparable" (exit 4), because a judge change is not a quality change; metrics the change cannot touch
(retrieval, deterministic) are still checked; near misses are listed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.nightly.gate import check_regressions
from ragmetrics.schema import ComparisonSettings, JudgeInfo, Report, RunMetadata, RunResult

from .conftest import ConfigWriter
from .helpers import qa_rows, report_of, run_cli, write_jsonl

KEY_ENV = "RAGMETRICS_GATE_TEST_KEY"


def _report(embedding: str, recall: list[float], ndcg: list[float], truth: str = "sha256:aa") -> Report:
    judge = JudgeInfo(backend="local", model="ragmetrics-local", embedding_model=embedding,
                      prompt_versions={"_shared": "s1"})  # fmt: skip
    per_query = {f"q{i}": {"context_recall": r, "ndcg@10": n, "exact_match": 1.0}
                 for i, (r, n) in enumerate(zip(recall, ndcg, strict=True))}  # fmt: skip
    run = RunResult(name="rag", per_query=per_query,
                    metadata=RunMetadata(metrics=["context_recall", "ndcg@10", "exact_match"], judge=judge))  # fmt: skip
    report = Report(runs=[run], metrics=run.metadata.metrics,
                    settings=ComparisonSettings(test="t", correction="holm"))  # fmt: skip
    report.metadata.truth_fingerprint = truth
    return report


def _gate(current: Report, baseline: Report, **kw: Any) -> Any:
    return check_regressions(current, baseline, baseline_source="base.json", thresholds=lambda m: 0.0, test="t",
                             **kw)  # fmt: skip


def test_a_changed_embedding_model_is_not_a_quality_change() -> None:
    """The issue's case: `local_model: e5` against a MiniLM baseline moved context_recall 0.85 -> 0.60."""
    baseline = _report("all-MiniLM-L6-v2", [0.9, 0.8, 0.85, 0.9, 0.8], [1.0] * 5)
    current = _report("multilingual-e5-small", [0.6, 0.55, 0.65, 0.6, 0.6], [1.0] * 5)
    gate = _gate(current, baseline)
    assert gate.status == "not_comparable" and not gate.failed
    assert gate.changes == ["judge embedding model all-MiniLM-L6-v2 -> multilingual-e5-small (run rag)"]
    assert gate.not_comparable == [
        "rag / context_recall: its judge changed: judge embedding model all-MiniLM-L6-v2 -> multilingual-e5-small"
    ]
    assert {c.metric for c in gate.checks} == {"ndcg@10", "exact_match"}  # no judge behind them: checked
    text = gate.describe()
    assert text.startswith("changed since the baseline (base.json):") and "NOT COMPARABLE" in text
    # overridden: checked, and the drop is a regression, with a note saying what changed
    gate = _gate(current, baseline, on_change="compare")
    assert gate.status == "regression" and [c.metric for c in gate.regressions] == ["context_recall"]
    assert any("checked although its judge changed" in n for n in gate.notes)


def test_only_the_metrics_a_changed_prompt_serves_are_not_comparable() -> None:
    baseline = _report("m", [0.5] * 4, [1.0] * 4)
    current = _report("m", [0.5] * 4, [1.0] * 4)
    for report, version in ((baseline, "v1"), (current, "v2")):
        assert report.runs[0].metadata.judge is not None
        report.runs[0].metadata.judge.prompt_versions["context_recall"] = version
        report.runs[0].metadata.judge.prompt_versions["faithfulness"] = "same"
    gate = _gate(current, baseline)
    assert gate.not_comparable == ["rag / context_recall: its prompt changed: context_recall"]
    assert gate.changes == ["prompt context_recall changed (version v1 -> v2) (run rag)"]
    # other data: every metric is touched
    gate = _gate(_report("m", [0.5] * 4, [1.0] * 4, truth="sha256:bb"), _report("m", [0.5] * 4, [1.0] * 4))
    assert len(gate.not_comparable) == 3 and gate.changes[0].startswith("dataset: the questions")


def test_near_misses_are_listed() -> None:
    baseline = _report("m", [0.8] * 6, [1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    current = _report("m", [0.8] * 6, [0.7, 0.72, 0.69, 0.71, 0.7, 0.7])  # a clear, significant drop
    gate = check_regressions(current, baseline, baseline_source="b", thresholds=lambda m: 0.5, test="t")
    assert not gate.failed and [c.metric for c in gate.near_misses] == ["ndcg@10"]
    assert (
        "near miss: rag / ndcg@10" in gate.describe()
        and "significant but within its threshold" in gate.describe()
    )


def test_a_changed_judge_model_exits_4_through_the_cli(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv(KEY_ENV, "sk-test")
    write_jsonl(qa_dir / "qa.jsonl", qa_rows())

    def config(model: str, **baseline: Any) -> Path:
        judge = {"backend": "openai", "base_url": loopback.url, "api_key_env": KEY_ENV, "model": model,
                 "cache_path": "cache.sqlite", "metrics": ["context_precision", "exact_match"]}  # fmt: skip
        return write_config(f"{model}.yaml", judge=judge, retrieval={"metrics": ["ndcg@10"]},
                            baseline={"max_drop": 0.05, **baseline})  # fmt: skip

    code, _, err = run_cli([str(config("judge-a")), "--output", str(qa_dir / "a")], capsys)
    assert code == 0, err
    baseline = next((qa_dir / "a").glob("*/report.json"))
    code, out, err = run_cli([str(config("judge-b")), "--baseline", str(baseline), "--output", str(qa_dir / "b")],
                             capsys)  # fmt: skip
    assert code == 4, err
    assert "NOT COMPARABLE with the baseline (exit 4)" in err
    assert "judge model judge-a -> judge-b (run pipeline)" in out
    assert "not comparable: pipeline / context_precision" in out
    gate = report_of(qa_dir / "b").metadata.nightly
    assert gate is not None and gate.regression is not None
    assert {c.metric for c in gate.regression.checks} == {"ndcg@10", "exact_match"}
    page = next((qa_dir / "b").glob("*/report.html")).read_text(encoding="utf-8")
    assert "Regression gate: not comparable" in page and "Changed since the baseline" in page
    # the team decides the change is fine: compare anyway
    path = config("judge-b", on_change="compare")
    code, out, err = run_cli([str(path), "--baseline", str(baseline), "--output", str(qa_dir / "c")], capsys)
    assert code == 0, err
    assert "checked although its judge changed" in out
    assert yaml.safe_load(path.read_text())["baseline"]["on_change"] == "compare"
