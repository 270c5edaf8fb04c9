"""Metrics of a team's own in a config (contains, matches, python) and the deterministic answer metrics, end
to end through `ragmetrics run`: same registry, same reports, errors per sample with their cause, bad
definitions refused at load with exit 2."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from ragmetrics.judge.registry import judge_metric_names

from .helpers import TOPICS, report_of, run_cli

SCORER = """
def mentions_generator(sample):
    if sample.answer is None:
        return None
    if "explode" in sample.answer:
        raise RuntimeError("scorer exploded on purpose")
    if "huge" in sample.answer:
        return 7.5
    return (1.0 if "generator" in sample.answer else 0.0, "looked for 'generator'")
"""


def _write(folder: Path, config: str) -> Path:
    rows = [
        {"question": q, "answer": a, "reference": r, "contexts": [r], "ticket": f"T-{n:03d}"}
        for n, (_, q, a, r) in enumerate(TOPICS[:4])
    ]
    rows.append(
        {"question": "What is x?", "answer": "explode", "reference": "x", "contexts": ["x"], "ticket": "T-9"}
    )
    rows.append(
        {"question": "What is y?", "answer": "huge", "reference": "y", "contexts": ["y"], "ticket": "T-8"}
    )
    (folder / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "team_metrics.py").write_text(textwrap.dedent(SCORER), encoding="utf-8")
    path = folder / "c.yaml"
    path.write_text(textwrap.dedent(config), encoding="utf-8")
    return path


CONFIG = """
dataset: {path: qa.jsonl}
judge:
  backend: local
  metrics: [exact_match, token_f1, rouge_l, answer_length, says_enter, ticket_format, own_generator]
  custom_metrics:
    - {name: says_enter, type: contains, text: "__ENTER__"}
    - {name: ticket_format, type: matches, field: question, column: ticket}
    - name: own_generator
      type: python
      function: "team_metrics:mentions_generator"
      requires: [answer]
"""


def test_own_metrics_run_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli([str(_write(tmp_path, CONFIG))], capsys)
    assert code in (0, 3), err  # 3: the scorer's failures make the night incomplete, loudly
    (run,) = report_of(tmp_path / "ragmetrics-out").runs
    rows = run.per_query
    assert rows["row-1"]["says_enter"] == 1.0  # "Define __enter__ and __exit__." ignoring case
    assert rows["row-2"]["says_enter"] == 0.0
    assert rows["row-4"]["own_generator"] == 1.0 and rows["row-1"]["own_generator"] == 0.0
    assert run.details["row-4"]["own_generator"].reason == "looked for 'generator'"
    # the ticket column is "T-003" etc., never in a question: matches reads the pattern per sample
    assert rows["row-1"]["ticket_format"] == 0.0
    failures = {(f.query_id, f.metric): f for f in run.failures}
    assert failures[("row-5", "own_generator")].cause == "metric_error"
    assert "RuntimeError: scorer exploded on purpose" in failures[("row-5", "own_generator")].message
    assert failures[("row-6", "own_generator")].cause == "invalid_value"
    assert "outside its range [0, 1]" in failures[("row-6", "own_generator")].message
    assert rows["row-6"]["own_generator"] is None  # never a 7.5 in the mean
    assert rows["row-1"]["exact_match"] == 0.0 and 0 < rows["row-1"]["token_f1"] < 1
    assert rows["row-1"]["answer_length"] == 4.0  # define, enter, and, exit
    # the registry holds the team's metrics only while their run lasts
    assert "says_enter" not in judge_metric_names()


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ("{name: m1, type: contains}", "give exactly one of 'text' or 'column'"),
        ('{name: m1, type: matches, pattern: "a(b"}', "not a regular expression"),
        ("{name: faithfulness, type: contains, text: x}", "the name of a built-in metric"),
        (
            '{name: m1, type: python, function: "team_metrics:nothing_here"}',
            "has no attribute 'nothing_here'",
        ),
        ('{name: m1, type: python, function: "no_such_module:f"}', "cannot import module 'no_such_module'"),
        ("{name: m1, type: shout, text: x}", "custom_metrics[0]"),
    ],
)
def test_bad_definitions_are_exit_2_naming_the_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], definition: str, message: str
) -> None:
    config = f"dataset: {{path: qa.jsonl}}\njudge:\n  backend: local\n  metrics: [m1]\n  custom_metrics: [{definition}]\n"
    if "faithfulness" in definition:
        config = config.replace("metrics: [m1]", "metrics: [faithfulness]")
    code, _, err = run_cli([str(_write(tmp_path, config))], capsys)
    assert code == 2, err
    assert message in err, err


def test_a_misspelt_own_metric_gets_a_suggestion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = CONFIG.replace("own_generator]", "own_generater]")
    code, _, err = run_cli([str(_write(tmp_path, config))], capsys)
    assert code == 2
    assert "unknown metric 'own_generater'; did you mean 'own_generator'?" in err, err


@pytest.mark.timeout(300)  # a hang would be hours: the test fails instead of blocking the suite
def test_a_pattern_from_data_cannot_hang_the_night(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`(a+)+$` against 30,000 a's and a b backtracks for ages in Python's `re`; a column's pattern is matched
    by RE2 (linear time), and one RE2 cannot read is that sample's failure with its reason."""
    rows = [
        {"question": "q1?", "answer": "a" * 30_000 + "b", "contexts": ["c"], "rule": "(a+)+$"},
        {"question": "q2?", "answer": "ticket T-123", "contexts": ["c"], "rule": r"T-\d+"},
        {"question": "q3?", "answer": "xb", "contexts": ["c"], "rule": "(?<=x)b"},
    ]
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = tmp_path / "c.yaml"
    config.write_text(textwrap.dedent("""
        dataset: {path: qa.jsonl}
        max_failure_rate: 0.5
        judge:
          backend: local
          metrics: [rule]
          custom_metrics:
            - {name: rule, type: matches, field: answer, column: rule}
        """), encoding="utf-8")  # fmt: skip
    code, _, err = run_cli([str(config)], capsys)
    assert code == 0, err
    (run,) = report_of(tmp_path / "ragmetrics-out").runs
    assert run.per_query["row-1"]["rule"] == 0.0 and run.per_query["row-2"]["rule"] == 1.0
    (failure,) = run.failures
    assert failure.query_id == "row-3" and "holds no regular expression RE2 reads" in failure.message
    assert "invalid perl operator" in failure.message
