"""`ragmetrics validity NIGHT` on a night built here (four runs answered by the example generator, token_f1 as
answer quality), the night's own report section, and the nights it refuses with exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli import main
from ragmetrics.schema import Report

from .helpers import TOPICS, filler, latest, passages, qa_rows, relevant, write_jsonl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _trec(path: Path, name: str, pick: Any) -> None:
    lines = []
    for i, (topic, *_rest) in enumerate(TOPICS):
        docs = pick(i, topic, TOPICS[(i + 1) % len(TOPICS)][0])
        lines += [f"q{i:02d} Q0 {d} {r + 1} {10 - r} {name}" for r, d in enumerate(docs)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One night for the module: 4 file runs of differing quality, the generator reads each run's top 1."""
    folder = tmp_path_factory.mktemp("validity")
    write_jsonl(folder / "qa.jsonl", qa_rows())
    write_jsonl(folder / "passages.jsonl", passages())
    picks = {
        "right": lambda i, t, o: [relevant(t), filler(t)],
        "half": lambda i, t, o: [relevant(t), filler(t)] if i % 2 else [filler(t), relevant(t)],
        "third": lambda i, t, o: [relevant(t), filler(t)] if i % 3 == 0 else [relevant(o), filler(t)],
        "wrong": lambda i, t, o: [filler(t), relevant(o)],
    }
    for name, pick in picks.items():
        _trec(folder / f"{name}.trec", name, pick)
    config = {
        "name": "validity night",
        "dataset": {"path": "qa.jsonl", "passages": "passages.jsonl"},
        "retrieval": {"metrics": ["ndcg@10", "recall@1"]},
        "runs": [{"source": "file", "path": f"{n}.trec", "name": n} for n in picks],
        "generator": {"target": "rag_pipeline:generate", "python_path": [str(EXAMPLES)], "top_k": 1},
        "judge": {"backend": "local", "metrics": ["token_f1"]},
        "compare": {"test": "t"},
        "output": {"dir": "out", "plots": False, "formats": ["json", "md", "html"]},
        "progress": False,
    }
    (folder / "night.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    assert main(["run", str(folder / "night.yaml"), "--no-progress"]) == 0
    return latest(folder / "out")


def test_validity_names_what_tracks_the_answers_and_writes_its_files(
    night: Path, tmp_path: Path, capsys: Any
) -> None:
    capsys.readouterr()
    code = main(["validity", str(night), "--out", str(tmp_path), "--samples", "300"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("verdict: ")
    assert "Which metric tracks token_f1" in out and "ndcg@10" in out and "recall@1" in out
    result = json.loads((tmp_path / "validity.json").read_text(encoding="utf-8"))
    assert result["runs"] == ["right", "half", "third", "wrong"] and result["questions"] == len(TOPICS)
    by_metric = {m["metric"]: m for m in result["metrics"]}
    assert set(by_metric) == {"ndcg@10", "recall@1"}  # latency, tokens, cost: not assessed, and said so
    assert any("not assessed" in n and "latency_s" in n for n in result["notes"])
    for item in by_metric.values():
        assert item["kind"] == "retrieval" and item["qrels"] == "human" and item["units"] == 4 * len(TOPICS)
        assert item["per_query"]["estimate"] > 0.3  # the generator answers from what the run ranked first
        assert item["per_system"]["estimate"] is not None and item["pairs"] == 6
    assert (tmp_path / "plots" / "validity_tau.png").stat().st_size > 1000
    assert (tmp_path / "plots" / "validity_scatter.png").stat().st_size > 1000
    assert "# Which metric tracks the answers" in (tmp_path / "validity.md").read_text(encoding="utf-8")


def test_the_nights_report_holds_the_same_study(night: Path, tmp_path: Path, capsys: Any) -> None:
    report = Report.model_validate_json((night / "report.json").read_text(encoding="utf-8"))
    stored = report.metadata.extra["validity"]
    assert main(["validity", str(night), "--out", str(tmp_path), "--no-plots"]) == 0
    again = json.loads((tmp_path / "validity.json").read_text(encoding="utf-8"))
    assert again == stored  # the same settings (the night's seed, 1000 resamples): the same figures
    assert "## Which metric tracks the answers" in (night / "report.md").read_text(encoding="utf-8")
    assert "id='validity'" in (night / "report.html").read_text(encoding="utf-8")


def _copy(night: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "night"
    shutil.copytree(night, folder)
    return folder


def test_a_night_without_answers_exits_2_naming_what_is_missing(night: Path, tmp_path: Path, capsys: Any) -> None:
    folder = _copy(night, tmp_path)
    (folder / "judged_samples.jsonl").unlink()
    capsys.readouterr()
    assert main(["validity", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "the night has no answers: no judged_samples.jsonl beside report.json" in err

    rows = [json.loads(line) for line in (night / "judged_samples.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in rows:
        row.pop("answer", None)
    write_jsonl(folder / "judged_samples.jsonl", rows)
    assert main(["validity", str(folder)]) == 2
    assert "the night has no answers: no sample in it has a non-empty answer" in capsys.readouterr().err
    assert not (folder / "validity.json").exists()


def test_a_night_without_answer_quality_exits_2_naming_it(night: Path, tmp_path: Path, capsys: Any) -> None:
    folder = _copy(night, tmp_path)
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    for run in report["runs"]:
        for scores in run["per_query"].values():
            scores.pop("token_f1", None)
    (folder / "report.json").write_text(json.dumps(report), encoding="utf-8")
    capsys.readouterr()
    assert main(["validity", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "the night has no answer quality: no run has a value of any answer metric" in err
    assert main(["validity", str(night), "--answer-metric", "answer_correctness"]) == 2
    assert "no answer quality 'answer_correctness'" in capsys.readouterr().err


def _config_folder(night: Path) -> Path:
    return next(p for p in night.parents if (p / "night.yaml").exists())


def test_a_night_can_turn_its_study_off_or_take_fewer_resamples(night: Path, capsys: Any) -> None:
    folder = _config_folder(night)
    config = yaml.safe_load((folder / "night.yaml").read_text(encoding="utf-8"))
    config["runs"] = config["runs"][:2]  # a smaller night: the switch is what is tested
    for name, section in (("off", {"enabled": False}), ("few", {"samples": 200})):
        config["validity"] = section
        config["output"] = {**config["output"], "dir": f"out-{name}", "formats": ["json"]}
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        assert main(["run", str(folder / f"{name}.yaml"), "--no-progress"]) == 0
    capsys.readouterr()
    off = Report.model_validate_json((latest(folder / "out-off") / "report.json").read_text(encoding="utf-8"))
    assert "validity" not in off.metadata.extra
    assert any("validity: not studied tonight (validity.enabled: false)" in n for n in off.metadata.notes)
    few = Report.model_validate_json((latest(folder / "out-few") / "report.json").read_text(encoding="utf-8"))
    assert few.metadata.extra["validity"]["settings"]["samples"] == 200


def test_a_bad_validity_section_is_a_config_error_naming_the_key(night: Path, capsys: Any) -> None:
    folder = _config_folder(night)
    config = yaml.safe_load((folder / "night.yaml").read_text(encoding="utf-8"))
    config["validity"] = {"samples": 5}
    (folder / "bad.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    capsys.readouterr()
    assert main(["run", str(folder / "bad.yaml"), "--no-progress"]) == 2
    assert "validity.samples" in capsys.readouterr().err


def test_the_pages_plots_show_the_points_the_study_counted(night: Path) -> None:
    """The page's scatter plot is rebuilt from report.json: it must leave out what the study left out."""
    import numpy as np

    from ragmetrics.nightly.validity_night import page_data, stored_validity

    report = Report.model_validate_json((night / "report.json").read_text(encoding="utf-8"))
    result = stored_validity(report)
    assert result is not None
    answered = report.metadata.extra["validity_answered"]
    assert sorted(answered) == ["half", "right", "third", "wrong"]
    assert int((~np.isnan(page_data(report, result).answer)).sum()) == 4 * len(TOPICS)
    dropped = sorted(answered["right"])[0]
    answered["right"] = [q for q in answered["right"] if q != dropped]  # as if that answer had been empty
    assert int((~np.isnan(page_data(report, result).answer)).sum()) == 4 * len(TOPICS) - 1
