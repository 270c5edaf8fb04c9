"""`ragmetrics run CONFIG` end to end: artifacts, the regression gate, exit codes, secrets."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ragmetrics.schema import Report

from .conftest import ConfigWriter
from .helpers import TOPICS, qa_rows, run_cli, write_jsonl
from .helpers import latest as _latest


def test_run_writes_every_artifact(qa_dir: Path, write_config: ConfigWriter, capsys: Any) -> None:
    config = write_config(
        runs=[
            {"source": "dataset", "name": "pipeline"},
            {"source": "file", "path": "weaker.trec", "name": "weaker"},
        ],
        judge={"backend": "local", "metrics": ["context_precision", "context_recall", "answer_relevancy"]},
        output={"dir": "out", "plots": True},
    )
    code, out, err = run_cli([str(config)], capsys)
    assert code == 0, err
    folder = _latest(qa_dir / "out")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d{6}Z", folder.name)
    assert f"artifacts: {folder}" in out
    assert "ndcg@10" in out and "pipeline" in out and "weaker" in out  # the summary table
    # answer_relevancy exists for one run only: its mean is printed too, not just named in a note.
    assert "Metrics not every run has" in out and "| weaker | - |" in out
    assert re.search(r"\| pipeline \| \d\.\d{4} \|", out)
    names = {p.name for p in folder.iterdir()}
    assert names == {
        "report.json",
        "per_query.parquet",
        "per_query.csv",
        "report.md",
        "report.html",
        "judged_samples.jsonl",
        "plots",
    }

    report = Report.model_validate_json((folder / "report.json").read_text())
    assert [r.name for r in report.runs] == ["pipeline", "weaker"]
    meta = report.metadata
    assert meta.config is not None and meta.config["name"] == "pipeline test"
    assert meta.dataset_fingerprint is not None and meta.dataset_fingerprint.startswith("sha256:")
    assert {"python", "ragmetrics", "numpy", "datasets"} <= set(meta.versions)
    assert meta.nightly is not None and meta.nightly.judge is not None
    assert meta.nightly.judge.backend == "local"
    assert meta.nightly.dataset.rows_used == len(TOPICS)
    pipeline = report.run("pipeline")
    assert pipeline.aggregate["ndcg@10"] == pytest.approx(1.0)
    assert set(pipeline.metrics) == {
        "ndcg@10",
        "map",
        "mrr",
        "context_precision",
        "context_recall",
        "answer_relevancy",
    }
    # The weaker run has no answers, so answer_relevancy is named as not computed, not silently absent.
    assert "answer_relevancy" not in report.run("weaker").metrics
    assert any("answer_relevancy not computed for run 'weaker'" in n for n in meta.notes)
    assert {(c.metric, c.baseline, c.candidate) for c in report.comparisons} >= {
        ("ndcg@10", "pipeline", "weaker"),
        ("context_precision", "pipeline", "weaker"),
    }

    frame = pd.read_parquet(folder / "per_query.parquet")
    assert len(frame) == 2 * len(TOPICS)
    assert list(frame.columns[:3]) == ["run", "query_id", "ndcg@10"]
    csv = pd.read_csv(folder / "per_query.csv")
    assert csv.shape == frame.shape
    row = frame[(frame.run == "weaker") & (frame.query_id == "q00")].iloc[0]
    assert row["ndcg@10"] == pytest.approx(report.run("weaker").per_query["q00"]["ndcg@10"])

    md = (folder / "report.md").read_text()
    assert "## Metrics not every run has" in md and "| weaker | - |" in md
    assert md.startswith("# pipeline test") and "| ndcg@10 |" in md.replace(" ndcg@10 ", "| ndcg@10 |")

    page = (folder / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    # plots are files beside the page, each loaded when shown, not data inside it
    assert "data:image/png;base64," not in page and 'src="plots/001.png" loading="lazy"' in page
    shown = re.findall(r'src="(plots/\d+\.png)"', page)
    assert shown and all((folder / src).read_bytes().startswith(b"\x89PNG") for src in shown)
    assert page.count("<details class='query'") == len(TOPICS)
    assert "&#9660;" in page  # the weaker run is significantly worse somewhere: a marker is shown
    assert "local judge" in page  # the judge's reasons are in the drill-down
    # Self-contained: nothing is fetched from elsewhere.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "@import" not in page and "url(" not in page


def test_gate_fails_on_a_clearly_better_baseline_and_passes_on_an_equal_one(
    qa_dir: Path, write_config: ConfigWriter, capsys: Any
) -> None:
    config = write_config(baseline={"max_drop": 0.02})
    code, _, err = run_cli([str(config), "--output", str(qa_dir / "good")], capsys)
    assert code == 0, err
    baseline = _latest(qa_dir / "good") / "report.json"

    code, out, err = run_cli(
        [str(config), "--baseline", str(baseline), "--output", str(qa_dir / "same")], capsys
    )
    assert code == 0, err
    assert "regression gate: ok" in out and "fingerprints differ" not in out

    write_jsonl(qa_dir / "qa.jsonl", qa_rows(degrade=True))
    code, out, err = run_cli(
        [str(config), "--baseline", str(baseline), "--output", str(qa_dir / "bad")], capsys
    )
    assert code == 1, err
    assert "regression gate: FAILED" in out
    assert re.search(r"pipeline / ndcg@10: mean 1\.0000 -> 0\.\d+", out)
    assert "largest drops: q01 (" in out  # the queries that drove it
    assert "dataset fingerprints differ" in out

    gate = json.loads((_latest(qa_dir / "bad") / "report.json").read_text())["metadata"]["nightly"][
        "regression"
    ]
    regressed = {c["metric"] for c in gate["checks"] if c["regressed"]}
    assert regressed == {"ndcg@10", "map", "mrr"}
    page = (_latest(qa_dir / "bad") / "report.html").read_text()
    assert "Regression gate: FAILED" in page


def test_gate_respects_thresholds(qa_dir: Path, write_config: ConfigWriter, capsys: Any) -> None:
    config = write_config()
    assert run_cli([str(config), "--output", str(qa_dir / "good")], capsys)[0] == 0
    baseline = _latest(qa_dir / "good") / "report.json"
    write_jsonl(qa_dir / "qa.jsonl", qa_rows(degrade=True))
    lenient = write_config("lenient.yaml", baseline={"max_drop": 0.9})
    code, out, _ = run_cli([str(lenient), "--baseline", str(baseline)], capsys)
    assert code == 0 and "regression gate: ok" in out
    only_mrr = write_config("mrr.yaml", baseline={"max_drop": 0.9, "max_drop_per_metric": {"mrr": 0.1}})
    code, out, _ = run_cli([str(only_mrr), "--baseline", str(baseline)], capsys)
    assert code == 1
    assert "pipeline / mrr: mean" in out and "pipeline / ndcg@10: mean" not in out
    assert "near miss: pipeline / ndcg@10:" in out and "significant but within its threshold" in out


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("ragmetrics: error: ")
    return lines[0]


def test_unknown_config_key_exits_2(write_config: ConfigWriter, capsys: Any) -> None:
    config = write_config(judge={"metrics": ["context_recall"], "max_concurency": 4})
    code, out, err = run_cli([str(config)], capsys)
    assert code == 2 and out == ""
    assert _one_error(err).endswith(
        "config.yaml: judge.max_concurency: unknown key; did you mean 'max_concurrency'?"
    )


def test_missing_column_exits_2(write_config: ConfigWriter, capsys: Any) -> None:
    config = write_config(dataset={"path": "qa.jsonl", "mapping": {"query": "question"}})
    code, _, err = run_cli([str(config)], capsys)
    assert code == 2
    assert "column 'query' (mapped to 'question') is not in the dataset" in _one_error(err)


def test_wrong_type_in_a_row_exits_2(qa_dir: Path, write_config: ConfigWriter, capsys: Any) -> None:
    rows = qa_rows()
    rows[2]["relevant_grades"] = ["high", 0]
    write_jsonl(qa_dir / "qa.jsonl", rows)
    code, _, err = run_cli([str(write_config())], capsys)
    assert code == 2
    assert "qa.jsonl, row 3, field 'relevant_grades': [0] expected an integer grade" in _one_error(err)


def test_skipped_rows_are_listed(qa_dir: Path, write_config: ConfigWriter, capsys: Any) -> None:
    rows = qa_rows()
    rows[2]["question"] = ""
    write_jsonl(qa_dir / "qa.jsonl", rows)
    config = write_config(dataset={"path": "qa.jsonl", "on_bad_row": "skip"})
    code, _, err = run_cli([str(config)], capsys)
    assert code == 0
    assert "skipped 1 bad rows" in err
    report = json.loads((_latest(qa_dir / "out") / "report.json").read_text())
    assert report["metadata"]["nightly"]["dataset"]["rows_skipped"] == [
        {"row": 3, "field": "question", "column": "question", "message": "is blank"}
    ]
    assert any("row 3, field 'question'" in n for n in report["metadata"]["notes"])


@pytest.mark.parametrize("problem", ["missing", "folder", "garbage"])
def test_unreadable_dataset_exits_2(
    qa_dir: Path, write_config: ConfigWriter, capsys: Any, problem: str
) -> None:
    if problem == "missing":
        path = "nope.parquet"
    elif problem == "folder":
        (qa_dir / "adir.jsonl").mkdir()
        path = "adir.jsonl"
    else:
        path = "broken.parquet"
        (qa_dir / path).write_bytes(b"\x00\x01 not parquet at all")
    code, _, err = run_cli([str(write_config(dataset={"path": path}))], capsys)
    assert code == 2
    line = _one_error(err)
    assert path in line


def test_unreadable_config_and_baseline_exit_2(qa_dir: Path, write_config: ConfigWriter, capsys: Any) -> None:
    code, _, err = run_cli([str(qa_dir / "missing.yaml")], capsys)
    assert code == 2 and "config file not found" in _one_error(err)
    (qa_dir / "bad.json").write_text('{"runs": 3}')
    code, _, err = run_cli([str(write_config()), "--baseline", str(qa_dir / "bad.json")], capsys)
    assert code == 2 and "not a ragmetrics report.json" in _one_error(err)
    # The baseline is read before any scoring: with a broken dataset too, the baseline is what is reported.
    (qa_dir / "qa.jsonl").write_text("not json\n")
    code, _, err = run_cli([str(write_config()), "--baseline", str(qa_dir / "none.json")], capsys)
    assert code == 2 and "none.json: baseline report not found" in _one_error(err)


def test_unwritable_output_exits_2_not_1(qa_dir: Path, write_config: ConfigWriter, capsys: Any) -> None:
    # Exit 1 means "regression" to a CI job: a crash while writing artifacts must not look like one.
    (qa_dir / "blocker").write_text("a file where the output folder should go")
    code, _, err = run_cli([str(write_config()), "--output", str(qa_dir / "blocker" / "out")], capsys)
    assert code == 2
    assert str(qa_dir / "blocker") in _one_error(err)


def test_no_api_key_in_any_artifact(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    key = "sk-ragmetrics-NIGHTLY-FAKE-KEY-5c1e0b9d"
    monkeypatch.setenv("RAGMETRICS_NIGHTLY_KEY", key)
    config = write_config(
        judge={
            "metrics": ["context_precision", "context_recall", "context_relevancy", "answer_relevancy"],
            "base_url": loopback.url.replace("http://", f"http://user:{key}@"),
            "api_key_env": "RAGMETRICS_NIGHTLY_KEY",
            "model": "test-model",
            "embedding_model": "test-embedding",
            "cache_path": "cache/verdicts.sqlite",
            "timeout_s": 5,
        },
    )
    code, out, err = run_cli([str(config)], capsys)
    assert code == 0, err
    assert key not in out and key not in err  # nor in what a cron job logs
    assert loopback.count(status=200) > 0
    report = Report.model_validate_json((_latest(qa_dir / "out") / "report.json").read_text())
    assert report.metadata.nightly is not None and report.metadata.nightly.judge is not None
    assert report.metadata.nightly.judge.backend == "openai"
    assert not any(r.failures for r in report.runs)
    files = [p for p in (qa_dir / "out").rglob("*") if p.is_file()]
    files += [p for p in (qa_dir / "cache").rglob("*") if p.is_file()]
    assert len(files) >= 5
    for path in files:
        assert key.encode() not in path.read_bytes(), path


@pytest.mark.slow
def test_examples_nightly_pins_then_gates(qa_dir: Path, write_config: ConfigWriter) -> None:
    import subprocess
    import sys

    example = Path(__file__).parents[2] / "examples" / "nightly.py"
    config = write_config(baseline={"max_drop": 0.02})
    command = [sys.executable, str(example), "--config", str(config)]
    first = subprocess.run([*command, "--bless"], capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    pinned = qa_dir / "out" / "baseline" / "report.json"
    assert pinned.is_file() and f"pinned {pinned}" in first.stdout
    write_jsonl(qa_dir / "qa.jsonl", qa_rows(degrade=True))
    second = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert second.returncode == 1, second.stderr
    assert "regression gate: FAILED against" in second.stdout and str(pinned) in second.stdout


def test_a_failing_judge_is_reported_not_hidden(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("RAGMETRICS_NIGHTLY_KEY", "sk-failing-judge-test")
    loopback.inject("server_error", times=None, prompt="context_recall")
    config = write_config(
        runs=[
            {"source": "dataset", "name": "pipeline"},
            {"source": "file", "path": "weaker.trec", "name": "weaker"},
        ],
        judge={
            "metrics": ["context_precision", "context_recall"],
            "base_url": loopback.url,
            "api_key_env": "RAGMETRICS_NIGHTLY_KEY",
            "model": "test-model",
            "cache_path": "cache/verdicts.sqlite",
            "max_retries": 0,
            "timeout_s": 5,
        },
    )
    code, _, err = run_cli([str(config)], capsys)
    # A night with a metric that failed everywhere is incomplete: exit 3, the cause grouped on stderr.
    assert code == 3, err
    assert (
        "ragmetrics: run 'pipeline': 16 questions failed (context_recall: 16 of 16): server_error: "
        "context_recall (test-model): HTTP 500: internal error (test fault)"
    ) in err
    assert "INCOMPLETE" in err
    report = Report.model_validate_json((_latest(qa_dir / "out") / "report.json").read_text())
    pipeline = report.run("pipeline")
    assert (
        pipeline.aggregate["context_recall"] is None and pipeline.aggregate["context_precision"] is not None
    )
    assert {f.cause for f in pipeline.failures} == {"server_error"}
    assert report.metadata.nightly is not None
    assert report.metadata.nightly.failures["pipeline"] == {"context_recall": 16}
    assert "context_recall" not in report.metrics and "context_precision" in report.metrics
    assert any(
        n.startswith("context_recall: every score failed for pipeline, weaker") for n in report.metadata.notes
    )


def test_intersection_query_set_compares_only_shared_queries(
    qa_dir: Path, write_config: ConfigWriter, capsys: Any
) -> None:
    # A run that answers only the even queries: under trec_eval's convention its mean is over those 8 and
    # the comparison pairs those 8, instead of scoring the 8 others 0 against the full run.
    lines = [f"q{i:02d} Q0 {topic}#1 1 1.0 half" for i, (topic, *_rest) in enumerate(TOPICS) if i % 2 == 0]
    (qa_dir / "half.trec").write_text("\n".join(lines) + "\n", encoding="utf-8")
    runs = [
        {"source": "dataset", "name": "pipeline"},
        {"source": "file", "path": "half.trec", "name": "half"},
    ]
    for query_set, n, half_mean in (("intersection", len(TOPICS) // 2, 1.0), ("qrels", len(TOPICS), 0.5)):
        config = write_config(
            f"{query_set}.yaml", runs=runs, retrieval={"metrics": ["mrr"], "query_set": query_set}
        )
        assert run_cli([str(config), "--output", str(qa_dir / query_set)], capsys)[0] == 0
        report = Report.model_validate_json((_latest(qa_dir / query_set) / "report.json").read_text())
        [pair] = report.comparisons
        assert pair.n == n, query_set
        assert report.run("half").aggregate["mrr"] == pytest.approx(half_mean)
