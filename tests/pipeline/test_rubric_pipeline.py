"""Rubric metrics end to end: metric files in a config, judged by the real LLM judge over the loopback OpenAI
server, in reports and comparisons like any metric; an edited rubric re-asks only its own verdicts;
`ragmetrics check-metric` prints agreement; the local judge says not applicable; entry-point metrics; the
worked examples of docs/judge.md are the files in examples/metrics and run."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main

from .conftest import ConfigWriter
from .helpers import qa_rows, report_of, run_cli, write_jsonl

ROOT = Path(__file__).parents[2]
KEY_ENV = "RAGMETRICS_RUBRIC_TEST_KEY"

TONE = {
    "name": "tone",
    "type": "rubric",
    "question": "Is the answer polite?",
    "reads": ["question", "answer", "style"],
    "scale": {
        "type": "ordinal",
        "weighting": "sampled",
        "levels": [
            {"label": "poor", "score": 0.0},
            {"label": "fair", "score": 0.5},
            {"label": "good", "score": 1.0},
        ],
    },
}
POLICY = {
    "name": "policy",
    "type": "rubric",
    "question": "Does the answer follow the policy?",
    "reads": ["answer", "contexts", "style"],
    "checklist": {
        "combine": "all",
        "checks": [{"id": "cites", "check": "It cites a passage."}, {"id": "short", "check": "It is short."}],
    },
}


def _rows() -> list[dict[str, Any]]:
    rows = qa_rows()
    for i, row in enumerate(rows):
        row["style"] = f"[rating:{1 + i % 3}] [met:{'1,2' if i % 2 else '1'}]"
    return rows


def _setup(qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch,
           **judge: Any) -> Path:  # fmt: skip
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-secret")
    write_jsonl(qa_dir / "qa.jsonl", _rows())
    (qa_dir / "metrics").mkdir(exist_ok=True)
    (qa_dir / "metrics" / "tone.yaml").write_text(yaml.safe_dump(TONE), encoding="utf-8")
    (qa_dir / "metrics" / "policy.yaml").write_text(yaml.safe_dump(POLICY), encoding="utf-8")
    settings = {
        "backend": "openai",
        "base_url": loopback.url,
        "api_key_env": KEY_ENV,
        "model": "test-model",
        "cache_path": "cache/verdicts.sqlite",
        "timeout_s": 10,
        "metric_files": ["metrics/tone.yaml", "metrics/policy.yaml"],
        "metrics": ["tone", "policy"],
    }
    settings.update(judge)
    return write_config(
        runs=[{"source": "dataset", "name": "pipeline"}, {"source": "file", "path": "weaker.trec", "name": "weaker"}],
        judge=settings,
        retrieval={"metrics": ["ndcg@10"]},
    )  # fmt: skip


def test_rubric_and_checklist_metrics_run_end_to_end(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    config = _setup(qa_dir, write_config, loopback, monkeypatch)
    code, out, err = run_cli([str(config)], capsys)
    assert code == 0, err
    report = report_of(qa_dir / "out")
    run = next(r for r in report.runs if r.name == "pipeline")
    n = len(_rows())
    expected_tone = {f"q{i:02d}": [0.0, 0.5, 1.0][i % 3] for i in range(n)}
    expected_policy = {f"q{i:02d}": 1.0 if i % 2 else 0.0 for i in range(n)}
    assert {q: v["tone"] for q, v in run.per_query.items()} == expected_tone
    assert {q: v["policy"] for q, v in run.per_query.items()} == expected_policy
    assert run.aggregate["tone"] == pytest.approx(sum(expected_tone.values()) / n)
    detail = run.details["q01"]["policy"]
    assert [(v["check"], v["verdict"]) for v in detail.verdicts] == [("cites", True), ("short", True)]
    assert run.metadata.judge is not None and "rubric:tone" in run.metadata.judge.prompt_versions
    # the weaker run has no answers of its own: the rubric reads the answer, so it is not judged there
    assert "tone" in out
    calls = loopback.count(prompt="rubric:tone")
    assert calls == n

    # Edit one rubric: only its verdicts are asked again; the other rubric's come from the cache.
    loopback.reset_records()
    edited = {**TONE, "question": "Is the answer polite and brief?"}
    (qa_dir / "metrics" / "tone.yaml").write_text(yaml.safe_dump(edited), encoding="utf-8")
    code, _, err = run_cli([str(config)], capsys)
    assert code == 0, err
    assert loopback.count(prompt="rubric:tone") == n
    assert loopback.count(prompt="rubric:policy") == 0


def test_rubric_under_the_local_judge_is_not_applicable_with_its_reason(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    config = _setup(qa_dir, write_config, loopback, monkeypatch, backend="local", metrics=["tone", "policy"])
    code, _, err = run_cli([str(config)], capsys)
    report = report_of(qa_dir / "out")
    run = next(r for r in report.runs if r.name == "pipeline")
    assert all(v["tone"] is None for v in run.per_query.values())
    reasons = {(n.query_id, n.metric): n.reason for n in run.not_applicable}
    assert "needs an LLM judge" in reasons[("q00", "tone")] and ("q00", "policy") in reasons
    assert loopback.count() == 0
    assert code in (0, 3), err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "metrics/tone.yaml: metric file not found"),
        ("name: tone\ntype: rubric\nquestion: q\n", "exactly one of 'scale' or 'checklist'"),
        ("name: tone\ntype: rubric\nquestion: q\nscale: {type: ordinal, levels: [{label: a, score: 1}, "
         "{label: b, score: 0}]}\n", "scale: level scores must increase"),
        ("name: tone\ntype: rubric\nquestion: q\nscale: {type: binary}\nexamples: [{inputs: {answer: a}, "
         "rating: yes, reason: a reason that is long}]\n", "examples[0]: inputs must give exactly question, answer"),
    ],
)  # fmt: skip
def test_bad_metric_files_exit_2_naming_the_file(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], content: str | None, message: str,
) -> None:  # fmt: skip
    config = _setup(qa_dir, write_config, loopback, monkeypatch, metric_files=["metrics/tone.yaml"],
                    metrics=["tone"])  # fmt: skip
    target = qa_dir / "metrics" / "tone.yaml"
    if content is None:
        target.unlink()
    else:
        target.write_text(content, encoding="utf-8")
    code, _, err = run_cli([str(config)], capsys)
    assert code == 2
    assert "tone.yaml" in err and message.replace("Value error, ", "") in err, err


# -- check-metric ----------------------------------------------------------------------------------------

CHECKED = """
name: tone
type: rubric
question: Is the answer polite?
scale:
  type: ordinal
  levels: [{label: poor, score: 0}, {label: fair, score: 0.5}, {label: good, score: 1}]
examples:
  - inputs: {question: "Where is it?", answer: "Not my job. [rating:1]"}
    rating: poor
    reason: It refuses the customer and blames nobody in particular.
labelled:
  - {inputs: {question: q1, answer: "Sure thing! [rating:3]"}, rating: good}
  - {inputs: {question: q2, answer: "Fine. [rating:2]"}, rating: fair}
  - {inputs: {question: q3, answer: "Whatever. [rating:1]"}, rating: poor}
labelled_file: more.jsonl
"""


def _check(
    tmp_path: Path, loopback: Any, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, str]:
    code = main(["check-metric", str(tmp_path / "tone.yaml"), "--base-url", loopback.url, "--model", "m",
                 "--api-key-env", KEY_ENV, "--cache", str(tmp_path / "cache.sqlite"), *extra])  # fmt: skip
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_check_metric_prints_agreement(
    tmp_path: Path, loopback: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tone.yaml").write_text(CHECKED, encoding="utf-8")
    more = {
        "inputs": {"question": "q4", "answer": "Hello. [rating:2]"},
        "rating": "good",
    }  # the judge says fair
    (tmp_path / "more.jsonl").write_text(json.dumps(more) + "\n", encoding="utf-8")
    code, out, err = _check(tmp_path, loopback, capsys, "--json", str(tmp_path / "check.json"))
    assert code == 0, err
    # 5 items: 3 labelled + 1 from the file + the anchor judged without itself in the prompt; 4 agree
    assert "items: 5 (5 rated, 0 failed)" in out
    assert "exact agreement 0.800" in out and "within one level 1.000" in out
    assert 'more.jsonl:1: person "good", judge "fair"' in out
    assert "are few" in out
    summary = json.loads((tmp_path / "check.json").read_text())
    assert summary["agreement"]["exact"] == pytest.approx(0.8) and summary["rated"] == 5
    anchor_request = next(r for r in loopback.records if "Not my job" in str(r.user))
    assert anchor_request.examples is False  # the anchor was left out of its own prompt
    labelled_request = next(r for r in loopback.records if "Sure thing" in str(r.user))
    assert labelled_request.examples is True
    code, _, err = _check(tmp_path, loopback, capsys, "--min-agreement", "0.9")
    assert code == 1 and "below --min-agreement 0.9" in err


def test_check_metric_refuses_what_it_cannot_check(tmp_path: Path, loopback: Any,
                                                   capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    (tmp_path / "tone.yaml").write_text("name: tone\ntype: contains\ntext: refund\n", encoding="utf-8")
    code, _, err = _check(tmp_path, loopback, capsys)
    assert code == 2 and "a contains metric" in err
    (tmp_path / "tone.yaml").write_text(CHECKED, encoding="utf-8")
    code, _, err = _check(tmp_path, loopback, capsys)  # more.jsonl is missing
    assert code == 2 and "labelled_file" in err and "more.jsonl" in err
    (tmp_path / "more.jsonl").write_text(
        '{"inputs": {"question": "q"}, "rating": "good"}\n', encoding="utf-8"
    )
    code, _, err = _check(tmp_path, loopback, capsys)
    assert code == 2 and "more.jsonl" in err and "line 1" in err and "missing answer" in err
    (tmp_path / "local.yaml").write_text(
        "dataset: {path: qa.jsonl}\njudge: {backend: local, metrics: [exact_match]}\n", encoding="utf-8"
    )
    (tmp_path / "qa.jsonl").write_text('{"question": "q"}\n', encoding="utf-8")
    code = main(["check-metric", str(tmp_path / "tone.yaml"), "--config", str(tmp_path / "local.yaml")])
    assert code == 2 and "needs an LLM judge" in capsys.readouterr().err


# -- docs and entry points -------------------------------------------------------------------------------


def _doc_blocks() -> dict[str, str]:
    """The YAML and Python blocks of docs/judge.md that start with a comment naming an examples/ file."""
    text = (ROOT / "docs" / "judge.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(?:yaml|python)\n# (examples/metrics/\S+)\n(.*?)```", text, re.S)
    return {name: body for name, body in blocks}


def test_docs_worked_examples_are_the_example_files_and_they_run(
    tmp_path: Path, loopback: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = _doc_blocks()
    assert set(blocks) == {"examples/metrics/answer_tone.yaml", "examples/metrics/refund_policy.yaml",
                           "examples/metrics/support_metrics.py"}  # fmt: skip
    for name, body in blocks.items():
        assert body.strip() in (ROOT / name).read_text(encoding="utf-8"), f"docs/judge.md's {name} is stale"
    monkeypatch.setenv(KEY_ENV, "sk-test")
    for name in ("answer_tone", "refund_policy"):
        code = main(["check-metric", str(ROOT / "examples" / "metrics" / f"{name}.yaml"), "--base-url",
                     loopback.url, "--api-key-env", KEY_ENV, "--cache", str(tmp_path / "c.sqlite")])  # fmt: skip
        out = capsys.readouterr().out
        assert code == 0 and "agreement:" in out, out
    # the Python metric, from a config, with the local judge (no server at all)
    rows = [
        {"question": "Where is order AB-123456?", "answer": "Order AB-123456 ships today.", "reference": "x"},
        {"question": "Where is order AB-123456?", "answer": "It ships today.", "reference": "x"},
        {"question": "Do you ship to Norway?", "answer": "Yes.", "reference": "x"},
    ]
    write_jsonl(tmp_path / "qa.jsonl", rows)
    config = tmp_path / "c.yaml"
    config.write_text(
        textwrap.dedent("""
        dataset: {path: qa.jsonl}
        output: {dir: out, plots: false}
        judge:
          backend: local
          metrics: [order_number]
          custom_metrics:
            - name: order_number
              type: python
              function: "support_metrics:mentions_order_number"
              requires: [question, answer]
        pipeline_python_path: []
    """).replace("pipeline_python_path: []\n", ""),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "metrics"))
    code, _, err = run_cli([str(config)], capsys)
    assert code == 0, err
    (run,) = report_of(tmp_path / "out").runs
    assert [run.per_query[q]["order_number"] for q in ("row-1", "row-2", "row-3")] == [1.0, 0.0, None]


ENTRY_MODULE = """
import ragmetrics

@ragmetrics.python_metric(range=(0, 10), requires=["answer"], higher_is_better=None)
def exclamations(sample):
    return float(sample.answer.count("!"))

def unmarked(sample):
    return 1.0
"""


def test_metrics_offered_by_installed_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    (site / "teammetrics").mkdir(parents=True)
    (site / "teammetrics" / "__init__.py").write_text(ENTRY_MODULE, encoding="utf-8")
    dist = site / "teammetrics-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: teammetrics\nVersion: 0.1\n", encoding="utf-8"
    )
    (dist / "entry_points.txt").write_text(
        "[ragmetrics.metrics]\nexclamations = teammetrics:exclamations\nunmarked = teammetrics:unmarked\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(site))
    write_jsonl(tmp_path / "qa.jsonl", [{"question": "q?", "answer": "Yes!! Sure!", "reference": "r"}])
    config = tmp_path / "c.yaml"
    config.write_text("dataset: {path: qa.jsonl}\noutput: {dir: out, plots: false}\n"
                      "judge: {backend: local, metrics: [exclamations]}\n", encoding="utf-8")  # fmt: skip
    code, _, err = run_cli([str(config)], capsys)
    assert code == 0, err
    (run,) = report_of(tmp_path / "out").runs
    assert run.per_query["row-1"]["exclamations"] == 3.0
    config.write_text(config.read_text().replace("exclamations", "unmarked"), encoding="utf-8")
    code, _, err = run_cli([str(config)], capsys)
    assert code == 2 and "python_metric" in err
    config.write_text(config.read_text().replace("unmarked", "exclamation"), encoding="utf-8")
    code, _, err = run_cli([str(config)], capsys)
    assert code == 2 and "did you mean 'exclamations'" in err
