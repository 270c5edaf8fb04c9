"""The labelling loop end to end: a night's report, labels given through the labelling session, and the next
night's report with the judge's agreement and the prediction-powered estimate; the CLI's errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmetrics.cli.main import main
from ragmetrics.labeling.session import LabelSession
from ragmetrics.nightly.judged_samples import FILENAME, read_judged_samples
from ragmetrics.nightly.pipeline import run_pipeline

from .conftest import ConfigWriter


def test_labels_from_a_session_feed_the_next_report(qa_dir: Path, write_config: ConfigWriter) -> None:
    judge = {"backend": "local", "metrics": ["faithfulness", "context_relevancy"]}
    first = run_pipeline(write_config(judge=judge), progress=False)
    assert first.folder is not None
    judged = read_judged_samples(first.folder / FILENAME)
    assert set(judged) == {"pipeline"}
    dataset_ids = [json.loads(line)["id"] for line in (qa_dir / "qa.jsonl").read_text().splitlines()]
    assert list(judged["pipeline"]) == dataset_ids  # every sample, in the dataset's order, as judged

    labels = qa_dir / "human_labels.csv"
    session = LabelSession(qa_dir / "out" / "latest", "faithfulness", labels, target=8)
    for position in range(8):
        session.label(position, 1.0 if position % 4 else 0.0)

    second = run_pipeline(
        write_config(judge=judge, human_labels={"path": "human_labels.csv"}), progress=False
    )
    trust = second.report.runs[0].trust
    assert trust is not None and trust.labels_source == str(labels)
    (agreement,) = trust.agreement
    assert agreement.metric == "faithfulness" and agreement.n_labeled == 8
    (ppi,) = trust.ppi
    assert ppi.n_labeled == 8 and ppi.ppi is not None


def test_label_command_errors_name_what_is_wrong(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["label", str(qa_dir / "nowhere"), "--metric", "faithfulness"]) == 2
    assert "no report.json here" in capsys.readouterr().err
    run_pipeline(write_config(judge={"backend": "local", "metrics": ["faithfulness"]}), progress=False)
    latest = str(qa_dir / "out" / "latest")
    assert main(["label", latest, "--metric", "answer_relevancy"]) == 2
    assert "no run has answer_relevancy scores" in capsys.readouterr().err
    assert main(["label", latest, "--metric", "faithfulness", "--run", "other"]) == 2
    assert "run 'other' has no faithfulness scores" in capsys.readouterr().err
    assert main(["label", latest, "--metric", "faithfulness", "--labels", str(qa_dir / "l.txt")]) == 2
    assert ".jsonl or .csv" in capsys.readouterr().err
