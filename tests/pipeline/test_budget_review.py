"""Review of the shared request budget (`judge.openai.budget`): cases the first tests left out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main

from .test_panel_night import KEY_ENV, METRIC, _config, _data, _report

FAST = {"poll_s": 0.05, "poll_max_s": 0.2, "gather_s": 0.2}


def test_a_batch_panels_members_share_the_cap_while_their_batches_gather_side_by_side(
    tmp_path: Path, loopback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A panel's members judge each unit side by side, so in a batch night their queues gather at once: the
    cap shared by the members must count every member's gathered requests, not each queue its own."""
    monkeypatch.setenv(KEY_ENV, "sk-panel-night")
    _data(tmp_path)
    for model in ("judge-a", "judge-b", "judge-c"):
        loopback.persona(model, 0.9)
    path = _config(tmp_path, loopback, "capped", combine="mean")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["judge"]["max_requests"] = 30  # three members, 60 units: 180 requests uncapped
    data["judge"]["batch"] = FAST
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert main(["run", str(path), "--no-progress"]) in (0, 1, 3)
    assert len(loopback.state.batch_lines) == 30  # uncapped per queue: each member gathered its own 30
    run = next(r for r in _report(tmp_path, "capped")["runs"] if r["name"] == "run")
    causes = {f["cause"] for f in run["failures"] if f["metric"] == METRIC}
    assert causes == {"budget_reached"}


def test_a_held_batch_request_counts_against_every_sharer_until_answered_and_is_settled_once() -> None:
    from ragmetrics.errors import JudgeError
    from ragmetrics.judge.openai.budget import RequestBudget

    budget = RequestBudget(3)
    budget.take("direct")  # a member's direct request
    budget.hold("batch a")  # two batch lines gathered by two queues
    budget.hold("batch b")
    with pytest.raises(JudgeError) as caught:  # held lines are promised: no one may take them
        budget.take("direct")
    assert caught.value.cause == "budget_reached" and budget.left() == 0
    budget.settle(answered=True)  # line a answered: spent
    budget.settle(answered=False)  # line b's batch expired: given back
    assert (budget.spent, budget.held, budget.left()) == (2, 0, 1)
    with pytest.raises(RuntimeError):
        budget.settle(answered=True)  # never released twice


def test_a_batch_panels_ledger_records_every_members_batches(
    tmp_path: Path, loopback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The members' queues keep one ledger file beside the shared cache: each save must keep the others'
    batches, or a run killed while they are in progress finds only the last saver's and submits the rest
    again (paid twice)."""
    import json

    monkeypatch.setenv(KEY_ENV, "sk-panel-night")
    _data(tmp_path)
    for model in ("judge-a", "judge-b", "judge-c"):
        loopback.persona(model, 0.9)
    path = _config(tmp_path, loopback, "ledger", combine="mean")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["judge"]["batch"] = FAST
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert main(["run", str(path), "--no-progress"]) == 0
    created = [r for r in loopback.records if r.path == "/v1/batches" and r.status == 200]
    ledger = json.loads((tmp_path / "cache" / "v.batches.json").read_text(encoding="utf-8"))["batches"]
    assert len(created) == 3 and len(ledger) == 3  # one batch per member
    assert {e["batch_id"] for e in ledger} == set(loopback.state.batches)
