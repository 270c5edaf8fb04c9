"""The judge's hard request cap (JudgeSettings.max_requests, an adaptive night's max_calls): no request past it
reaches the server, whatever is in flight; the verdicts it stops fail with cause budget_reached, are not
recorded in the cache, and are asked for again once a budget allows."""

from __future__ import annotations

from ragmetrics.judge.evaluate import evaluate_rag

from .conftest import JudgeFactory, sample
from .loopback import LoopbackServer


def _chat(server: LoopbackServer) -> int:
    return sum(1 for r in server.records if r.path.endswith("/chat/completions"))


def test_no_request_passes_the_cap_and_the_rest_fail_as_budget_reached(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    samples = [sample(f"s{i}") for i in range(6)]  # context_precision: one request per sample
    res = evaluate_rag(samples, ["context_precision"], make_judge(max_requests=5, max_concurrency=8), progress=False)
    assert _chat(server) == 5
    assert res.failures and {f.cause for f in res.failures} == {"budget_reached"}
    scored = [q for q, v in res.per_query.items() if v["context_precision"] is not None]
    assert len(scored) == 5 and len({f.query_id for f in res.failures}) == 1
    # not recorded: a judge with room asks exactly the missing request (6 in all, 5 cached)
    server.reset_records()
    again = evaluate_rag(samples, ["context_precision"], make_judge(), progress=False)
    assert not again.failures and _chat(server) == 6 - 5
