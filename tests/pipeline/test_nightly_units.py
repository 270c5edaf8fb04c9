"""Units of the nightly pipeline: the regression rule, artifact folders, redaction, judge planning."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragmetrics.errors import InputError
from ragmetrics.nightly.artifacts import dated_folder, point_latest, redact, write_artifacts
from ragmetrics.nightly.config import parse_config
from ragmetrics.nightly.dataset import Passage, validate_rows
from ragmetrics.nightly.gate import check_regressions
from ragmetrics.nightly.pipeline import config_snapshot, judge_plan
from ragmetrics.schema import ComparisonSettings, Report, RunMetadata, RunResult


def _result(name: str, values: dict[str, list[float]]) -> RunResult:
    metrics = list(values)
    n = len(next(iter(values.values())))
    per_query: dict[str, dict[str, float | None]] = {
        f"q{i:02d}": {m: values[m][i] for m in metrics} for i in range(n)
    }
    result = RunResult(name=name, per_query=per_query, metadata=RunMetadata(metrics=metrics, num_queries=n))
    result.recompute_aggregate()
    return result


def _report(*results: RunResult) -> Report:
    return Report(
        runs=list(results),
        metrics=list(results[0].metrics),
        settings=ComparisonSettings(test="t", correction="holm"),
    )


def _gate(current: Report, baseline: Report, threshold: float = 0.0):  # type: ignore[no-untyped-def]
    return check_regressions(
        current, baseline, baseline_source="b.json", thresholds=lambda m: threshold, test="t", alpha=0.05
    )


HIGH = [0.9, 0.8, 0.95, 0.85, 0.9, 0.7, 0.8, 0.9, 0.75, 0.85, 0.9, 0.8]
LOW = [
    v - d
    for v, d in zip(HIGH, [0.3, 0.25, 0.35, 0.3, 0.2, 0.3, 0.25, 0.3, 0.2, 0.35, 0.3, 0.28], strict=True)
]


def test_significant_drop_beyond_threshold_regresses() -> None:
    gate = _gate(_report(_result("a", {"m": LOW})), _report(_result("a", {"m": HIGH})))
    [check] = gate.checks
    assert check.regressed and gate.failed
    assert check.drop == pytest.approx(sum(HIGH) / 12 - sum(LOW) / 12)
    assert check.worst_queries[0].query_id == "q02"  # the largest drop (0.35, before q09 on the id tie-break)
    assert "a / m: mean" in gate.describe()


def test_improvement_equal_and_small_drops_pass() -> None:
    base = _report(_result("a", {"m": HIGH}))
    assert not _gate(_report(_result("a", {"m": HIGH})), base).failed  # equal
    assert not _gate(base, _report(_result("a", {"m": LOW}))).failed  # better than the baseline
    assert not _gate(_report(_result("a", {"m": LOW})), base, threshold=0.5).failed  # within threshold


def test_noisy_drop_is_not_significant() -> None:
    noisy = [v + (0.3 if i % 2 else -0.32) for i, v in enumerate(HIGH[:4])]
    gate = _gate(_report(_result("a", {"m": noisy})), _report(_result("a", {"m": HIGH[:4]})))
    [check] = gate.checks
    assert check.drop > 0 and not check.significant and not check.regressed


def test_unmatched_runs_are_noted_and_nothing_shared_is_an_error() -> None:
    gate = _gate(
        _report(_result("a", {"m": HIGH}), _result("new", {"m": HIGH})),
        _report(_result("a", {"m": HIGH}), _result("old", {"m": HIGH})),
    )
    assert any("'new' is not in the baseline" in n for n in gate.notes)
    assert any("baseline run 'old' is absent" in n for n in gate.notes)
    with pytest.raises(InputError, match="shares no scored run"):
        _gate(_report(_result("x", {"m": HIGH})), _report(_result("y", {"m": HIGH})))


def test_a_check_the_test_cannot_assess_is_noted_not_an_error() -> None:
    # One shared query: the t-test has no p-value, so the gate notes the pair instead of aborting the run (exit 2).
    one = _gate(_report(_result("a", {"m": [0.1]})), _report(_result("a", {"m": [0.9]})))
    assert not one.failed and one.checks == []
    assert any(n.startswith("a / m: not checked: t-test needs at least 2") for n in one.notes)
    # Every query down by the same amount: no variance, yet a certain drop, not a p of NaN turned into 1.
    same = _gate(_report(_result("a", {"m": [v - 0.2 for v in HIGH]})), _report(_result("a", {"m": HIGH})))
    assert same.failed and same.checks[0].p_value < 1e-9
    with pytest.raises(InputError, match="unknown test 'z'"):
        check_regressions(
            _report(_result("a", {"m": HIGH})),
            _report(_result("a", {"m": HIGH})),
            baseline_source="b.json",
            thresholds=lambda m: 0.0,
            test="z",
        )


def test_dated_folder_is_unique_and_latest_moves(tmp_path: Path) -> None:
    now = datetime(2026, 11, 22, 7, 12, 33, tzinfo=UTC)
    first = dated_folder(tmp_path, now)
    assert first.name == "2026-11-22T071233Z"
    first.mkdir()
    second = dated_folder(tmp_path, now)
    assert second.name == "2026-11-22T071233Z-2"
    second.mkdir()
    point_latest(tmp_path, first)
    point_latest(tmp_path, second)
    assert (tmp_path / "latest").resolve() == second.resolve()


def test_failed_write_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report(_result("a", {"m": HIGH}))
    with pytest.raises(InputError, match="formats must include 'json'"):
        write_artifacts(report, tmp_path, formats=["json", "bogus"], plots=False)

    def broken(_: Report) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr("ragmetrics.nightly.artifacts.per_query_frame", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        write_artifacts(report, tmp_path, formats=["json", "csv"], plots=False)
    assert [p.name for p in tmp_path.iterdir()] == []  # no dated folder, no partial one, no latest


def test_write_artifacts_redacts_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-unit-test-SECRET-0042"
    monkeypatch.setenv("MY_JUDGE_KEY", key)
    report = _report(_result("a", {"m": HIGH}))
    report.metadata.config = {"judge": {"api_key_env": "MY_JUDGE_KEY"}}
    report.metadata.notes.append(f"a careless note quoting {key}")
    folder, written = write_artifacts(report, tmp_path, formats=["json", "md", "csv"], plots=False)
    for path in written.values():
        text = path.read_text()
        assert key not in text
    assert "[redacted]" in (folder / "report.json").read_text()
    assert redact("x sk-1 y", ["sk-1"]) == "x [redacted] y"


def test_config_snapshot_drops_credentials_from_base_url(tmp_path: Path) -> None:
    config = parse_config(
        {
            "dataset": {"path": "qa.jsonl"},
            "judge": {
                "metrics": ["context_recall"],
                "base_url": "https://u:p@api.example.com:8443/v1?token=abc",
            },
        },
        base_dir=tmp_path,
    )
    snapshot = config_snapshot(config)
    assert snapshot["judge"]["base_url"] == "https://api.example.com:8443/v1"
    assert "token=abc" not in str(snapshot) and "u:p" not in str(snapshot)
    assert config.judge is not None and config.judge.base_url is not None and "u:p" in config.judge.base_url


def test_judge_plan_builds_contexts_from_passages(tmp_path: Path) -> None:
    config = parse_config(
        {
            "dataset": {"path": "qa.jsonl"},
            "judge": {
                "backend": "local",
                "metrics": ["context_recall", "answer_relevancy"],
                "contexts_top_k": 1,
            },
            "runs": [{"source": "dataset"}, {"source": "retriever", "retriever": "bm25"}],
        },
        base_dir=tmp_path,
    )
    dataset = validate_rows(
        [
            {
                "id": "a",
                "question": "Why?",
                "answer": "Because.",
                "reference": "Since.",
                "retrieved_ids": ["p2", "p1"],
            }
        ],
        source="qa",
    )
    dataset.passages = {"p1": Passage("p1", "one"), "p2": Passage("p2", "two")}
    runs = {"pipeline": dataset.run("pipeline"), "bm25": dataset.run("bm25")}
    notes: list[str] = []
    plan = judge_plan(config, dataset, runs, notes)
    own_samples, own_metrics = plan["pipeline"]
    assert own_samples[0].contexts == ["two"] and own_samples[0].answer == "Because."
    assert own_metrics == ["context_recall", "answer_relevancy"]
    other_samples, other_metrics = plan["bm25"]
    assert other_samples[0].answer is None and other_metrics == ["context_recall"]
    assert notes == ["answer_relevancy not computed for run 'bm25': no sample has all of question, answer"]
    dataset.passages = {"p1": Passage("p1", "one")}
    with pytest.raises(InputError, match="retrieved 'p2' for query 'a', which is not a passage"):
        judge_plan(config, dataset, runs, [])
