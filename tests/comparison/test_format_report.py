"""format_report: the same comparison as a terminal table, Markdown, LaTeX, JSON and CSV."""

from __future__ import annotations

import csv
import io

import pytest

from ragmetrics.comparison.pairs import compare_results
from ragmetrics.render.tables import format_report, per_query_csv, run_labels
from ragmetrics.schema import Report

from .conftest import make_result, random_results


@pytest.fixture(scope="module")
def report() -> Report:
    runs = random_results(3, 50, ["ndcg@10", "map"], [0.0, 0.3, 0.3], seed=1)
    return compare_results(runs, test="t", permutations=100, bootstrap_samples=500)


def test_terminal_table_marks_significance_and_has_a_legend(report: Report) -> None:
    text = format_report(report, "table")
    assert "\x1b[" not in text
    run1_row = next(line for line in text.splitlines() if line.startswith("│ b ") and "run1" in line)
    assert "[a]" in run1_row  # run1 is significantly better than run0 on both metrics
    run0_row = next(line for line in text.splitlines() if line.startswith("│ a ") and "run0" in line)
    assert "[" not in run0_row
    assert "a = run0, b = run1, c = run2" in text
    assert "test: t; correction: holm within each metric" in text
    significant = [c for c in report.comparisons if c.significant]
    assert sum(1 for line in text.splitlines() if "│   * │" in line) == len(significant)


def test_colour_only_when_asked(report: Report) -> None:
    coloured = format_report(report, "table", color=True)
    assert "\x1b[" in coloured
    assert "\x1b[" not in format_report(report, "table", color=False)


def test_markdown_tables(report: Report) -> None:
    md = format_report(report, "markdown")
    assert "| metric | baseline | candidate | n | Δ mean | 95% CI | p | p (holm) | sig | d | W/T/L |" in md
    assert md.count("| ndcg@10 | run") == 3  # three pairs
    assert md.count(" | ndcg@10 | 50 | 0 | ") == 3  # one descriptive row per run
    c = report.comparisons[0]
    assert f"| {c.mean_diff:+.4f} | [{c.ci_low:+.4f}, {c.ci_high:+.4f}] |" in md


def test_latex_is_booktabs_and_escaped() -> None:
    runs = [
        make_result("bm_25", {"q1": {"p@5": 0.2}, "q2": {"p@5": 0.4}, "q3": {"p@5": 0.1}}, ["p@5"]),
        make_result("x&y", {"q1": {"p@5": 0.6}, "q2": {"p@5": 0.8}, "q3": {"p@5": 0.7}}, ["p@5"]),
    ]
    tex = format_report(compare_results(runs, test="t", bootstrap_samples=100), "latex")
    assert tex.count("\\toprule") == 3 and tex.count("\\bottomrule") == 3
    assert "bm\\_25" in tex and "x\\&y" in tex and "$\\Delta$ mean" in tex and "95\\% CI" in tex
    assert "_" not in tex.replace("\\_", "")
    # OT1 (LaTeX's default encoding) prints a bare < as an inverted exclamation mark; ≤ is typeset as math.
    assert "corrected p $\\le$ 0.05" in tex and "<" not in tex and ">" not in tex


def test_json_is_the_schema(report: Report) -> None:
    assert Report.model_validate_json(format_report(report, "json")) == report


def test_csv_has_every_query_and_status() -> None:
    a = make_result("a", {"q1": {"m": 0.5}, "q2": {"m": None}}, ["m"])
    b = make_result("b", {"q1": {"m": 0.25}}, ["m"])
    report = compare_results([a, b], test="sign", bootstrap_samples=50)
    rows = list(csv.reader(io.StringIO(per_query_csv(report))))
    assert rows == [
        ["run", "query", "metric", "score", "status"],
        ["a", "q1", "m", "0.5", "ok"],
        ["a", "q2", "m", "", "failed"],
        ["b", "q1", "m", "0.25", "ok"],
        ["b", "q2", "m", "0.0", "missing"],
    ]


def test_csv_format_is_the_comparison_table() -> None:
    a = make_result("a", {"q1": {"m": 0.5}, "q2": {"m": 0.25}}, ["m"])
    b = make_result("b", {"q1": {"m": 0.75}, "q2": {"m": 0.5}}, ["m"])
    report = compare_results([a, b], test="sign", bootstrap_samples=50)
    rows = list(csv.DictReader(io.StringIO(format_report(report, "csv"))))
    assert len(rows) == 1
    (row,) = rows
    assert (row["metric"], row["baseline"], row["candidate"], row["n"]) == ("m", "a", "b", "2")
    assert float(row["mean_diff"]) == 0.25 and row["effect_size"] == ""  # a constant shift: d unbounded
    assert row["significant"] in ("True", "False")


def test_missing_queries_are_in_the_legend() -> None:
    a = make_result("a", {"q1": {"m": 0.5}, "q2": {"m": 0.1}}, ["m"])
    b = make_result("b", {"q1": {"m": 0.25}}, ["m"])
    text = format_report(compare_results([a, b], test="sign", bootstrap_samples=50), "markdown")
    assert "b lacks 1 of 2 queries, scored 0: q2" in text


def test_run_labels_beyond_26() -> None:
    labels = run_labels([f"r{i}" for i in range(30)])
    assert [labels["r0"], labels["r25"], labels["r26"], labels["r29"]] == ["a", "z", "aa", "ad"]


def test_single_run_report_has_no_significance_legend() -> None:
    from ragmetrics.schema import ComparisonSettings, Report, RunMetadata, RunResult

    run = RunResult(name="only", per_query={"q1": {"mrr": 1.0}}, metadata=RunMetadata(metrics=["mrr"]))
    run.recompute_aggregate()
    from ragmetrics.comparison.descriptive import describe

    report = Report(runs=[run], metrics=["mrr"], settings=ComparisonSettings(test="t", correction="holm"))
    stats = describe(run.scores("mrr"))
    assert stats is not None
    report.descriptive = {"only": {"mrr": stats}}
    text = format_report(report, "table")
    assert "only" in text and "1.0000" in text
    assert "significant" not in text and "None samples" not in text
