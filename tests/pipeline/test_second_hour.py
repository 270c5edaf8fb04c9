"""Issue 47, between the steps: corpus -> test set -> night -> score -> traces with nothing silent.

One test per numbered point that failed on the main it was filed against (the end-to-end path is
tests/pipeline/test_second_hour_flow.py, marked slow)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.errors import InputError
from ragmetrics.nightly.config import NightlyConfig
from ragmetrics.nightly.pipeline import run_pipeline
from ragmetrics.schema import Report

PLACEHOLDER = "The documents do not answer this question."


def _qa(tmp: Path) -> Path:
    """Three answerable questions with qrels and one unanswerable one, as `ragmetrics testset` writes them."""
    rows: list[dict[str, Any]] = [
        {"id": "q1", "question": "What does json.loads do?", "answer": "It parses a JSON string.",
         "reference": "json.loads parses a JSON document held in a string.",
         "contexts": ["json.loads parses a JSON document held in a string and returns Python objects."],
         "retrieved_ids": ["d1", "d9"], "relevant_ids": ["d1"], "relevant_grades": [2], "answerable": True},
        {"id": "q2", "question": "What does os.getcwd return?", "answer": "The current working directory.",
         "reference": "os.getcwd returns the current working directory.",
         "contexts": ["os.getcwd returns a string with the current working directory."],
         "retrieved_ids": ["d9", "d2"], "relevant_ids": ["d2"], "relevant_grades": [2], "answerable": True},
        {"id": "q3", "question": "What does len return?", "answer": "The number of items.",
         "reference": "len returns the number of items of a container.",
         "contexts": ["len returns the number of items of a container such as a list."],
         "retrieved_ids": ["d3"], "relevant_ids": ["d3"], "relevant_grades": [2], "answerable": True},
        {"id": "q4", "question": "ndarray and intermediate: how are they related?", "answer": "They are not.",
         "reference": PLACEHOLDER, "contexts": ["len returns the number of items of a container."],
         "retrieved_ids": ["d3"], "relevant_ids": None, "relevant_grades": None, "answerable": False},
    ]  # fmt: skip
    path = tmp / "qa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _night(tmp: Path, **over: Any) -> NightlyConfig:
    data: dict[str, Any] = {
        "dataset": {"path": str(_qa(tmp))},
        "retrieval": {"metrics": ["ndcg@10", "mrr"]},
        "judge": {"backend": "local", "metrics": ["context_recall", "faithfulness"],
                  "cache_path": str(tmp / "v.sqlite")},
        "output": {"dir": str(tmp / "out"), "formats": ["json", "md"], "history": False},
        "progress": False,
        **over,
    }  # fmt: skip
    return NightlyConfig.model_validate(data)


def test_unanswerable_questions_are_not_applicable_not_a_crash(tmp_path: Path) -> None:
    """(1, 5) Retrieval and judge metrics on a set with an unanswerable question: it stopped with "query 'q4'
    has no entry for 'ndcg@10'"; now its retrieval and reference-based scores are not applicable, named."""
    outcome = run_pipeline(_night(tmp_path), write=False, progress=False)
    assert outcome.exit_code == 0, outcome.incomplete
    (run,) = outcome.report.runs
    assert run.per_query["q4"]["ndcg@10"] is None and run.per_query["q4"]["context_recall"] is None
    assert run.per_query["q4"]["faithfulness"] is not None  # reference-free: still judged
    reasons = {(n.query_id, n.metric): n.reason for n in run.not_applicable}
    assert {("q4", "ndcg@10"), ("q4", "mrr"), ("q4", "context_recall")} <= set(reasons)
    assert all("unanswerable question" in reasons[("q4", m)] for m in ("ndcg@10", "context_recall"))
    assert not run.failures
    # the means leave it out: context_recall over the three answerable questions only
    answerable = [run.per_query[q]["context_recall"] for q in ("q1", "q2", "q3")]
    assert run.aggregate["context_recall"] == pytest.approx(sum(answerable) / 3)  # type: ignore[arg-type]
    said = " | ".join(outcome.notes)
    assert "1 unanswerable questions (answerable: false; e.g. q4)" in said
    assert "absent from the qrels were left out" not in " | ".join(outcome.report.metadata.notes)


def test_answerable_is_read_checked_and_kept_from_the_pipeline(tmp_path: Path) -> None:
    from ragmetrics.nightly.dataset import read_qa

    dataset = read_qa(_qa(tmp_path))
    assert dataset.unanswerable == {"q4"} and "answerable" not in dataset.extras.get("q1", {})
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "question": "q?", "answerable": "perhaps"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"row 1, field 'answerable': expected true, false or null"):
        read_qa(bad)
    bad.write_text(json.dumps({"id": "x", "question": "q?", "answerable": False, "relevant_ids": ["d1"]}) + "\n")
    with pytest.raises(InputError, match="is false but relevant_ids names a relevant document"):
        read_qa(bad)


def test_score_says_where_the_grades_came_from_and_leaves_unanswerable_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """(5, 8) `score`: one table, the not-applicable note naming the unanswerable question, the judge named."""
    from ragmetrics.cli import main

    code = main(["score", str(_qa(tmp_path)), "-m", "ndcg@10", "context_recall", "answer_relevancy"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert out.count("┃ run") == 1  # one table for the one system
    assert "1 unanswerable questions (answerable: false; e.g. q4)" in out
    assert "qrels of " in out and "from the dataset (origin not recorded)" in out
    assert "the built-in local judge" in out and "! answer_relevancy" in out  # its measured weakness
    assert main(["score", str(_qa(tmp_path)), "-m", "context_recall", "--format", "json"]) == 0
    (system,) = json.loads(capsys.readouterr().out)
    assert system["per_query"]["q4"]["context_recall"] is None
    assert [n["query_id"] for n in system["not_applicable"]] == ["q4"]


def test_verdict_lines_say_which_run_is_best_and_how_sure() -> None:
    """(8) The report's answer before its tables."""
    from ragmetrics import Qrels, Run, compare
    from ragmetrics.render.verdict import verdict_lines

    qrels = Qrels.from_dict({f"q{i}": {"good": 1} for i in range(30)})
    strong = Run.from_dict({f"q{i}": {"good": 2.0, "x": 1.0} for i in range(30)}, name="strong")
    weak = Run.from_dict({f"q{i}": {"x": 2.0, "good": 1.0} for i in range(30)}, name="weak")
    tied = Run.from_dict({f"q{i}": {"good": 2.0, "x": 1.0} for i in range(30)}, name="tied")
    lines = verdict_lines(compare(qrels, [weak, strong], ["mrr"], seed=1))
    assert lines == [lines[0]] and lines[0].startswith("strong is best on mrr: significantly better than every")
    (level,) = verdict_lines(compare(qrels, [weak, strong, tied], ["mrr"], seed=1))
    assert "is not significantly better than" in level and "treat them as level" in level


def test_a_pin_through_a_symlink_keeps_its_night(tmp_path: Path) -> None:
    """(10) baseline.path pins/release.json -> out/<night>/report.json survives output.keep: 1."""
    out = tmp_path / "out"
    first = run_pipeline(_night(tmp_path, output={"dir": str(out), "formats": ["json"], "keep": 1,
                                                    "history": False}), progress=False)  # fmt: skip
    assert first.folder is not None
    pins = tmp_path / "pins"
    pins.mkdir()
    (pins / "release.json").symlink_to(first.folder / "report.json")
    config = _night(tmp_path, output={"dir": str(out), "formats": ["json"], "keep": 1, "history": False},
                    baseline={"path": str(pins / "release.json")})  # fmt: skip
    for _ in range(2):  # the night after the first pruning reads the pin again
        outcome = run_pipeline(config, progress=False)
        assert outcome.exit_code == 0 and outcome.gate is not None
    assert first.folder.is_dir()


def test_a_dangling_baseline_link_and_a_device_run_file_are_named(tmp_path: Path) -> None:
    """(10) Say what a path is: a link to nothing, /dev/zero."""
    from ragmetrics.nightly.gate import load_baseline

    link = tmp_path / "release.json"
    link.symlink_to(tmp_path / "gone" / "report.json")
    with pytest.raises(InputError, match=r"a symbolic link to .*gone/report.json, which does not exist"):
        load_baseline(link)
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero on this system")
    zero = tmp_path / "zero.run"
    zero.symlink_to("/dev/zero")
    config = _night(tmp_path, runs=[{"source": "file", "path": str(zero)}], judge=None)
    with pytest.raises(InputError, match=r"run file: not a regular file \(a device\)"):
        run_pipeline(config, write=False, progress=False)


def test_the_sdk_console_exporter_is_pointed_to_the_file_exporter(tmp_path: Path) -> None:
    """(8) A file ConsoleSpanExporter wrote is named as such, with the exporter to use instead."""
    pytest.importorskip("opentelemetry.sdk", reason="needs opentelemetry-sdk (the 'traces' extra)")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    from ragmetrics.traces import read_traces

    path = tmp_path / "console.txt"
    with path.open("w", encoding="utf-8") as out:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
        with provider.get_tracer("t").start_as_current_span("rag") as span:
            span.set_attribute("input.value", "q?")
        provider.shutdown()
    with pytest.raises(InputError, match=r"ConsoleSpanExporter.*OtlpJsonFileExporter"):
        read_traces(path)


@pytest.mark.parametrize(
    ("reader", "name"),
    [("ragmetrics.testset.corpus:open_corpus", "corpus.jsonl"), ("ragmetrics.nightly.dataset:read_qa", "qa.jsonl")],
)
def test_json_errors_end_with_their_column(tmp_path: Path, reader: str, name: str) -> None:
    """(8) "Invalid control character at" said with where."""
    import importlib

    module, func = reader.split(":")
    path = tmp_path / name
    path.write_text('{"id": "a", "text": "ok", "question": "ok"}\n{"id": "b", "text": "bad\tcontrol"}\n')
    with pytest.raises(InputError) as caught:
        result = getattr(importlib.import_module(module), func)(path)
        list(result)
    message = str(caught.value)
    assert "line 2" in message and message.rstrip().endswith("column 25"), message


def test_readme_and_docs_give_commands_that_work_after_the_two_setup_commands() -> None:
    """(9) ragmetrics lives in .venv after `make quickstart`: the README says how to reach it; no pip name
    that cannot resolve (ragmetrics is not on PyPI; extras install from a clone or the git URL)."""
    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "source .venv/bin/activate" in readme and ".venv/bin/ragmetrics" in readme
    import re

    for path in [root / "README.md", *sorted((root / "docs").glob("*.md")), *sorted((root / "examples").glob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        for found in re.finditer(r"pip install '?ragmetrics\[[^\]]*\]'?(?! @)", text):
            pytest.fail(f"{path.name}: {found.group()} names a package pip cannot find")
    assert "simulated search queries" in readme  # the offline generator described as what it is


def test_report_json_from_an_older_night_reads_without_qrels_provenance() -> None:
    data = Path(__file__).resolve().parents[1] / "data" / "report_v0_1_0.json"
    report = Report.model_validate_json(data.read_text(encoding="utf-8"))
    assert report.metadata.nightly is None or report.metadata.nightly.dataset.qrels is None
