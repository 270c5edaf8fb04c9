"""evaluate_rag under injected faults: every unit scored or failed with a cause, the cache clean and reused."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import sqlite3
from pathlib import Path

import pytest

from ragmetrics.errors import ConfigError, InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.embedding_store import decode_vector
from ragmetrics.judge.evaluate import aevaluate_rag, evaluate_rag
from ragmetrics.judge.prompts import default_library
from ragmetrics.schema import RunResult

from .conftest import FAKE_KEY, JudgeFactory, sample
from .loopback import LoopbackServer

METRICS = ["context_precision", "context_recall", "context_relevancy", "answer_relevancy"]
DOOMED = "[doomed]"

# fault -> the cause a sample hit by it on every attempt ends with
PERSISTENT_CAUSE = {
    "rate_limit": "rate_limited",
    "server_error": "server_error",
    "stall": "timeout",
    "malformed": "invalid_output",
    "schema_violation": "invalid_output",
    "wrong_count": "invalid_output",
}


def _samples(n: int) -> list[dict[str, object]]:
    out = [sample(f"s{i}") for i in range(n)]
    out[-1] = sample(f"s{n - 1}", question=f"Which sample is doomed {DOOMED}?")
    return out


def _assert_complete(res: RunResult, n: int, metrics: list[str]) -> None:
    """Every (sample, metric) has a finite value xor a recorded failure; nothing lost, nothing NaN."""
    failed = {(f.query_id, f.metric) for f in res.failures}
    assert len(failed) == len(res.failures)
    assert set(res.per_query) == {f"s{i}" for i in range(n)}
    for qid, scores in res.per_query.items():
        assert set(scores) == set(metrics)
        for metric, value in scores.items():
            if (qid, metric) in failed:
                assert value is None
            else:
                assert value is not None and math.isfinite(value) and 0.0 <= value <= 1.0
                assert metric in res.details[qid]
    for metric in metrics:
        values = [s[metric] for s in res.per_query.values() if s[metric] is not None]
        expected = math.fsum(values) / len(values) if values else None
        assert res.aggregate[metric] == (pytest.approx(expected) if values else None)
    assert res.metadata.judge is not None and res.metadata.judge.failures == len(res.failures)
    RunResult.model_validate_json(res.model_dump_json())  # the schema round-trips (and rejects NaN)


def _assert_cache_valid(path: Path) -> int:
    """Every row of the cache validates against its verdict model; returns the number of verdict rows."""
    library = default_library()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute("SELECT kind, value FROM verdicts").fetchall()
    verdicts = 0
    for kind, value in rows:
        data = json.loads(value)
        if kind == "embedding":
            assert decode_vector(data) is not None
        else:
            library.get(kind).model.model_validate(data)
            verdicts += 1
    return verdicts


@pytest.mark.parametrize("fault", sorted(PERSISTENT_CAUSE))
def test_faults_leave_no_sample_lost_and_the_cache_clean(
    make_judge: JudgeFactory, server: LoopbackServer, tmp_path: Path, fault: str
) -> None:
    n = 6
    server.inject(fault, times=None, match=DOOMED)  # the doomed sample fails on every attempt
    server.inject(fault, times=3)  # others meet the fault a few times and recover
    judge = make_judge(max_retries=2, max_repairs=1, timeout_s=0.5 if fault == "stall" else 10.0)
    res = evaluate_rag(_samples(n), METRICS, judge, progress=False)
    _assert_complete(res, n, METRICS)

    doomed = f"s{n - 1}"
    # Answer relevancy's chat input is the answer, which carries no marker.
    failing = ["context_precision", "context_recall", "context_relevancy"]
    assert {(f.query_id, f.metric) for f in res.failures} == {(doomed, m) for m in failing}
    assert {f.cause for f in res.failures} == {PERSISTENT_CAUSE[fault]}
    assert all(f.message for f in res.failures)
    assert _assert_cache_valid(tmp_path / "cache" / "verdicts.sqlite") == n * 4 - len(failing)

    # a second run (faults gone) asks only for what failed; nothing already scored is requested again
    server.clear_faults()
    server.reset_records()
    again = evaluate_rag(_samples(n), METRICS, make_judge(), progress=False)
    assert not again.failures
    assert len(server.records) == len(failing) and all(DOOMED in r.user for r in server.records)
    for qid, scores in res.per_query.items():
        for metric, value in scores.items():
            if value is not None:
                assert again.per_query[qid][metric] == value
                assert again.details[qid][metric].cached

    # and a third run makes no call at all
    server.reset_records()
    third = evaluate_rag(_samples(n), METRICS, make_judge(), progress=False)
    assert server.records == [] and third.per_query == again.per_query
    info = third.metadata.judge
    assert info is not None and info.cache.hits > 0 and info.cache.misses == 0 and info.cache.writes == 0
    assert info.usage.calls == 0


def test_refused_json_schema_under_evaluate(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    server.inject("refuse_json_schema", times=None)
    res = evaluate_rag(_samples(4), METRICS, make_judge(), progress=False)
    _assert_complete(res, 4, METRICS)
    assert not res.failures
    assert server.count(status=400) >= 1


def test_missing_fields_are_recorded_without_a_call(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    samples = [
        sample("a", reference=None),
        sample("b", answer="   "),
        RagSample(id="c", question="Q?", contexts=[]),
    ]
    res = evaluate_rag(
        samples, ["context_precision", "context_recall", "answer_relevancy"], make_judge(), progress=False
    )
    _assert_complete_ids(res)
    causes = {(f.query_id, f.metric): f.cause for f in res.failures}
    assert causes == {
        ("a", "context_precision"): "missing_field",
        ("a", "context_recall"): "missing_field",
        ("b", "answer_relevancy"): "missing_field",
        ("c", "context_precision"): "missing_field",
        ("c", "context_recall"): "missing_field",
        ("c", "answer_relevancy"): "missing_field",
    }
    assert "reference" in next(f.message for f in res.failures if f.query_id == "a")
    # only b's two context metrics and a's answer relevancy reached the server
    assert server.count(path="/v1/chat/completions") == 3
    assert res.aggregate["context_precision"] == res.per_query["b"]["context_precision"]


def _assert_complete_ids(res: RunResult) -> None:
    for scores in res.per_query.values():
        assert all(v is None or math.isfinite(v) for v in scores.values())


def test_bad_samples_and_metrics_are_clear_errors(make_judge: JudgeFactory) -> None:
    judge = make_judge()
    with pytest.raises(InputError, match=r"samples, line 2, field 'question'"):
        evaluate_rag([sample("a"), sample("b", question="  ")], ["context_recall"], judge, progress=False)
    with pytest.raises(InputError, match="duplicate sample id 'a'"):
        evaluate_rag([sample("a"), sample("a")], ["context_recall"], judge, progress=False)
    with pytest.raises(InputError, match="line 1, field 'id'"):
        evaluate_rag([{"id": "", "question": "Q?"}], ["context_recall"], judge, progress=False)
    with pytest.raises(ConfigError, match="groundedness"):
        evaluate_rag([sample("a")], ["groundedness"], judge, progress=False)
    with pytest.raises(ConfigError, match="list of names"):
        evaluate_rag([sample("a")], "context_recall", judge, progress=False)


def test_rows_without_ids_are_numbered_as_the_cli_numbers_them(make_judge: JudgeFactory) -> None:
    rows = [{k: v for k, v in sample(x).items() if k != "id"} for x in ("a", "b")]
    res = evaluate_rag(rows, ["context_recall"], make_judge(), progress=False)
    assert sorted(res.per_query) == ["row-1", "row-2"]
    with pytest.raises(InputError, match="duplicate sample id 'row-2'"):
        evaluate_rag([sample("row-2"), rows[0]], ["context_recall"], make_judge(), progress=False)


def test_an_unknown_metric_says_what_was_meant(make_judge: JudgeFactory) -> None:
    with pytest.raises(ConfigError, match="did you mean 'faithfulness'"):
        evaluate_rag([sample("a")], ["faithfullness"], make_judge(), progress=False)


def test_metadata_says_who_judged(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    res = evaluate_rag([sample("a")], METRICS, make_judge(), name="pipeline-v2", progress=False)
    assert res.name == "pipeline-v2" and res.metadata.kind == "judge" and res.metadata.metrics == METRICS
    info = res.metadata.judge
    assert info is not None
    assert info.backend == "openai" and info.model == "test-model" and info.base_url == server.url
    assert info.embedding_model == "test-embedding" and info.temperature == 0.0 and info.seed == 42
    assert set(info.prompt_versions) >= {"_shared", *METRICS}
    # 4 verdicts and 4 embeddings (the question and 3 generated questions) were asked for and stored
    assert info.cache.writes == 8 and info.cache.misses == 8 and info.cache.hits == 0 and info.cache.enabled
    assert info.usage.calls == 5 and info.usage.embedding_tokens > 0


def test_callable_from_a_running_event_loop(make_judge: JudgeFactory) -> None:
    judge = make_judge()

    async def inside() -> RunResult:
        return evaluate_rag([sample("a")], ["context_recall"], judge, progress=False)

    res = asyncio.run(inside())
    assert res.per_query["a"]["context_recall"] == 0.5


def test_async_entry_point_and_reuse_across_loops(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    judge = make_judge(use_cache=False)

    async def main() -> RunResult:
        try:
            return await aevaluate_rag([sample("a")], ["context_recall"], judge, progress=False)
        finally:
            await judge.aclose()

    first = asyncio.run(main())
    second = evaluate_rag([sample("a")], ["context_recall"], judge, progress=False)
    third = evaluate_rag([sample("a")], ["context_recall"], judge, progress=False)
    assert first.per_query == second.per_query == third.per_query
    assert server.count() == 3


def test_cache_bypass_and_clear(make_judge: JudgeFactory, server: LoopbackServer, tmp_path: Path) -> None:
    evaluate_rag([sample("a")], ["context_recall"], make_judge(), progress=False)
    evaluate_rag([sample("a")], ["context_recall"], make_judge(use_cache=False), progress=False)
    assert server.count() == 2  # bypassed: asked again
    judge = make_judge()
    assert judge.cache.clear() == 1
    evaluate_rag([sample("a")], ["context_recall"], judge, progress=False)
    assert server.count() == 3


def test_no_secret_in_cache_results_or_logs(
    make_judge: JudgeFactory, server: LoopbackServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for fault in ("rate_limit", "server_error", "malformed", "refuse_json_schema"):
        server.inject(fault, times=2)
    server.inject("server_error", times=None, match=DOOMED)
    res = evaluate_rag(_samples(3), METRICS, make_judge(), progress=False)
    assert res.failures and caplog.records  # retries, repairs and failures were logged
    texts = [res.model_dump_json(), caplog.text, repr(res), json.dumps([f.message for f in res.failures])]
    cache_dir = tmp_path / "cache"
    for file in cache_dir.iterdir():
        texts.append(file.read_bytes().decode("latin-1"))
    for text in texts:
        assert FAKE_KEY not in text
        assert "FAKE-KEY" not in text


def test_a_key_echoed_by_the_server_is_redacted(
    make_judge: JudgeFactory, server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.inject("echo_key", times=None, match=DOOMED)
    res = evaluate_rag(_samples(2), ["context_recall"], make_judge(), progress=False)
    (failure,) = res.failures
    assert failure.cause == "auth" and "Incorrect API key provided: [redacted]" in failure.message
    assert server.count(status=401) == 1  # an auth error is not retried
    for text in (res.model_dump_json(), caplog.text):
        assert FAKE_KEY not in text


def test_without_a_judge_the_configured_default_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """No endpoint and no key: make_judge() picks the built-in local judge, made and closed by evaluate_rag."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = evaluate_rag([sample("a")], ["context_recall"], progress=False)
    assert res.metadata.judge is not None and res.metadata.judge.backend == "local"
    value = res.per_query["a"]["context_recall"]
    assert value is not None and 0.0 <= value <= 1.0


def test_per_chunk_failure_keeps_the_other_chunks_verdicts(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("server_error", times=None, match="Chunk B")
    s = sample("a", contexts=["Chunk A [useful].", "Chunk B.", "Chunk C [useful]."])
    res = evaluate_rag(
        [s], ["context_precision"], make_judge(context_precision_mode="per_chunk"), progress=False
    )
    assert [(f.query_id, f.cause) for f in res.failures] == [("a", "server_error")]
    server.clear_faults()
    server.reset_records()
    again = evaluate_rag(
        [s], ["context_precision"], make_judge(context_precision_mode="per_chunk"), progress=False
    )
    assert again.per_query["a"]["context_precision"] == pytest.approx((1 + 2 / 3) / 2)
    assert len(server.records) == 1 and "Chunk B." in server.records[0].user


def test_unit_limit_has_its_own_name_and_the_old_one_warns(make_judge: JudgeFactory) -> None:
    """max_concurrency is HTTP requests in flight (JudgeSettings); evaluate_rag's unit limit is max_units_in_flight."""
    judge = make_judge()
    res = evaluate_rag(
        [sample("a"), sample("b")], ["context_recall"], judge, progress=False, max_units_in_flight=1
    )
    assert not res.failures
    with pytest.warns(DeprecationWarning, match="max_units_in_flight"):
        old = evaluate_rag([sample("a")], ["context_recall"], judge, progress=False, max_concurrency=1)
    assert old.per_query["a"] == res.per_query["a"]
    with pytest.raises(ConfigError, match="max_units_in_flight must be at least 1"):
        evaluate_rag([sample("a")], ["context_recall"], judge, progress=False, max_units_in_flight=0)
