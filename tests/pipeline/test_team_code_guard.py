"""Team code runs behind one guard (ragmetrics._team_code): a metric or pipeline that calls sys.exit, returns a
number past float's range or changes its sample is that sample's failure, never the night's exit 0 or another
metric's input. Each night runs in a subprocess, as CI would run it, so a sys.exit that escaped would end it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from .helpers import TOPICS, report_of

TEAM = """
import sys


def scorer(sample):
    if sample.answer == "please exit now":
        sys.exit(0)
    if "huge" in sample.answer:
        return 10**400
    sample.contexts.clear()  # a scorer that changes its input must not change what others see
    return 1.0


def forever(sample):
    while True:
        pass


def answer(sample):
    if sample["question"].startswith("Exit"):
        sys.exit(0)
    return {"answer": "a plain answer", "contexts": ["a plain answer"]}


def answer_odd(sample):
    if sample["question"].startswith("Exit"):
        return {"answer": "broken \\ud800 text", "contexts": ["x"]}  # a lone surrogate
    return {"answer": "a plain answer", "contexts": ["a plain answer"], "cost": 1e308}


async def answer_async(sample):
    if sample["question"].startswith("Exit"):
        sys.exit(0)
    return {"answer": "a plain answer", "contexts": ["a plain answer"]}
"""


def _night(folder: Path, config: str) -> subprocess.CompletedProcess[str]:
    (folder / "team_code.py").write_text(textwrap.dedent(TEAM), encoding="utf-8")
    (folder / "c.yaml").write_text(textwrap.dedent(config), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "ragmetrics", "run", "c.yaml"], cwd=folder, capture_output=True, text=True,
        timeout=300, env={**__import__("os").environ, "PYTHONPATH": str(folder)},
    )  # fmt: skip


def test_a_metric_that_exits_or_overflows_fails_its_sample_and_mutations_stay_its_own(tmp_path: Path) -> None:
    rows = [{"question": q, "answer": a, "reference": r, "contexts": [r]} for _, q, a, r in TOPICS[:3]]
    rows.append({"question": "What is x?", "answer": "please exit now", "reference": "x", "contexts": ["x is x."]})
    rows.append({"question": "What is y?", "answer": "huge", "reference": "y", "contexts": ["y is y."]})
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = _night(tmp_path, """
        dataset: {path: qa.jsonl}
        judge:
          backend: local
          metrics: [own, context_precision]
          custom_metrics:
            - {name: own, type: python, function: "team_code:scorer", requires: [answer]}
        """)  # fmt: skip
    assert done.returncode == 3, done.stderr  # failures make the night incomplete: never a green exit 0
    (run,) = report_of(tmp_path / "ragmetrics-out").runs
    failures = {f.query_id: f for f in run.failures if f.metric == "own"}
    assert failures["row-4"].cause == "metric_error" and "sys.exit(0)" in failures["row-4"].message
    assert failures["row-5"].cause == "invalid_value"
    assert run.per_query["row-1"]["own"] == 1.0, failures.get("row-1")
    assert run.per_query["row-1"]["context_precision"] is not None  # the scorer's clear() did not reach it


def test_a_pipeline_that_exits_fails_its_questions_not_the_night(tmp_path: Path) -> None:
    rows = [{"question": q, "reference": r} for _, q, _, r in TOPICS[:3]]
    rows.append({"question": "Exit now?", "reference": "no"})
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for target in ("team_code:answer", "team_code:answer_async"):
        done = _night(tmp_path, f"""
            dataset: {{path: qa.jsonl}}
            runs: [{{source: pipeline, name: team, target: "{target}"}}]
            judge: {{backend: local, metrics: [answer_similarity]}}
            """)  # fmt: skip
        assert done.returncode == 3, (target, done.stderr)
        assert "called sys.exit(0)" in done.stderr
        (run,) = report_of(tmp_path / "ragmetrics-out").runs
        assert run.per_query["row-1"]["answer_similarity"] is not None


def test_a_surrogate_or_an_overflowing_cost_is_that_questions_failure(tmp_path: Path) -> None:
    rows = [{"question": q, "reference": r} for _, q, _, r in TOPICS[:3]]
    rows.append({"question": "Exit now?", "reference": "no"})
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = _night(tmp_path, """
        dataset: {path: qa.jsonl}
        runs: [{source: pipeline, name: team, target: "team_code:answer_odd"}]
        judge: {backend: local, metrics: [answer_similarity]}
        """)  # fmt: skip
    assert done.returncode == 3, done.stderr  # every question failed: incomplete, with the causes, no crash
    assert "lone surrogate (U+D800)" in done.stderr and "larger than 1e+15" in done.stderr
    (run,) = report_of(tmp_path / "ragmetrics-out").runs
    assert all(f.cause == "pipeline_invalid_output" for f in run.failures)


def test_a_price_past_the_bound_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "qa.jsonl").write_text(json.dumps({"question": "q?", "answer": "a", "contexts": ["c"]}) + "\n")
    done = _night(tmp_path, """
        dataset: {path: qa.jsonl}
        judge: {backend: local, metrics: [faithfulness], price_per_million_tokens: {prompt: 1.0e+308}}
        """)  # fmt: skip
    assert done.returncode == 2 and "larger than 1e+15" in done.stderr, done.stderr


def test_a_metric_that_never_returns_fails_its_samples_and_the_night_ends(tmp_path: Path) -> None:
    rows = [{"question": q, "answer": a, "reference": r, "contexts": [r]} for _, q, a, r in TOPICS[:2]]
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = _night(tmp_path, """
        dataset: {path: qa.jsonl}
        judge:
          backend: local
          metrics: [stuck]
          custom_metrics:
            - {name: stuck, type: python, function: "team_code:forever", requires: [answer], timeout_s: 0.5}
        """)  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "did not return within 0.5 s" in done.stderr
    (run,) = report_of(tmp_path / "ragmetrics-out").runs
    assert {f.cause for f in run.failures} == {"timeout"}
