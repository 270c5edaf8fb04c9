"""The judge client against the loopback server: structured output, fallbacks, repairs, retries, accounting."""

from __future__ import annotations

import asyncio
import random
import socket
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from ragmetrics.errors import ConfigError, JudgeError
from ragmetrics.judge.backends.llm import LLMJudge
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.openai.client import RetryPolicy, extract_json, public_url, retry_after_seconds
from ragmetrics.judge.settings import JudgeSettings

from .conftest import KEY_ENV, JudgeFactory, sample
from .loopback import LoopbackServer

CHAT = "/v1/chat/completions"


def _score(judge: LLMJudge, metric: str = "context_precision", **fields: object) -> float:
    outcome = asyncio.run(_ascore(judge, metric, **fields))
    return outcome


async def _ascore(judge: LLMJudge, metric: str, **fields: object) -> float:
    from ragmetrics.judge.base import RagSample

    try:
        out = await judge.score(metric, RagSample.model_validate(sample("s", **fields)))
        return out.value
    finally:
        await judge.aclose()


def test_requests_json_schema_from_the_verdict_model(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    assert _score(make_judge(use_cache=False)) == 1.0
    (record,) = server.records
    assert record.mode == "json_schema" and record.prompt == "context_precision"


def test_falls_back_to_json_object_with_its_schema_and_remembers(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    """llama-cpp-python's server refuses json_schema but constrains json_object by a schema beside it."""
    server.inject("refuse_json_schema", times=None)
    judge = make_judge(use_cache=False)
    samples = [sample(f"s{i}") for i in range(5)]
    res = evaluate_rag(
        samples, ["context_precision", "context_recall"], judge, progress=False, max_units_in_flight=1
    )
    assert not res.failures
    statuses = [(r.mode, r.status) for r in server.records]
    assert statuses[0] == ("json_schema", 400)
    assert statuses[1:] == [("json_object_schema", 200)] * 10  # remembered: json_schema never tried again
    assert res.metadata.judge is not None
    assert res.metadata.judge.settings["response_mode"] == "json_object_schema"
    sent = server.records[-1].response_format
    assert sent is not None and sent["type"] == "json_object" and sent["schema"]["type"] == "object"
    # the verdict list sized to the statements or chunks judged: llama.cpp's grammar then enforces the count
    sized = [p for p in sent["schema"]["properties"].values() if p.get("type") == "array"]
    assert len(sized) == 1 and sized[0]["minItems"] == sized[0]["maxItems"] >= 1
    first = server.records[0].response_format
    assert first is not None and "minItems" not in str(first)  # never sent to a strict json_schema server


def test_a_server_that_knows_no_schema_in_json_object_gets_plain_json_mode(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("refuse_json_schema", times=None)
    server.inject("refuse_schema_in_json_object", times=None)
    judge = make_judge(use_cache=False)
    res = evaluate_rag([sample("a"), sample("b")], ["context_recall"], judge, progress=False, max_units_in_flight=1)
    assert not res.failures
    assert [(r.mode, r.status) for r in server.records] == [
        ("json_schema", 400), ("json_object_schema", 400), ("json_object", 200), ("json_object", 200)]  # fmt: skip
    assert res.metadata.judge is not None and res.metadata.judge.settings["response_mode"] == "json_object"


def test_falls_back_to_plain_text_with_extraction(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    server.inject("refuse_json_schema", times=None)
    server.inject("refuse_json_object", times=None)
    judge = make_judge(use_cache=False)
    res = evaluate_rag(
        [sample("a"), sample("b")], ["context_recall"], judge, progress=False, max_units_in_flight=1
    )
    assert res.per_query["a"]["context_recall"] == 0.5 and not res.failures
    modes = [r.mode for r in server.records]
    assert modes == ["json_schema", "json_object_schema", "json_object", None, None]
    # without json_schema the prompt itself spells out the schema
    assert judge.client.response_mode == "text"


def test_extract_json_from_prose_and_fences() -> None:
    assert extract_json('Sure!\n```json\n{"a": {"b": 1}}\n```\nDone.') == '{"a": {"b": 1}}'
    assert extract_json("no json here") == "no json here"


@pytest.mark.parametrize("fault", ["malformed", "schema_violation", "wrong_count"])
def test_invalid_output_is_repaired(make_judge: JudgeFactory, server: LoopbackServer, fault: str) -> None:
    server.inject(fault, times=1)
    judge = make_judge(use_cache=False)
    assert _score(judge, contexts=["A [useful].", "B.", "C [useful]."]) == pytest.approx((1 + 2 / 3) / 2)
    first, second = server.records
    assert first.fault == fault and not first.repair
    assert second.repair and second.fault is None
    usage = judge.info().usage
    assert usage.repairs == 1 and usage.calls == 2 and usage.prompt_tokens > 0 and usage.completion_tokens > 0


def test_repairs_are_bounded(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    server.inject("malformed", times=None)
    judge = make_judge(use_cache=False, max_repairs=2)
    with pytest.raises(JudgeError) as err:
        _score(judge)
    assert err.value.cause == "invalid_output"
    assert server.count(path=CHAT) == 3  # the first answer and two repairs


def test_rate_limit_is_retried_honouring_retry_after(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.state.retry_after = "0.01"
    server.inject("rate_limit", times=2)
    judge = make_judge(use_cache=False)
    assert _score(judge) == 1.0
    assert [r.status for r in server.records] == [429, 429, 200]
    assert judge.info().usage.retries == 2


@pytest.mark.parametrize(
    ("fault", "cause"), [("rate_limit", "rate_limited"), ("server_error", "server_error")]
)
def test_retries_are_bounded(
    make_judge: JudgeFactory, server: LoopbackServer, fault: str, cause: str
) -> None:
    judge = make_judge(use_cache=False, max_retries=3)
    evaluate_rag([sample("ok")], ["context_recall"], judge, progress=False)  # json_schema has worked
    server.inject(fault, times=None)
    with pytest.raises(JudgeError) as err:
        _score(judge)
    assert err.value.cause == cause
    assert server.count(path=CHAT) == 1 + 4


def test_a_server_that_crashes_on_json_schema_is_stepped_down(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("crash_json_schema", times=None)
    judge = make_judge(use_cache=False)
    res = evaluate_rag(
        [sample("a"), sample("b")], ["context_recall"], judge, progress=False, max_units_in_flight=1
    )
    assert not res.failures
    # a 500 is first retried as transient; repeated on a mode that never worked, it is a refusal
    assert [(r.mode, r.status) for r in server.records] == [
        ("json_schema", 500),
        ("json_schema", 500),
        ("json_object_schema", 200),
        ("json_object_schema", 200),
    ]


def test_stall_past_timeout_is_retried(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    server.inject("stall", times=1)
    judge = make_judge(use_cache=False, timeout_s=0.5)
    assert _score(judge) == 1.0
    assert judge.info().usage.retries == 1


def test_persistent_stall_is_a_timeout(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    server.inject("stall", times=None)
    with pytest.raises(JudgeError) as err:
        _score(make_judge(use_cache=False, timeout_s=0.5, max_retries=1))
    assert err.value.cause == "timeout"


def test_connection_refused_is_a_connection_failure(make_judge: JudgeFactory) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    judge = make_judge(use_cache=False, base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(JudgeError) as err:
        _score(judge)
    assert err.value.cause == "connection"


def test_embedding_faults_are_retried(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    server.inject("server_error", times=1, path="/v1/embeddings")
    judge = make_judge(use_cache=False)
    assert 0.0 < _score(judge, "answer_relevancy") <= 1.0
    assert [r.status for r in server.records if r.path == "/v1/embeddings"] == [500, 200]


@pytest.mark.parametrize("fault", ["embedding_short", "embedding_zero"])
def test_malformed_embeddings_are_asked_again(
    make_judge: JudgeFactory, server: LoopbackServer, fault: str
) -> None:
    """Like a malformed chat answer: asked again, then the verdict as usual."""
    server.inject(fault, times=2, path="/v1/embeddings")
    judge = make_judge(use_cache=False)
    assert 0.0 < _score(judge, "answer_relevancy") <= 1.0
    assert server.count(path="/v1/embeddings") == 3
    assert judge.info().usage.retries == 2


@pytest.mark.parametrize(
    ("fault", "problem"), [("embedding_short", "vectors, got"), ("embedding_zero", "zero")]
)
def test_persistently_malformed_embeddings_are_a_recorded_failure(
    make_judge: JudgeFactory, server: LoopbackServer, fault: str, problem: str
) -> None:
    server.inject(fault, times=None, path="/v1/embeddings")
    res = evaluate_rag([sample("s")], ["answer_relevancy"], make_judge(max_retries=2), progress=False)
    (failure,) = res.failures
    assert failure.cause == "invalid_output" and problem in failure.message
    assert "gave up after 3 attempts" in failure.message
    assert server.count(path="/v1/embeddings") == 3


def test_retry_after_parsing() -> None:
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({}) is None
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    date = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (retry_after_seconds({"Retry-After": date}) or 0) <= 30


def test_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=8.0, max_retry_after_s=20.0)
    rng = random.Random(0)
    for attempt in range(8):
        ceiling = min(8.0, 2.0**attempt)
        delays = [policy.delay(attempt, None, rng) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1
    assert policy.delay(0, 5.0, rng) == 5.0  # Retry-After wins over backoff
    assert policy.delay(0, 600.0, rng) == 20.0  # but is capped


def test_public_url_drops_credentials() -> None:
    assert (
        public_url("https://user:secret@example.com:8443/v1?api-key=abc#x") == "https://example.com:8443/v1"
    )
    assert public_url(None) is None
    assert public_url("http://user:pw@[::1]:8080/v1") == "http://[::1]:8080/v1"


def test_no_key_and_no_base_url_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match=KEY_ENV):
        LLMJudge(JudgeSettings(backend="openai", api_key_env=KEY_ENV, use_cache=False))


def test_base_url_without_key_uses_a_placeholder(
    monkeypatch: pytest.MonkeyPatch, server: LoopbackServer
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    judge = LLMJudge(
        JudgeSettings(backend="openai", api_key_env=KEY_ENV, base_url=server.url, use_cache=False)
    )
    assert _score(judge) == 1.0


def test_price_table_turns_tokens_into_cost(make_judge: JudgeFactory) -> None:
    judge = make_judge(use_cache=False, price_per_million_tokens={"prompt": 1.0, "completion": 2.0})
    _score(judge)
    usage = judge.info().usage
    assert usage.cost_usd == pytest.approx((usage.prompt_tokens * 1.0 + usage.completion_tokens * 2.0) / 1e6)
    assert make_judge(use_cache=False).info().usage.cost_usd is None


def test_concurrency_is_bounded(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    server.state.latency_s = 0.05
    judge = make_judge(use_cache=False, max_concurrency=3)
    samples = [sample(f"s{i}") for i in range(12)]
    evaluate_rag(samples, ["context_recall"], judge, progress=False)
    assert len(server.records) == 12
    assert 1 < server.state.peak_in_flight <= 3


def test_an_unrelated_400_does_not_degrade_the_client(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("bad_request", times=None, match="[too long]")
    judge = make_judge(use_cache=False)
    samples = [sample("a", question="A question [too long]?"), sample("b"), sample("c")]
    res = evaluate_rag(samples, ["context_recall"], judge, progress=False, max_units_in_flight=1)
    assert [(f.query_id, f.cause) for f in res.failures] == [("a", "bad_request")]
    # the long sample tried every mode once, then the client went on with json_schema
    assert [r.mode for r in server.records] == [
        "json_schema",
        "json_object_schema",
        "json_object",
        None,
        "json_schema",
        "json_schema",
    ]
    assert judge.client.response_mode == "json_schema"


def test_after_json_schema_worked_a_400_is_not_a_refusal(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    judge = make_judge(use_cache=False)
    server.inject("bad_request", times=None, match="[too long]")
    samples = [sample("b"), sample("a", question="A question [too long]?")]
    res = evaluate_rag(samples, ["context_recall"], judge, progress=False, max_units_in_flight=1)
    assert [(f.query_id, f.cause) for f in res.failures] == [("a", "bad_request")]
    assert [r.mode for r in server.records] == ["json_schema", "json_schema"]


def test_embedder_batches_deduplicates_caches_and_normalises(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    import numpy as np

    from ragmetrics.judge.openai.embeddings import OpenAIEmbedder

    judge = make_judge()
    embedder = OpenAIEmbedder(judge.client, batch_size=4, cache=judge.cache)
    texts = [f"text {i}" for i in range(10)] + ["text 0", "text 1"]

    async def run() -> np.ndarray:
        try:
            return await embedder.embed(texts)
        finally:
            await judge.aclose()

    vectors = asyncio.run(run())
    assert vectors.shape == (12, 16) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(vectors[10], vectors[0])
    # 10 distinct texts in 3 batches; batches are sent concurrently, so their arrival order is free
    assert sorted(r.user.count("\n") + 1 for r in server.records) == [2, 4, 4]
    again = asyncio.run(run())
    assert np.array_equal(again, vectors) and len(server.records) == 3  # all from the cache


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        ({"input": 1.0, "output": 2.0}, "unknown price keys"),
        ({"prompt": -1.0}, ">= 0"),
        ({"prompt": float("nan")}, "finite number"),
    ],
)
def test_price_table_rejects_what_it_would_ignore(prices: dict[str, float], message: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=message):
        JudgeSettings(price_per_million_tokens=prices)


@pytest.mark.parametrize("fault", ["truncated_body", "short_body"])
def test_a_cut_off_200_body_is_retried(make_judge: JudgeFactory, server: LoopbackServer, fault: str) -> None:
    """A proxy that drops the rest of a 200 body is transient: retried, then a verdict as usual."""
    server.inject(fault, times=2)
    judge = make_judge(use_cache=False)
    assert _score(judge) == 1.0
    assert server.count(path=CHAT) == 3
    assert judge.info().usage.retries == 2


def test_a_persistently_cut_off_body_is_a_recorded_invalid_response(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("truncated_body", times=None)
    res = evaluate_rag([sample("s")], ["context_recall"], make_judge(max_retries=2), progress=False)
    (failure,) = res.failures
    assert failure.cause == "invalid_response"
    assert "not complete JSON" in failure.message and "gave up after 3 attempts" in failure.message
    assert res.per_query["s"]["context_recall"] is None
    assert server.count(path=CHAT) == 3


def test_secrets_in_base_url_never_reach_results_or_logs(
    make_judge: JudgeFactory, server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A query token (and user info) in base_url reaches the server as a query, and every echo is scrubbed."""
    import logging

    caplog.set_level(logging.DEBUG)
    host = server.url.split("://", 1)[1]
    base_url = f"http://alice:PASSWORD-1234@{host}?api-version=2024-06-01&token=TOKEN%2F5678"
    ok = evaluate_rag([sample("ok")], ["context_recall"], make_judge(base_url=base_url), progress=False)
    assert (
        not ok.failures and ok.per_query["ok"]["context_recall"] is not None
    )  # the query reached the server as a query
    server.inject("echo_url", times=None)
    res = evaluate_rag(
        [sample("s")], ["context_recall"], make_judge(base_url=base_url, use_cache=False), progress=False
    )
    (failure,) = res.failures
    assert failure.cause == "bad_request" and "[redacted]" in failure.message
    info = res.metadata.judge
    assert info is not None and info.base_url == f"http://{host}"
    for text in (res.model_dump_json(), caplog.text, failure.message):
        for secret in ("TOKEN/5678", "TOKEN%2F5678", "PASSWORD-1234", "2024-06-01"):
            assert secret not in text
