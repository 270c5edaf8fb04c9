"""trust.min_agreement: a night whose judge agrees with the human labels less than the floor neither passes
nor fails the gate on that metric; the report lists it and the night exits 5."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ragmetrics.cli.main import main
from ragmetrics.nightly.config import load_config
from ragmetrics.nightly.pipeline import run_pipeline

from .conftest import ConfigWriter
from .helpers import qa_rows, write_jsonl

JUDGE = {"backend": "local", "metrics": ["faithfulness"]}


def test_a_judge_below_the_floor_neither_passes_nor_fails(
    qa_dir: Path, write_config: ConfigWriter, tmp_path: Path
) -> None:
    labels = [
        {"sample_id": r["id"], "metric": "faithfulness", "label": float(i % 2)}
        for i, r in enumerate(qa_rows()[:12])
    ]
    write_jsonl(qa_dir / "labels.jsonl", labels)
    first = run_pipeline(write_config(judge=JUDGE, human_labels={"path": "labels.jsonl"}), progress=False)
    assert first.folder is not None and first.exit_code == 0
    baseline = str(first.folder / "report.json")
    (agreement,) = first.report.run("pipeline").trust.agreement  # type: ignore[union-attr]
    assert agreement.balanced_accuracy is not None and agreement.balanced_accuracy.estimate is not None
    measured = agreement.balanced_accuracy.estimate

    strict = write_config(
        name="strict.yaml", judge=JUDGE, human_labels={"path": "labels.jsonl"}, baseline={"path": baseline},
        trust={"min_agreement": {"statistic": "balanced_accuracy", "value": min(1.0, measured + 0.01)}},
    )  # fmt: skip
    night = run_pipeline(strict, progress=False, write=False)
    assert night.gate is not None
    assert night.gate.status == "untrusted" and night.exit_code == 5
    (line,) = night.gate.untrusted
    assert line.startswith("pipeline / faithfulness: judge balanced accuracy with people")
    assert "below the floor" in line
    assert not any(c.metric == "faithfulness" for c in night.gate.checks)  # neither passed nor failed
    assert any(c.metric == "ndcg@10" for c in night.gate.checks)  # the other metrics are still gated
    assert "JUDGE BELOW THE AGREEMENT FLOOR" in night.gate.describe()

    lenient = write_config(
        name="lenient.yaml", judge=JUDGE, human_labels={"path": "labels.jsonl"}, baseline={"path": baseline},
        trust={"min_agreement": {"statistic": "balanced_accuracy", "value": max(-1.0, measured - 0.01)}},
    )  # fmt: skip
    fine = run_pipeline(lenient, progress=False, write=False)
    assert fine.gate is not None and not fine.gate.untrusted and fine.exit_code == 0
    assert any(c.metric == "faithfulness" for c in fine.gate.checks)
    assert main(["run", str(strict), "--output", str(tmp_path / "cli")]) == 5


def test_the_floor_needs_labels(qa_dir: Path, write_config: ConfigWriter) -> None:
    path = write_config(judge=JUDGE, trust={"min_agreement": {"statistic": "kappa", "value": 0.4}})
    with pytest.raises((ValidationError, ValueError), match="needs human_labels"):
        load_config(path)
