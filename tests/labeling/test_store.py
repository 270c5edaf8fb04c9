"""The labels file: what `human_labels:` reads, kept whole across interruptions."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.errors import InputError
from ragmetrics.labeling.store import LabelStore
from ragmetrics.trust.labels import load_labels


@pytest.mark.parametrize("name", ["labels.jsonl", "labels.csv"])
def test_labels_round_trip_through_the_report_reader(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    store = LabelStore(path)
    store.set("pipeline", "faithfulness", "q1", 1.0)
    store.set("pipeline", "faithfulness", "q2", 0.5)
    store.set(None, "context_recall", "q1", 0.0)
    store.set("pipeline", "faithfulness", "q2", 0.0)  # changed mind: replaced, not duplicated
    labels = load_labels(path)
    got = {(lab.run, lab.metric, lab.sample_id): lab.value for lab in labels.labels}
    assert got == {
        ("pipeline", "faithfulness", "q1"): 1.0,
        ("pipeline", "faithfulness", "q2"): 0.0,
        (None, "context_recall", "q1"): 0.0,
    }
    again = LabelStore(path)  # a second session resumes with the same labels
    assert again.for_metric("pipeline", "faithfulness") == {"q1": 1.0, "q2": 0.0}
    assert again.for_metric("other", "context_recall") == {"q1": 0.0}
    assert not list(tmp_path.glob(".*.tmp"))


def test_removing_the_last_label_leaves_no_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    store = LabelStore(path)
    store.set("r", "faithfulness", "q1", 1.0)
    store.remove("r", "faithfulness", "q1")
    assert not path.exists()
    assert LabelStore(path).for_metric("r", "faithfulness") == {}


def test_a_damaged_file_is_an_error_not_a_fresh_start(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"sample_id": "q1", "metric": "faithfulness", "label": 1}\n{"sample_id": "q2", "met\n')
    with pytest.raises(InputError) as caught:
        LabelStore(path)
    assert "line 2" in str(caught.value)


def test_unknown_suffix_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"\.jsonl or \.csv"):
        LabelStore(tmp_path / "labels.parquet")


def test_judged_samples_errors_name_the_line(tmp_path: Path) -> None:
    from ragmetrics.nightly.judged_samples import read_judged_samples

    path = tmp_path / "judged_samples.jsonl"
    path.write_text('{"run": "a", "id": "q1", "question": "Q?"}\n{"run": "a", "id": "q2"}\n')
    with pytest.raises(InputError) as caught:
        read_judged_samples(path)
    assert "line 2" in str(caught.value) and "question" in str(caught.value)
    path.write_text(
        '{"run": "a", "id": "q1", "question": "Q?"}\n{"run": "a", "id": "q1", "question": "Q?"}\n'
    )
    with pytest.raises(InputError, match="appears twice"):
        read_judged_samples(path)
    with pytest.raises(InputError, match=r"no judged_samples\.jsonl here"):
        read_judged_samples(tmp_path / "missing" / "judged_samples.jsonl")
