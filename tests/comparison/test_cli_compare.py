"""`ragmetrics compare`: runs against qrels, already-scored results, outputs and errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import scipy.stats as ss

from ragmetrics.cli import main
from ragmetrics.schema import Report

from .conftest import make_result

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq3 0 d4 1\nq4 0 d5 1\n"
RUN_A = "q1 Q0 d1 1 0.9 a\nq2 Q0 d9 1 0.8 a\nq2 Q0 d3 2 0.1 a\nq4 Q0 d7 1 0.5 a\n"
RUN_B = "q1 Q0 d2 1 0.9 b\nq1 Q0 d1 2 0.5 b\nq2 Q0 d3 1 0.9 b\nq3 Q0 d4 1 1.0 b\nq4 Q0 d5 1 0.3 b\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {}
    for name, text in {"qrels.txt": QRELS, "a.run": RUN_A, "b.run": RUN_B}.items():
        (tmp_path / name).write_text(text)
        paths[name] = str(tmp_path / name)
    return paths


def test_runs_against_qrels_json(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "compare",
            files["qrels.txt"],
            files["a.run"],
            files["b.run"],
            "-m",
            "mrr",
            "--test",
            "t",
            "--format",
            "json",
        ]
    )
    assert code == 0
    report = Report.model_validate_json(capsys.readouterr().out)
    (c,) = report.comparisons
    # reciprocal ranks over q1..q4: a = [1, 1/2, 0, 0], b = [1/2, 1, 1, 1]
    assert c.p_value == pytest.approx(ss.ttest_rel([0.5, 1, 1, 1], [1, 0.5, 0, 0]).pvalue, abs=1e-12)
    assert report.metadata.missing_queries == {"a": ["q3"]}
    assert report.settings.test == "t" and report.settings.correction == "holm"


def test_table_csv_and_plots(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    argv = ["compare", files["qrels.txt"], files["a.run"], files["b.run"], "-m", "mrr", "ndcg@10"]
    argv += ["--test", "wilcoxon", "--correction", "bonferroni", "--seed", "3", "--alpha", "0.1"]
    argv += ["--per-query-csv", str(tmp_path / "out" / "pq.csv"), "--plots", str(tmp_path / "plots")]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "Paired comparisons" in out.out and "\x1b[" not in out.out
    assert "corrected p ≤ 0.1; test: wilcoxon; correction: bonferroni" in out.out
    rows = list(csv.DictReader((tmp_path / "out" / "pq.csv").open()))
    assert len(rows) == 2 * 4 * 2
    assert {r["status"] for r in rows if r["run"] == "a" and r["query"] == "q3"} == {"missing"}
    assert len(list((tmp_path / "plots").glob("*.png"))) == 2 + 2


def test_results_mode_with_judge_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    metrics = ["context_recall"]
    a = make_result(
        "a",
        {"q1": {"context_recall": 0.5}, "q2": {"context_recall": None}, "q3": {"context_recall": 0.2}},
        metrics,
    )
    b = make_result(
        "b",
        {"q1": {"context_recall": 0.9}, "q2": {"context_recall": 0.8}, "q3": {"context_recall": 0.6}},
        metrics,
    )
    (tmp_path / "a.json").write_text(a.model_dump_json())
    (tmp_path / "b.json").write_text(json.dumps([b.model_dump(mode="json")]))
    argv = ["compare", "--results", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--test", "sign"]
    assert main([*argv, "--format", "json"]) == 0
    report = Report.model_validate_json(capsys.readouterr().out)
    assert report.comparisons[0].n == 2
    assert report.descriptive["a"]["context_recall"].failures == 1


def test_results_mode_takes_report_runs_and_renames_clashes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = make_result("bm25", {"q1": {"m": 0.5}, "q2": {"m": 0.1}, "q3": {"m": 0.3}}, ["m"])
    b = make_result("bm25", {"q1": {"m": 0.7}, "q2": {"m": 0.4}, "q3": {"m": 0.2}}, ["m"])
    (tmp_path / "old.json").write_text(a.model_dump_json())
    (tmp_path / "new.json").write_text(b.model_dump_json())
    assert (
        main(
            [
                "compare",
                "--results",
                str(tmp_path / "old.json"),
                str(tmp_path / "new.json"),
                "--format",
                "json",
            ]
        )
        == 0
    )
    first = Report.model_validate_json(capsys.readouterr().out)
    assert [r.name for r in first.runs] == [f"{tmp_path / 'old.json'}:bm25", f"{tmp_path / 'new.json'}:bm25"]
    (tmp_path / "report.json").write_text(first.model_dump_json())
    c = make_result("c", {"q1": {"m": 0.1}, "q2": {"m": 0.1}, "q3": {"m": 0.1}}, ["m"])
    (tmp_path / "c.json").write_text(c.model_dump_json())
    assert (
        main(
            [
                "compare",
                "--results",
                str(tmp_path / "report.json"),
                str(tmp_path / "c.json"),
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert len(Report.model_validate_json(capsys.readouterr().out).comparisons) == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["QRELS", "A"], "at least two RUN files"),
        (["QRELS", "A", "B"], "-m/--metrics is required"),
        (["--results", "BAD"], "bad.json, line 1: invalid JSON"),
        (["--results", "NOTRESULT", "NOTRESULT"], "not a ragmetrics result"),
        (["--results", "MISSINGFILE", "MISSINGFILE"], "cannot read"),
        (["QRELS", "A", "B", "-m", "mrr", "--alpha", "2"], "alpha must be in (0, 1)"),
    ],
)
def test_errors_exit_2_with_a_message(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    (tmp_path / "bad.json").write_text("{oops")
    (tmp_path / "other.json").write_text('{"name": 3}')
    mapping = {
        "QRELS": files["qrels.txt"],
        "A": files["a.run"],
        "B": files["b.run"],
        "BAD": str(tmp_path / "bad.json"),
        "NOTRESULT": str(tmp_path / "other.json"),
        "MISSINGFILE": str(tmp_path / "nope.json"),
    }
    assert main(["compare", *(mapping.get(a, a) for a in argv)]) == 2
    assert message in capsys.readouterr().err


def test_unknown_test_is_rejected_by_the_parser(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", files["qrels.txt"], files["a.run"], files["b.run"], "-m", "mrr", "--test", "anova"])
    assert exit_info.value.code == 2
    assert "fisher, t, wilcoxon, sign" in capsys.readouterr().err.replace("'", "")


def test_cli_choices_are_the_library_names() -> None:
    # The command keeps its own tuples so that `ragmetrics --help` never imports numpy; they must not drift.
    from ragmetrics.cli import compare as command
    from ragmetrics.comparison.corrections import CORRECTIONS
    from ragmetrics.options import TESTS
    from ragmetrics.render.tables import FORMATS

    assert command.TESTS == TESTS
    assert command.CORRECTIONS == CORRECTIONS
    assert command.FORMATS == FORMATS


def test_results_selectors_aliases_and_a_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two nightly reports of three runs each: pick runs, rename them, compare against one baseline."""
    from ragmetrics.schema import ComparisonSettings, Report, RunMetadata, RunResult

    def report(shift: float) -> Report:
        runs = []
        for k, name in enumerate(["bm25", "dense", "hybrid"]):
            run = RunResult(
                name=name,
                per_query={f"q{i}": {"m": min(1.0, 0.1 * i + 0.05 * k + shift)} for i in range(8)},
                metadata=RunMetadata(metrics=["m"]),
            )
            run.recompute_aggregate()
            runs.append(run)
        return Report(runs=runs, metrics=["m"], settings=ComparisonSettings(test="t", correction="none"))

    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(report(0.0).model_dump_json(), encoding="utf-8")
    new.write_text(report(0.05).model_dump_json(), encoding="utf-8")
    code = main([
        "compare", "--results", f"{old}:bm25=bm25_old,hybrid=hybrid_old", f"{new}:hybrid",
        "--baseline", "hybrid_old", "--test", "sign", "--format", "csv",
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["baseline"], r["candidate"]) for r in rows] == [
        ("hybrid_old", "bm25_old"),
        ("hybrid_old", "hybrid"),
    ]
    code = main(["compare", "--results", f"{old}:nope", str(new), "-m", "m"])
    assert code == 2
    assert "no run 'nope'; runs: bm25, dense, hybrid" in capsys.readouterr().err
    code = main(["compare", "--results", str(old), str(new), "--baseline", "missing"])
    assert code == 2
