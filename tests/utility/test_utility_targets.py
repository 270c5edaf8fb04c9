"""The team's own generator as the utility generator: an HTTP endpoint (tests/pipeline/target_server.py) and a
Python callable, through `ragmetrics utility`: one call per distinct pair, none on a rerun, and every failure
(an HTTP 500, a body that is not JSON, a callable that raises or returns no text) recorded per pair with its
cause, never graded."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import DISTINCT_PAIRS, PASSAGES, QUESTIONS, write_inputs

from ragmetrics.cli.main import main
from ragmetrics.judge.deterministic import token_f1_score


def _target_server() -> Any:
    path = Path(__file__).resolve().parent.parent / "pipeline" / "target_server.py"
    spec = importlib.util.spec_from_file_location("ragmetrics_utility_target_server", path)
    assert spec is not None and spec.loader is not None
    if spec.name not in sys.modules:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules[spec.name]


def _judgments(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]


def test_an_http_generator_is_asked_once_per_pair_and_its_faults_are_recorded(tmp_path: Path) -> None:
    server = _target_server().TargetServer([]).start()
    try:
        paths = write_inputs(tmp_path / "in")
        out = tmp_path / "out"
        args = [
            "utility", str(paths["first"]), str(paths["second"]), "--questions", str(paths["questions"]),
            "--passages", str(paths["passages"]), "-o", str(out), "--k", "3",
            "--generator", "http", "--url", server.url("/generate"), "--retries", "0",
        ]  # fmt: skip
        server.fail("/generate", 500, times=1)
        server.garbage("/generate", times=1)
        assert main(args) == 0
        asked = [r for r in server.requests if r["path"] == "/generate"]
        assert len(asked) == DISTINCT_PAIRS
        assert all(
            r["body"].keys() == {"question", "contexts"} and len(r["body"]["contexts"]) == 1 for r in asked
        )
        rows = _judgments(out)
        failed = [r for r in rows if r["cause"] is not None]
        assert sorted(r["cause"] for r in failed) == ["invalid_output", "server_error"]
        assert all(r["grade"] is None and r["score"] is None for r in failed)
        # the endpoint echoes the passage: graded by token F1 of the passage against the reference
        scored = {(r["query_id"], r["doc_id"]): r["grade"] for r in rows if r["cause"] is None}
        assert len(scored) == DISTINCT_PAIRS - 2
        for (q, d), grade in scored.items():
            assert grade == math.floor(token_f1_score(PASSAGES[d], QUESTIONS[q].reference or "") * 3 + 0.5)
        # a rerun asks only the two that failed
        assert main(args) == 0
        assert len([r for r in server.requests if r["path"] == "/generate"]) == DISTINCT_PAIRS + 2
        assert all(r["cause"] is None for r in _judgments(out))
    finally:
        server.stop()


def test_a_callable_generator_that_raises_or_returns_no_text_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = write_inputs(tmp_path / "in")
    (tmp_path / "team_generator.py").write_text(
        "def generate(payload):\n"
        "    passage = payload['contexts'][0]\n"
        "    if 'thing number 1 ' in passage.lower():\n"
        "        raise RuntimeError('the model crashed')\n"
        "    if 'thing number 2 ' in passage.lower():\n"
        "        return {'answer': 42}\n"
        "    if 'answer' in passage:\n"
        "        return {'answer': passage.split('[')[0].split(' is ')[1].rstrip('. ')}\n"
        "    return {'answer': 'UNANSWERABLE'}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    args = [
        "utility", str(paths["first"]), "--questions", str(paths["questions"]), "--passages",
        str(paths["passages"]), "-o", str(out), "--k", "3", "--generator", "callable",
        "--target", "team_generator:generate",
    ]  # fmt: skip
    assert main(args) == 0
    rows = {(r["query_id"], r["doc_id"]): r for r in _judgments(out)}
    assert rows[("q1", "q1-a")]["cause"] == "target_error" and "crashed" in rows[("q1", "q1-a")]["message"]
    assert rows[("q2", "q2-a")]["cause"] == "invalid_output"
    assert rows[("q3", "q3-a")]["grade"] == 3 and rows[("q3", "q3-b")]["grade"] == 0
    manifest = json.loads((out / "utility.json").read_text())
    assert manifest["provenance"]["generator"]["target"] == "team_generator:generate"
    assert (
        len(manifest["provenance"]["generator"]["build"]) == 64
    )  # the callable's build (code, env, settings)


def test_a_generator_that_raises_anything_is_a_recorded_target_error() -> None:
    from conftest import runs

    from ragmetrics.utility import Budget, FunctionGenerator, build_utility

    async def broken(question: str, passage: str) -> str:
        if "answer 2" in passage:
            raise KeyError("no model loaded")
        return "answer 1"

    budget = Budget(max_requests=100)
    gen = FunctionGenerator(call=broken, identity_parts={"target": "broken"})
    result = build_utility(QUESTIONS, PASSAGES, runs(), gen, k=3, budget=budget)
    failed = [j for j in result.judgments if j.cause is not None]
    assert [(j.query_id, j.doc_id, j.cause) for j in failed] == [("q2", "q2-a", "target_error")]
    assert "KeyError" in (failed[0].message or "") and failed[0].grade is None
    again = build_utility(QUESTIONS, PASSAGES, runs(), gen, k=3, budget=budget)  # no cache: asked again
    assert (result.requests, again.requests, budget.requests) == (
        DISTINCT_PAIRS,
        DISTINCT_PAIRS,
        2 * DISTINCT_PAIRS,
    )
