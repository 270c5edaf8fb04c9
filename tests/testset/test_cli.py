"""`ragmetrics testset` from the command line, and a nightly run that reads its folder with no conversion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ragmetrics.cli import main
from ragmetrics.testset.output import read_grades, read_items, read_manifest

from .conftest import corpus_rows, write_jsonl


def test_testset_on_the_builtin_collection_then_run_on_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ts"
    assert main(["testset", "builtin", "-o", str(out), "--size", "24", "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    assert "24 questions" in printed and "generator offline" in printed
    for name in ("questions.jsonl", "qrels.txt", "grades.tsv", "testset.json", "testset.html"):
        assert (out / name).is_file(), name
    assert oct(out.stat().st_mode & 0o777) == "0o755"
    items = read_items(out)
    manifest = read_manifest(out)
    assert len(items) == manifest["questions"] == 24
    assert manifest["corpus_path"] == "builtin" and manifest["generator"] == "offline"
    assert set(manifest["filters"]) >= {
        "near_duplicate",
        "copies_chunk",
        "not_answered",
        "unsupported_reference",
    }
    assert manifest["coverage"]["groups_with_questions"] >= 10
    qrels = [line.split() for line in (out / "qrels.txt").read_text(encoding="utf-8").splitlines()]
    assert {q for q, *_ in qrels} == {i.id for i in items if i.answerable}
    assert {g.origin for g in read_grades(out)} == {"source"}
    html = (out / "testset.html").read_text(encoding="utf-8")
    assert "Coverage of the corpus" in html and "Filters" in html and items[0].id in html

    config = {
        "name": "on the generated test set",
        "dataset": {"path": str(out)},
        "retrieval": {"metrics": ["ndcg@10", "recall@10"]},
        "runs": [
            {"source": "retriever", "retriever": "bm25"},
            {"source": "retriever", "retriever": "bm25", "name": "bm25_flat", "params": {"b": 0.0}},
        ],
        "output": {"dir": str(tmp_path / "night"), "formats": ["json"], "plots": False},
        "progress": False,
    }
    config_path = tmp_path / "night.yaml"
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", str(config_path)]) == 0
    report = json.loads((tmp_path / "night" / "latest" / "report.json").read_text(encoding="utf-8"))
    run = next(r for r in report["runs"] if r["name"] == "bm25")
    answerable = sum(1 for i in items if i.answerable)
    # unanswerable questions are not applicable to retrieval metrics: a None with the reason, out of the means
    scored = [q for q, s in run["per_query"].items() if s["ndcg@10"] is not None]
    assert len(scored) == answerable and len(run["per_query"]) == len(items)
    reasons = {n["query_id"]: n["reason"] for n in run["not_applicable"]}
    assert set(reasons) == {i.id for i in items if not i.answerable}
    assert all("unanswerable question" in r for r in reasons.values())
    assert 0.2 < run["aggregate"]["ndcg@10"] <= 1.0


def test_a_jsonl_corpus_is_found_again_as_the_runs_passages(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_rows())
    out = tmp_path / "ts"
    assert (
        main(
            [
                "testset",
                str(corpus),
                "-o",
                str(out),
                "--size",
                "8",
                "--no-judge-checks",
                "--kinds",
                "factoid=0.5,keyword=0.5",
            ]
        )
        == 0
    )
    manifest = read_manifest(out)
    assert manifest["corpus_path"] == str(corpus.resolve())
    assert manifest["kinds"]["factoid"] == manifest["kinds"]["keyword"] == 4
    from ragmetrics.nightly.config import DatasetConfig
    from ragmetrics.nightly.dataset import load_dataset

    dataset = load_dataset(DatasetConfig(path=out), progress=False)
    assert dataset.passages is not None and len(dataset.passages) == len(corpus_rows())
    assert len(dataset.samples) == 8 and dataset.has_qrels


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--kinds", "factoid=abc"], "not a number"),
        (["--kinds", "trivia=1"], "unknown question kind"),
        (["--size", "0"], "testset.size"),
        (["--pool", "nowhere.trec"], "not a run file and not a retriever kind"),
    ],
)
def test_bad_options_exit_2_and_say_what(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_rows())
    code = main(["testset", str(corpus), "-o", str(tmp_path / "ts"), "--no-judge-checks", *args])
    assert code == 2
    assert words in capsys.readouterr().err


def test_a_bad_corpus_line_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [*corpus_rows()[:3], {"id": "volcano-1", "text": "duplicate"}]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", rows)
    assert main(["testset", str(corpus), "-o", str(tmp_path / "ts")]) == 2
    err = capsys.readouterr().err
    assert f"{corpus}, line 4, field 'id': duplicate id 'volcano-1' (first on line 1)" in err


def test_dry_run_with_the_local_judge_says_nothing_leaves_the_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["testset", "builtin", "-o", str(tmp_path / "ts"), "--size", "10", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "no request leaves this machine" in out and not (tmp_path / "ts").exists()
