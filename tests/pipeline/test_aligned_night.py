"""An aligned judge in a night: `ragmetrics align` on a night's judged samples, then `judge: {aligned: DIR}`:
the scores follow the aligned map, the report says what it was aligned on, and the gate refuses to compare an
aligned metric with an unaligned baseline (its scale changed)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragmetrics.cli.main import main
from ragmetrics.judge.aligned.artifact import (
    AlignedMetric,
    AlignedSet,
    HeldOutFigure,
    LabelProvenance,
)
from ragmetrics.judge.aligned.calibration import fit_cut
from ragmetrics.nightly.pipeline import run_pipeline

from .conftest import ConfigWriter
from .helpers import qa_rows, write_jsonl

JUDGE = {"backend": "local", "metrics": ["faithfulness"]}


def test_align_a_night_then_judge_with_it(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    first = run_pipeline(write_config(judge=JUDGE), progress=False)
    assert first.folder is not None
    rows = qa_rows()
    labels = [
        {"sample_id": r["id"], "metric": "faithfulness", "label": i % 2, "run": "pipeline"}
        for i, r in enumerate(rows[:12])
    ]
    write_jsonl(qa_dir / "labels.jsonl", labels)
    out = qa_dir / "aligned"
    args = ["align", str(qa_dir / "labels.jsonl"), "-m", "faithfulness", "--samples", str(qa_dir / "out" / "latest"),
            "-o", str(out), "--folds", "2"]  # fmt: skip
    assert main([*args, "--dry-run"]) == 0
    assert "judge as it is" in capsys.readouterr().out
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("faithfulness: ") and "learning curve" in printed
    report = json.loads((out / "faithfulness.alignment.json").read_text())
    assert report["labels"]["count"] == 12 and report["labels"]["run"] == "pipeline"
    assert (
        main(
            [
                "align",
                str(qa_dir / "labels.jsonl"),
                "-m",
                "faithfulness",
                "--samples",
                str(qa_dir / "nowhere.jsonl"),
                "-o",
                str(out),
            ]
        )
        == 2
    )

    # An aligned metric, written as `ragmetrics align` writes one (a calibration moving the cut to 0.9)
    entry = AlignedMetric(
        metric="faithfulness", backend="local", model="m", steps=["calibration"],
        calibration=fit_cut([0.5, 0.8, 0.95, 1.0], [0, 0, 1, 1]),
        labels=LabelProvenance(source="labels.jsonl", sha256="0" * 64, count=12, kind="binary", folds=2, seed=0),
        heldout=HeldOutFigure(statistic="balanced_accuracy", n=12, before=0.5, after=0.75, after_low=0.6, after_high=0.9),
        created_at=datetime.now(UTC), ragmetrics_version="test",
    )  # fmt: skip
    out.mkdir(exist_ok=True)
    (out / "aligned.json").write_text(AlignedSet(metrics={"faithfulness": entry}).model_dump_json())
    config = write_config(
        name="aligned.yaml", judge={**JUDGE, "aligned": "aligned"},
        baseline={"path": str(first.folder / "report.json")},
    )  # fmt: skip
    night = run_pipeline(config, progress=False)
    run = night.report.run("pipeline")
    before = first.report.run("pipeline")
    for q, scores in before.per_query.items():
        raw = scores.get("faithfulness")
        if raw is not None:
            assert run.per_query[q]["faithfulness"] == pytest.approx(float(entry.calibration.apply([raw])[0]))  # type: ignore[union-attr]
    judge = run.metadata.judge
    assert judge is not None and "aligned:faithfulness" in judge.prompt_versions
    assert judge.settings["aligned"]["faithfulness"]["summary"].startswith(
        "aligned on 12 labels (calibration)"
    )
    markdown = (night.folder / "report.md").read_text()  # type: ignore[operator]
    assert (
        "aligned faithfulness: aligned on 12 labels (calibration): held-out balanced accuracy 0.75 [0.60, 0.90], was 0.50"
        in markdown
    )
    assert night.gate is not None
    assert any(
        "faithfulness" in line and "alignment to your labels changed" in line
        for line in night.gate.not_comparable
    )


def test_align_from_a_config_with_labels_in_dataset_columns(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = qa_rows()
    for i, row in enumerate(rows):
        row["human_faith"] = i % 2 if i < 12 else None
    write_jsonl(qa_dir / "qa.jsonl", rows)
    config = write_config(judge=JUDGE, human_labels={"columns": {"faithfulness": "human_faith"}})
    out = qa_dir / "aligned"
    assert main(["align", "--config", str(config), "-m", "faithfulness", "-o", str(out), "--folds", "2"]) == 0
    report = json.loads((out / "faithfulness.alignment.json").read_text())
    assert report["labels"]["count"] == 12 and report["labels"]["source"].endswith("qa.jsonl")
    capsys.readouterr()
    assert main(["align", "-m", "faithfulness", "-o", str(out)]) == 2
    assert "give the labels file, or --config" in capsys.readouterr().err
