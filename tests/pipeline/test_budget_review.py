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


def test_a_judges_own_cap_counts_the_batch_requests_in_flight(tmp_path: Path, loopback: Any) -> None:
    """One judge's queue (no shared budget): a batch is flushed and runs while more requests gather for the
    next. Its requests are in flight, not answered: the cap must count them, or each batch may fill it."""
    import asyncio

    import openai

    from ragmetrics.errors import JudgeError
    from ragmetrics.judge.openai.batch import BatchLedger, BatchQueue
    from ragmetrics.judge.openai.usage import CallUsage

    def body(i: int) -> dict[str, Any]:
        return {"model": "m", "messages": [{"role": "system", "content": "# context_precision"},
                                           {"role": "user", "content": f"question {i}"}]}  # fmt: skip

    async def scenario() -> list[Any]:
        client = openai.AsyncOpenAI(base_url=loopback.url, api_key="sk-test", max_retries=0)
        queue = BatchQueue(lambda: client, BatchLedger(tmp_path / "ledger.json"), usage=CallUsage(), scrub=str,
                           gather_s=0.01, poll_s=0.02, max_poll_s=0.05, max_requests=30)  # fmt: skip
        loopback.state.batch_hold.set()  # batches stay in progress until released
        first = [asyncio.create_task(queue.ask(CallUsage(), body(i))) for i in range(20)]
        while len(loopback.state.batches) < 1:  # the first batch is created and running
            await asyncio.sleep(0.01)
        second = [asyncio.create_task(queue.ask(CallUsage(), body(i))) for i in range(20, 40)]
        await asyncio.sleep(0)
        while len(loopback.state.batch_lines) < 30 and not all(t.done() for t in second):
            await asyncio.sleep(0.01)
        loopback.state.batch_hold.clear()
        out = await asyncio.gather(*first, *second, return_exceptions=True)
        await queue.aclose()
        await client.close()
        return out

    outcomes = asyncio.run(scenario())
    assert len(loopback.state.batch_lines) == 30  # 20 in the running batch, 10 more; before, 40
    stopped = [o for o in outcomes if isinstance(o, JudgeError)]
    assert len(stopped) == 10 and {e.cause for e in stopped} == {"budget_reached"}, stopped[:3]
