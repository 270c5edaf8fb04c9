"""The result schema across versions, and one meaning of "significant" for the report and the gate."""

from __future__ import annotations

import json
from pathlib import Path

from ragmetrics.comparison.pairs import compare_results
from ragmetrics.nightly.gate import check_regressions
from ragmetrics.render.html import render_html
from ragmetrics.render.tables import format_report
from ragmetrics.schema import SCHEMA_VERSION, Report, RunMetadata, RunResult

V0_1_0 = Path(__file__).parent / "data" / "report_v0_1_0.json"


def test_a_report_written_by_0_1_0_loads_into_typed_fields() -> None:
    raw = json.loads(V0_1_0.read_text(encoding="utf-8"))
    legacy = raw["metadata"]["extra"]
    assert raw["metadata"]["schema_version"] == "1"

    report = Report.model_validate_json(V0_1_0.read_text(encoding="utf-8"))

    assert report.settings.align == legacy["align"]
    assert report.settings.correction_scope == legacy["correction_scope"]
    nightly = report.metadata.nightly
    assert nightly is not None
    assert nightly.name == legacy["name"] == "tiny-v010"
    # qrels provenance came later (issue 47): absent from 0.1.0's report, None when read.
    assert nightly.dataset.model_dump(mode="json", exclude={"qrels"}) == legacy["dataset"]
    assert nightly.dataset.qrels is None
    assert nightly.judge is not None
    assert (
        nightly.judge.model_dump(
            mode="json",
            exclude={  # fields added since 0.1.0 (batch tokens: judge.batch)
                "cache": {"write_failures", "failure_hits", "failure_retries"},
                "usage": {"batch_prompt_tokens", "batch_completion_tokens"},
            },
        )
        == legacy["judge"]
    )
    assert nightly.failures == legacy["failures"]
    assert nightly.timings_s == legacy["timings_s"]
    # turn and tool_calls came later (conversations, agents): absent from 0.1.0's samples, None when read.
    assert {k: v.model_dump(exclude={"turn", "tool_calls"}) for k, v in nightly.samples.items()} == legacy["samples"]
    assert all(v.turn is None and v.tool_calls is None for v in nightly.samples.values())
    assert nightly.regression is not None
    # Fields added since (None when absent) are left out of the comparison with what 0.1.0 wrote.
    added = {"incomplete", "changes", "not_comparable", "skipped_pairs", "baseline_means", "untrusted",
             "from_cache", "require_fresh"}  # fmt: skip
    regression = nightly.regression.model_dump(mode="json", exclude_none=True, exclude=added)
    assert nightly.regression.incomplete == [] and nightly.incomplete == []
    assert nightly.regression.changes == [] and nightly.regression.not_comparable == []
    assert nightly.regression.skipped_pairs == {} and nightly.regression.baseline_means == {} and nightly.regression.untrusted == []
    assert nightly.regression.from_cache == [] and nightly.regression.require_fresh is False
    assert regression == {k: v for k, v in legacy["regression"].items() if v is not None}
    assert report.metadata.extra == {}
    # Scores are untouched by the migration.
    assert [r.model_dump(mode="json")["per_query"] for r in report.runs] == [
        r["per_query"] for r in raw["runs"]
    ]


def test_a_migrated_report_renders_and_round_trips() -> None:
    report = Report.model_validate_json(V0_1_0.read_text(encoding="utf-8"))
    page = render_html(report, gate=report.metadata.nightly.regression if report.metadata.nightly else None)
    assert "tiny-v010" in page and "How do I make a class usable" in page
    assert "bm25" in format_report(report, "markdown")
    again = Report.model_validate_json(report.model_dump_json())
    assert again == report


def test_schema_1_comparison_keys_migrate_and_unknown_extra_keys_stay() -> None:
    data = {
        "runs": [],
        "metrics": [],
        "settings": {"test": "t", "correction": "none"},
        "metadata": {
            "schema_version": "1",
            "extra": {"align": "intersection", "correction_scope": "all", "mine": 3},
        },
    }
    report = Report.model_validate(data)
    assert report.settings.align == "intersection"
    assert report.settings.correction_scope == "all"
    assert report.metadata.extra == {"mine": 3}
    assert report.metadata.nightly is None


def test_new_reports_carry_the_current_version() -> None:
    assert SCHEMA_VERSION == "2"
    assert RunMetadata().schema_version == "2"


def _result(name: str, values: list[float]) -> RunResult:
    result = RunResult(
        name=name,
        per_query={f"q{i}": {"m": v} for i, v in enumerate(values)},
        metadata=RunMetadata(metrics=["m"]),
    )
    result.recompute_aggregate()
    return result


def test_report_and_gate_agree_on_a_p_value_equal_to_alpha() -> None:
    # The sign test on five drops in five queries gives p = 2 * 0.5**5 = 0.0625 exactly.
    alpha = 0.0625
    old = [0.9, 0.8, 0.7, 0.9, 0.8]
    new = [0.5, 0.4, 0.3, 0.5, 0.4]
    report = compare_results(
        [_result("run", old), _result("run_new", new)], ["m"], test="sign", correction="none", alpha=alpha
    )
    (pair,) = report.comparisons
    assert pair.p_corrected == alpha
    assert pair.significant

    baseline = compare_results(
        [_result("run", old), _result("other", old)], ["m"], test="sign", correction="none", alpha=alpha
    )
    current = compare_results(
        [_result("run", new), _result("other", old)], ["m"], test="sign", correction="none", alpha=alpha
    )
    gate = check_regressions(
        current,
        baseline,
        baseline_source="baseline.json",
        thresholds=lambda metric: 0.0,
        test="sign",
        correction="none",
        alpha=alpha,
    )
    (check,) = [c for c in gate.checks if c.run == "run"]
    assert check.p_corrected == alpha
    assert check.significant == pair.significant
    assert check.regressed
