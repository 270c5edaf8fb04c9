"""Labels from several people: one file with a labeller column, adjudicated for agreement/PPI/alignment, and a
night whose report shows the people's agreement with each other beside the judge's."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main
from ragmetrics.errors import InputError
from ragmetrics.trust.labels import load_labels


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_labeller_column_and_the_adjudication_rules(tmp_path: Path) -> None:
    rows = [{"sample_id": "a", "metric": "faithfulness", "label": 1, "labeller": "ann"},
            {"sample_id": "a", "metric": "faithfulness", "label": 0, "labeller": "bob"},
            {"sample_id": "a", "metric": "faithfulness", "label": 1, "labeller": "cyd"},
            {"sample_id": "b", "metric": "faithfulness", "label": 0, "labeller": "ann"},
            {"sample_id": "b", "metric": "faithfulness", "label": 1, "labeller": "bob"},
            {"sample_id": "c", "metric": "faithfulness", "label": 1, "labeller": "ann"}]  # fmt: skip
    path = _write(tmp_path / "labels.jsonl", rows)
    majority = load_labels(path)
    assert majority.labellers() == ["ann", "bob", "cyd"]
    assert {k: v.value for k, v in majority.for_metric("faithfulness").items()} == {"a": 1.0, "b": 0.5, "c": 1.0}
    senior = load_labels(path, adjudication="bob")
    assert {k: v.value for k, v in senior.for_metric("faithfulness").items()} == {"a": 0.0, "b": 1.0, "c": 1.0}
    assert load_labels(path).ratings("faithfulness")["bob"] == {"a": 0.0, "b": 1.0}
    with pytest.raises(InputError, match="adjudication 'dan'"):
        load_labels(path, adjudication="dan")
    _write(tmp_path / "dup.jsonl", [*rows, {**rows[1]}])
    with pytest.raises(InputError, match=r"labeller 'bob'.*line 2"):
        load_labels(tmp_path / "dup.jsonl")


def test_graded_labels_adjudicate_on_their_scale(tmp_path: Path) -> None:
    rows = [{"id": "a", "metric": "faithfulness", "label": 3, "labeller": "ann"},
            {"id": "a", "metric": "faithfulness", "label": 1, "labeller": "bob"}]  # fmt: skip
    labels = load_labels(_write(tmp_path / "l.jsonl", rows), scale=3, adjudication="mean")
    (only,) = labels.for_metric("faithfulness").values()
    assert only.raw == 2.0 and only.value == pytest.approx(2 / 3)


def test_a_night_shows_the_people_beside_the_judge(tmp_path: Path, capsys: Any) -> None:
    """Two people label every question's context_precision: ann as the local judge decides, bob as ann with
    one label in five flipped. The report holds the people's agreement with each other and the judge's beside
    it, with intervals, in report.json, the terminal and report.html."""
    config = {
        "name": "people", "dataset": {"builtin": "pydocs"},
        "retrieval": {"metrics": ["ndcg@10"], "query_set": "qrels"},
        "runs": [{"source": "retriever", "retriever": "bm25", "name": "bm25"}],
        "judge": {"backend": "local", "metrics": ["context_precision"], "contexts_top_k": 3,
                  "cache_path": str(tmp_path / "v.sqlite")},
        "output": {"dir": str(tmp_path / "first"), "formats": ["json"], "history": False},
    }  # fmt: skip
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", str(tmp_path / "c.yaml"), "--no-progress"]) == 0
    report = json.loads((tmp_path / "first" / "latest" / "report.json").read_text(encoding="utf-8"))
    scores = report["runs"][0]["per_query"]
    rng = random.Random(3)
    rows = []
    for qid, values in scores.items():
        ann = 1 if values["context_precision"] >= 0.5 else 0
        bob = 1 - ann if rng.random() < 0.2 else ann
        rows += [{"sample_id": qid, "metric": "context_precision", "label": ann, "labeller": "ann"},
                 {"sample_id": qid, "metric": "context_precision", "label": bob, "labeller": "bob"}]  # fmt: skip
    _write(tmp_path / "labels.jsonl", rows)
    config["human_labels"] = {"path": str(tmp_path / "labels.jsonl"), "adjudication": "ann"}
    config["output"] = {"dir": str(tmp_path / "out"), "formats": ["json", "html"], "history": False}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    capsys.readouterr()
    assert main(["run", str(tmp_path / "c.yaml"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    night = json.loads((tmp_path / "out" / "latest" / "report.json").read_text(encoding="utf-8"))
    (agreement,) = night["runs"][0]["trust"]["agreement"]
    people = agreement["people"]
    assert people["labellers"] == ["ann", "bob"] and people["items"] == len(scores) and people["level"] == "nominal"
    for key in ("cohen_kappa", "alpha", "people_alpha", "judge_alpha", "difference"):
        assert people[key]["low"] <= people[key]["estimate"] <= people[key]["high"]
    # the judge is ann: it agrees with the people (ann, bob) more than bob agrees with ann
    assert people["judge_alpha"]["estimate"] > people["people_alpha"]["estimate"]
    assert agreement["kappa"]["estimate"] == 1.0  # adjudicated by ann: the judge's own decisions
    assert len(people["disagreements"]) == sum(1 for i in range(0, len(rows), 2) if rows[i]["label"] != rows[i + 1]["label"])
    assert "people vs each other" in out and "judge vs people alpha" in out
    page = (tmp_path / "out" / "latest" / "report.html").read_text(encoding="utf-8")
    assert "the judge&#x27;s ceiling" in page or "the judge's ceiling" in page
