"""Review fix: an HTTP generator's requests at the server never pass the build's request budget (the caller's
own retries were requests the budget did not see)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import DISTINCT_PAIRS, write_inputs
from test_utility_targets import _target_server

from ragmetrics.cli.main import main


def test_an_http_generator_sends_no_request_the_budget_did_not_take(tmp_path: Path) -> None:
    server = _target_server().TargetServer([]).start()
    try:
        paths = write_inputs(tmp_path / "in")
        out = tmp_path / "out"
        server.fail("/generate", 500, times=2)
        args = [
            "utility", str(paths["first"]), str(paths["second"]), "--questions", str(paths["questions"]),
            "--passages", str(paths["passages"]), "-o", str(out), "--k", "3", "--concurrency", "1",
            "--generator", "http", "--url", server.url("/generate"), "--retries", "1",
            "--max-requests", str(DISTINCT_PAIRS),
        ]  # fmt: skip
        assert main(args) == 0
        sent = [r for r in server.requests if r["path"] == "/generate"]
        assert len(sent) <= DISTINCT_PAIRS  # before: 19, the caller retried a 500 on its own
        rows = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
        assert all(r["grade"] is not None or r["cause"] in ("budget_reached", "server_error") for r in rows)
        assert sum(r["cause"] is not None for r in rows) >= 1  # what the budget could not pay for is recorded
    finally:
        server.stop()


def test_a_dry_run_with_the_judges_answer_correctness_says_its_calls_are_apart(tmp_path: Path, capsys: Any) -> None:
    paths = write_inputs(tmp_path / "in")
    args = [
        "utility", str(paths["first"]), "--questions", str(paths["questions"]), "--passages",
        str(paths["passages"]), "-o", str(tmp_path / "out"), "--k", "3", "--metric", "answer_correctness",
        "--dry-run",
    ]  # fmt: skip
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "plus the judge's answer_correctness: up to 18 verdicts" in err  # before: the judge's calls went unsaid
    assert not (tmp_path / "out").exists()


def test_a_negative_retries_is_named_as_such(tmp_path: Path, capsys: Any) -> None:
    paths = write_inputs(tmp_path / "in")
    args = [
        "utility", str(paths["first"]), "--questions", str(paths["questions"]), "--passages",
        str(paths["passages"]), "-o", str(tmp_path / "out"), "--retries", "-1",
    ]  # fmt: skip
    assert main(args) == 2
    assert "field 'retries': retries must be >= 0, got -1" in capsys.readouterr().err  # before: field 'concurrency'
