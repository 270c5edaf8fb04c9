"""Utility qrels given as a folder or file path say where their grades came from as other qrels do: utility.json's
provenance (generator, metric, when, k, runs) read into the report's `QrelsProvenance`, said on stderr by
`ragmetrics retrieval`/`compare` and in a night's notes and report.json (`utility_qrels.folder`); a damaged
utility.json, or one that does not match its qrels, is an error naming the file and the field (exit 2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PASSAGES, QUESTIONS, runs

from ragmetrics.cli.main import main
from ragmetrics.collection import load_pipeline_run, load_qa, passages_path
from ragmetrics.errors import InputError
from ragmetrics.nightly.pipeline import run_pipeline
from ragmetrics.retrieval.run import Run
from ragmetrics.utility import ExtractiveGenerator, UtilityQuestion, build_utility, read_folder
from ragmetrics.utility.inputs import read_passages


def _folder(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A utility folder built offline (extractive generator) for the fixture's two runs, and their run files."""
    built = build_utility(QUESTIONS, PASSAGES, runs(), ExtractiveGenerator(), k=3)
    folder = built.write(tmp_path / "utility")
    paths = []
    for run in runs():
        run.to_trec(tmp_path / f"{run.name}.trec")
        paths.append(tmp_path / f"{run.name}.trec")
    return folder, paths


def _manifest(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "utility.json").read_text())
    return data


@pytest.mark.parametrize("as_file", [False, True], ids=["folder", "qrels file"])
def test_retrieval_and_compare_say_where_utility_qrels_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], as_file: bool
) -> None:
    folder, run_paths = _folder(tmp_path)
    manifest = _manifest(folder)
    qrels = str(folder / "utility.qrels") if as_file else str(folder)
    code = main(["retrieval", qrels, *map(str, run_paths), "-m", "ndcg@3", "--format", "json"])
    assert code == 0
    out = capsys.readouterr()
    results = json.loads(out.out)
    relevant = manifest["qrels"]["relevant_by_origin"]["utility"]
    for result in results:
        stored = result["metadata"]["extra"]["qrels"]
        assert stored["by_origin"] == {"utility": relevant} and stored["relevant"] == relevant > 0
        origin = stored["utility"]
        assert origin["generator"]["kind"] == "extractive" and origin["metric"] == "token_f1"
        assert origin["created"] == manifest["provenance"]["created"] and origin["k"] == 3
        assert origin["runs"] == ["first", "second"]
        assert origin["manifest"] == str(folder / "utility.json")
    (line,) = [x for x in out.err.splitlines() if x.startswith("qrels of ")]
    assert f"{relevant} relevant grades, 100% from utility judgments" in line
    assert "extractive generator" in line and "token_f1" in line and manifest["provenance"]["created"] in line
    assert "top 3 of first, second" in line
    assert main(["compare", qrels, *map(str, run_paths), "-m", "ndcg@3"]) == 0
    assert line in capsys.readouterr().err.splitlines()


def test_a_compare_report_in_any_format_says_where_utility_qrels_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The provenance is part of the comparison (its notes), not only a line on stderr: a markdown report
    pasted into a pull request still says its grades are utility judgments and whose."""
    folder, run_paths = _folder(tmp_path)
    for fmt in ("markdown", "latex", "json"):
        assert main(["compare", str(folder), *map(str, run_paths), "-m", "ndcg@3", "--format", fmt]) == 0
        out = capsys.readouterr()
        (line,) = [x for x in out.err.splitlines() if x.startswith("qrels of ")]  # still said on stderr
        assert line.removeprefix("qrels of ").split(":")[0] == str(folder / "utility.qrels")
        shown = out.out if fmt != "json" else "\n".join(json.loads(out.out)["metadata"]["notes"])
        assert "from utility judgments" in shown and "extractive generator" in shown, fmt


def test_compare_of_results_files_says_where_their_qrels_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Results scored on utility qrels keep their provenance (metadata.extra.qrels); `compare --results` of
    them says it in the report's notes and on stderr, as `compare QRELS RUN RUN` does."""
    folder, run_paths = _folder(tmp_path)
    assert main(["retrieval", str(folder), *map(str, run_paths), "-m", "ndcg@3", "--format", "json"]) == 0
    scoring = capsys.readouterr()
    (line,) = [x for x in scoring.err.splitlines() if x.startswith("qrels of ")]
    scored = tmp_path / "scored.json"
    scored.write_text(scoring.out)
    for fmt in ("markdown", "json"):
        assert main(["compare", "--results", str(scored), "--format", fmt]) == 0
        out = capsys.readouterr()
        notes = out.out if fmt != "json" else "\n".join(json.loads(out.out)["metadata"]["notes"])
        assert line in notes, fmt
        assert line in out.err.splitlines()


@pytest.mark.parametrize(
    ("damage", "field"),
    [
        (lambda q: q.update(relevant="many"), "metadata.extra.qrels.relevant"),
        (lambda q: q.pop("by_origin"), "metadata.extra.qrels.by_origin"),
        (lambda q: q.update(utility={"k": "three"}), "metadata.extra.qrels.utility.manifest"),
        (lambda q: q.clear() or q.update(bogus=1), "metadata.extra.qrels.source"),
    ],
    ids=["relevant not a number", "by_origin missing", "utility damaged", "not a record"],
)
def test_compare_of_a_results_file_with_a_malformed_provenance_names_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Callable[[dict[str, Any]], Any], field: str
) -> None:
    folder, run_paths = _folder(tmp_path)
    assert main(["retrieval", str(folder), *map(str, run_paths), "-m", "ndcg@3", "--format", "json"]) == 0
    results = json.loads(capsys.readouterr().out)
    damage(results[1]["metadata"]["extra"]["qrels"])
    scored = tmp_path / "scored.json"
    scored.write_text(json.dumps(results))
    assert main(["compare", "--results", str(scored)]) == 2
    err = capsys.readouterr().err
    assert str(scored) in err and f"field {field!r}" in err and repr(results[1]["name"]) in err
    results[1]["metadata"]["extra"]["qrels"] = "utility"  # not an object at all
    scored.write_text(json.dumps(results))
    assert main(["compare", "--results", str(scored)]) == 2
    assert "field 'metadata.extra.qrels': run" in capsys.readouterr().err
    for result in results:  # results without one (plain qrels, older versions) are compared as before
        del result["metadata"]["extra"]["qrels"]
    scored.write_text(json.dumps(results))
    assert main(["compare", "--results", str(scored)]) == 0
    assert "qrels of " not in capsys.readouterr().err


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = data
        for part in parents:
            node = node[part]
        if value is _DELETE:
            del node[last]
        else:
            node[last] = value

    return change


_DELETE = object()

DAMAGE = {
    "metric missing": (_set("provenance.metric", _DELETE), "provenance.metric"),
    "unknown metric": (_set("provenance.metric", "bleu"), "provenance.metric"),
    "created not a time": (_set("provenance.created", "last night"), "provenance.created"),
    "k zero": (_set("provenance.k", 0), "provenance.k"),
    "runs not a list": (_set("provenance.runs", "first"), "provenance.runs"),
    "generator not an object": (_set("provenance.generator", "extractive"), "provenance.generator"),
    "generator empty": (_set("provenance.generator", {}), "provenance.generator"),
    "another schema": (_set("schema", "ragmetrics-utility-0"), "schema"),
    "origin": (_set("qrels.origin", "judge"), "qrels.origin"),
    "counts from another build": (_set("counts.scored", 3), "counts.scored"),
    "relevant from another build": (
        lambda d: (_set("qrels.relevant_by_origin.utility", 1)(d), _set("counts.relevant", 1)(d)),
        "qrels.relevant_by_origin.utility",
    ),
    "relevant counted twice differently": (_set("counts.relevant", 999), "counts.relevant"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_or_mismatching_utility_json_names_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    folder, run_paths = _folder(tmp_path)
    change, field = DAMAGE[damage]
    data = _manifest(folder)
    change(data)
    (folder / "utility.json").write_text(json.dumps(data))
    assert main(["retrieval", str(folder), *map(str, run_paths), "-m", "ndcg@3"]) == 2
    err = capsys.readouterr().err
    assert str(folder / "utility.json") in err and f"field {field!r}" in err
    with pytest.raises(InputError, match=r"utility\.json") as caught:
        read_folder(folder)
    assert caught.value.field == field


def test_broken_json_and_edited_qrels_are_errors_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, run_paths = _folder(tmp_path)
    text = (folder / "utility.json").read_text()
    (folder / "utility.json").write_text(text[: len(text) // 2])
    assert main(["retrieval", str(folder / "utility.qrels"), *map(str, run_paths), "-m", "ndcg@3"]) == 2
    assert f"{folder / 'utility.json'}, line " in capsys.readouterr().err
    (folder / "utility.json").write_text(text)
    lines = (folder / "utility.qrels").read_text().splitlines()
    (folder / "utility.qrels").write_text("\n".join(lines[:-1]) + "\n")  # a grade removed since the build
    assert main(["retrieval", str(folder), *map(str, run_paths), "-m", "ndcg@3"]) == 2
    assert "field 'counts.scored'" in capsys.readouterr().err


def test_a_plain_qrels_file_beside_another_tools_utility_json_is_read_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """utility.json is a common name: a team's own qrels file in a folder that holds one of another tool's (or
    a damaged one) is plain qrels, as it was before utility folders were read; only the folder itself, or
    the qrels file its manifest names, is read as utility qrels (strictly)."""
    folder, run_paths = _folder(tmp_path)
    own = tmp_path / "team"
    own.mkdir()
    (own / "qrels.txt").write_text((folder / "utility.qrels").read_text())
    for other in ('{"theme": "dark"}', "not json at all", json.dumps({**_manifest(folder), "schema": None})):
        (own / "utility.json").write_text(other)
        assert main(["retrieval", str(own / "qrels.txt"), *map(str, run_paths), "-m", "ndcg@3"]) == 0
        out = capsys.readouterr()
        assert "utility judgments" not in out.err and "error" not in out.err
    # the folder given as such, or a file named utility.qrels, is still read strictly
    assert main(["retrieval", str(own), *map(str, run_paths), "-m", "ndcg@3"]) == 2
    (own / "utility.qrels").write_text((folder / "utility.qrels").read_text())
    assert main(["retrieval", str(own / "utility.qrels"), *map(str, run_paths), "-m", "ndcg@3"]) == 2
    assert "field 'schema'" in capsys.readouterr().err


def _night(tmp_path: Path, folder: Path) -> Path:
    pipeline = load_pipeline_run().to_dict()
    # the pipeline's ranking upside down: its top 5 is the pipeline's bottom 5
    weaker = {
        q: {d: float(i) for i, d in enumerate(sorted(docs, key=docs.__getitem__, reverse=True))}
        for q, docs in pipeline.items()
    }
    Run.from_dict(weaker, name="weaker").to_trec(tmp_path / "weaker.trec")
    data = {
        "name": "utility from a folder",
        "dataset": {"builtin": "pydocs"},
        "retrieval": {"metrics": ["ndcg@5"]},
        "runs": [
            {"source": "dataset", "name": "pipeline"},
            {"source": "file", "path": "weaker.trec", "name": "weaker"},
        ],
        "compare": {"test": "t"},
        "output": {"dir": "out", "plots": False, "formats": ["json"]},
        "progress": False,
        "utility_qrels": {"k": 5, "folder": str(folder.relative_to(tmp_path))},
    }
    path = tmp_path / "night.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_a_night_on_a_built_utility_folder_reports_its_provenance(tmp_path: Path) -> None:
    questions = {
        str(r["id"]): UtilityQuestion(str(r["id"]), str(r["question"]), r.get("reference")) for r in load_qa()
    }
    passages = read_passages(passages_path())
    # built from the pipeline's run alone: the weaker run's top 5 holds passages it never pooled
    built = build_utility(questions, passages, [load_pipeline_run()], ExtractiveGenerator(), k=5)
    folder = built.write(tmp_path / "built")
    manifest = _manifest(folder)
    outcome = run_pipeline(_night(tmp_path, folder), write=False)
    said = [n for n in outcome.notes if n.startswith(f"qrels of {folder / 'utility.qrels'}:")]
    assert (
        len(said) == 1
        and "from utility judgments" in said[0]
        and manifest["provenance"]["created"] in said[0]
    )
    assert said[0] in outcome.report.metadata.notes  # rendered in report.md and report.html with the others
    assert any(f"read from {folder} (nothing sent)" in n for n in outcome.notes)
    assert any(n.startswith("! utility qrels: run 'weaker':") and "not pooled" in n for n in outcome.notes)
    assert not any(n.startswith("! utility qrels: run 'pipeline':") for n in outcome.notes)
    for result in outcome.report.runs:
        stored = result.metadata.extra["utility_qrels"]
        assert stored["folder"] == str(folder) and stored["counts"]["requests"] == 0
        assert stored["qrels"]["utility"]["created"] == manifest["provenance"]["created"]
        assert stored["qrels"]["by_origin"] == {"utility": manifest["counts"]["relevant"]}
        assert "utility:ndcg@5" in result.aggregate


def test_a_night_on_a_folder_built_for_some_of_its_questions_says_which_are_left_out(tmp_path: Path) -> None:
    """A folder built for 5 of the night's questions: the others have no utility grade at all, so their
    `utility:` scores are not applicable with the reason (never silently left out of the mean), and the
    unpooled-passages warning counts only the questions the folder judged."""
    rows = load_qa()
    questions = {
        str(r["id"]): UtilityQuestion(str(r["id"]), str(r["question"]), r.get("reference")) for r in rows[:5]
    }
    pipeline = load_pipeline_run()
    some = Run.from_dict({q: d for q, d in pipeline.to_dict().items() if q in questions}, name="pipeline")
    folder = build_utility(
        questions, read_passages(passages_path()), [some], ExtractiveGenerator(), k=5
    ).write(tmp_path / "built")
    outcome = run_pipeline(_night(tmp_path, folder), write=False)
    ranked = set(pipeline.to_dict())
    left_out = ranked - set(questions)
    assert left_out
    result = next(r for r in outcome.report.runs if r.name == "pipeline")
    assert set(result.per_query) >= ranked  # every question the run ranks is there, scored or said why not
    reasons = {n.query_id: n.reason for n in result.not_applicable if n.metric == "utility:ndcg@5"}
    assert set(reasons) == left_out and all("no utility judgment" in r for r in reasons.values())
    said = [n for n in outcome.notes if n.startswith("! utility qrels: run 'pipeline':")]
    assert len(said) == 1 and f"{len(left_out)} of its questions" in said[0], said
    weaker = [
        n for n in outcome.notes if n.startswith("! utility qrels: run 'weaker':") and "not pooled" in n
    ]
    assert len(weaker) == 1 and "were not pooled" in weaker[0]


def test_a_night_refuses_a_damaged_folder_naming_the_field(tmp_path: Path) -> None:
    folder, _ = _folder(tmp_path)  # also built for questions the night's dataset does not hold
    data = _manifest(folder)
    data["provenance"]["k"] = "three"
    (folder / "utility.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"provenance\.k"):
        run_pipeline(_night(tmp_path, folder), write=False)
    data["provenance"]["k"] = 3
    (folder / "utility.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="is not in the night's dataset"):
        run_pipeline(_night(tmp_path, folder), write=False)
