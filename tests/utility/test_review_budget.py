"""Review fix: an HTTP generator's requests at the server never pass the build's request budget (the caller's
own retries were requests the budget did not see)."""

from __future__ import annotations

import json
from pathlib import Path

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
