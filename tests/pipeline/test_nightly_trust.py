"""The nightly job with human labels and judge repeats: figures in the report, zero calls on a rerun, the gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.nightly.pipeline import run_pipeline

from .conftest import ConfigWriter
from .helpers import TOPICS, qa_rows, write_jsonl


def _judge(loopback: Any, **kw: Any) -> dict[str, Any]:
    return {
        "metrics": ["context_recall"],
        "base_url": loopback.url,
        "api_key_env": "RAGMETRICS_TRUST_KEY",
        "model": "test-model",
        "cache_path": "cache/verdicts.sqlite",
        **kw,
    }


def _noisy_rows(qa_dir: Path) -> None:
    # Half the references carry a statement the scripted judge attributes only with an even seed: noise.
    rows = qa_rows()
    for i, row in enumerate(rows):
        row["reference"] = f"{row['reference']} [attr]. Another claim{' [coin]' if i % 2 else ''}."
    write_jsonl(qa_dir / "qa.jsonl", rows)


def test_repeats_measure_the_judges_noise_and_a_rerun_makes_no_call(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGMETRICS_TRUST_KEY", "sk-trust")
    _noisy_rows(qa_dir)
    config = write_config(judge=_judge(loopback, repeats=3, seed=42))
    first = run_pipeline(config, write=False)
    result = first.report.run("pipeline")
    assert result.trust is not None
    (noise,) = result.trust.noise
    assert noise.repeats == 3 and noise.samples == len(TOPICS)
    assert 0 < noise.flip_rate < 1 and noise.mean_spread > 0 and noise.icc is not None
    width = lambda i: i.high - i.low  # noqa: E731
    assert width(noise.ci_with_noise) > width(noise.ci_samples)
    assert set(noise.spread) == {r["id"] for r in qa_rows()}
    calls = loopback.count()
    assert calls == 3 * len(TOPICS)  # each repeat its own requests (distinct seeds, distinct cache keys)
    second = run_pipeline(config, write=False)
    assert loopback.count() == calls  # every repeat came from the cache
    assert second.report.run("pipeline").trust == result.trust


def test_human_labels_give_agreement_ppi_and_can_drive_the_gate(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAGMETRICS_TRUST_KEY", "sk-trust")
    labels = [{"sample_id": r["id"], "metric": "context_recall", "label": 0.0} for r in qa_rows()[:10]]
    write_jsonl(qa_dir / "labels.jsonl", labels)
    config = write_config(judge=_judge(loopback), human_labels={"path": "labels.jsonl"})
    outcome = run_pipeline(config, output_dir=tmp_path / "out")
    trust = outcome.report.run("pipeline").trust
    assert (
        trust is not None and trust.labels_source is not None and trust.labels_source.endswith("labels.jsonl")
    )
    (agree,) = trust.agreement
    (ppi,) = trust.ppi
    assert agree.n_labeled == 10 and ppi.n_labeled == 10 and ppi.n_unlabeled == len(TOPICS) - 10
    assert ppi.classical is not None and ppi.classical.estimate == pytest.approx(0.0)
    assert agree.bias.estimate == pytest.approx(
        0.0
    )  # no reference statement carries [attr]: the judge says 0, as the labels
    report_json = json.loads((outcome.folder / "report.json").read_text())  # type: ignore[operator]
    assert report_json["runs"][0]["trust"]["ppi"][0]["ppi_plus"] is not None
    # the PPI gate against this report as baseline: nothing moved, nothing regressed
    gated = write_config(
        name="gated.yaml",
        judge=_judge(loopback),
        human_labels={"path": "labels.jsonl"},
        baseline={"path": str(outcome.folder / "report.json"), "use_ppi": True},  # type: ignore[operator]
    )
    again = run_pipeline(gated, write=False)
    assert again.gate is not None and not again.gate.failed
    checks = [c for c in again.gate.checks if c.metric == "context_recall"]
    assert checks and all(
        c.ppi_diff is not None and c.ppi_diff.estimate == pytest.approx(0.0) for c in checks
    )


def test_bad_labels_exit_2_naming_the_line(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from ragmetrics.cli import main

    monkeypatch.setenv("RAGMETRICS_TRUST_KEY", "sk-trust")
    write_jsonl(
        qa_dir / "labels.jsonl",
        [
            {"sample_id": "q00", "metric": "context_recall", "label": 1},
            {"sample_id": "nope", "metric": "context_recall", "label": 0},
        ],
    )
    config = write_config(judge=_judge(loopback), human_labels={"path": "labels.jsonl"})
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "labels.jsonl" in err and "line 2" in err and "unknown sample id 'nope'" in err


def test_trust_figures_reach_the_terminal_and_the_html_report(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from ragmetrics.cli import main

    monkeypatch.setenv("RAGMETRICS_TRUST_KEY", "sk-trust")
    _noisy_rows(qa_dir)
    write_jsonl(
        qa_dir / "labels.jsonl",
        [{"sample_id": r["id"], "metric": "context_recall", "label": 1} for r in qa_rows()[:8]],
    )
    config = write_config(judge=_judge(loopback, repeats=2), human_labels={"path": "labels.jsonl"})
    assert main(["run", str(config), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "How far to trust the judge" in out and "PPI++" in out and "flip rate" in out and "bias" in out
    page = next((qa_dir / "out").glob("*/report.html")).read_text(encoding="utf-8")
    assert (
        "How far to trust the judge" in page
        and "per-sample spread" in page
        and "Agreement with human labels" in page
    )


def test_labels_from_a_dataset_column_equal_the_same_labels_from_a_file(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGMETRICS_TRUST_KEY", "sk-trust")
    rows = qa_rows()
    for i, row in enumerate(rows):
        row["reference"] = f"{row['reference']} [attr]. Another claim."
        row["human_recall"] = (0.5 if i % 3 else 1.0) if i < 12 else None  # 12 labelled, the rest empty
    write_jsonl(qa_dir / "qa.jsonl", rows)
    write_jsonl(
        qa_dir / "labels.jsonl",
        [{"sample_id": r["id"], "metric": "context_recall", "label": r["human_recall"]} for r in rows[:12]],
    )
    from_column = run_pipeline(
        write_config(judge=_judge(loopback), human_labels={"columns": {"context_recall": "human_recall"}}),
        write=False,
    )
    from_file = run_pipeline(
        write_config(name="file.yaml", judge=_judge(loopback), human_labels={"path": "labels.jsonl"}),
        write=False,
    )
    a = from_column.report.run("pipeline").trust
    b = from_file.report.run("pipeline").trust
    assert a is not None and b is not None
    assert a.agreement[0].n_labeled == 12
    assert a.ppi == b.ppi and a.agreement == b.agreement


def test_a_bad_label_in_a_dataset_column_names_the_row_and_column(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from ragmetrics.cli import main

    monkeypatch.setenv("RAGMETRICS_TRUST_KEY", "sk-trust")
    rows = qa_rows()
    rows[3]["human_recall"] = 7  # not in [0, 1], and no scale given
    write_jsonl(qa_dir / "qa.jsonl", rows)
    config = write_config(
        judge=_judge(loopback), human_labels={"columns": {"context_recall": "human_recall"}}
    )
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "line 4" in err and "human_recall" in err and "outside [0, 1]" in err
