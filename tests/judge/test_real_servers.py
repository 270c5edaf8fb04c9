"""What real local servers do to a judge, reproduced by the loopback server (issue 13's trial with llama.cpp).

Each test names the behaviour: a model that copies the few-shot example, a server that answers repairs with
the same bytes at temperature 0, runaway answers, permanent errors, per-token embeddings, a chat-only server
paired with another embedder, one request computed at a time, and reruns over units that failed.
"""

from __future__ import annotations

import asyncio
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmetrics.judge.backends.llm import LLMJudge
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.openai.client import AUTO_MAX_TOKENS_BASE, AUTO_MAX_TOKENS_PER_ITEM
from ragmetrics.judge.openai.limiter import AdaptiveLimit
from ragmetrics.judge.settings import EmbeddingSettings, JudgeSettings, retry_failed_delay_s

from .conftest import FAST_RETRY, KEY_ENV, JudgeFactory, sample
from .loopback import LoopbackServer, _hash_vector

CHAT = "/v1/chat/completions"
EMBED = "/v1/embeddings"


def _run(judge: LLMJudge, metrics: list[str], samples: list[dict[str, Any]], **kw: Any) -> Any:
    return evaluate_rag(samples, metrics, judge, progress=False, **kw)


# -- copied examples --------------------------------------------------------------------------------------


def test_a_copied_example_is_caught_and_repaired_without_examples(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    # The context has 3 sentences, like the prompt's example, so the copied answer validates by count.
    contexts = ["Alpha is first [rel]. Beta is second. Gamma is third [rel]."]
    server.inject("copy_examples", times=1, prompt="context_relevancy")
    res = _run(make_judge(), ["context_relevancy"], [sample("a", contexts=contexts)])
    assert not res.failures
    assert res.per_query["a"]["context_relevancy"] == pytest.approx(
        2 / 3
    )  # the real verdicts, not 2/3 by luck
    first, repair = server.records
    assert first.examples and not repair.examples and repair.repair
    reasons = [v["reason"] for v in res.details["a"]["context_relevancy"].verdicts]
    assert reasons == ["scripted relevance"] * 3


def test_a_model_that_always_copies_is_a_recorded_failure(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    contexts = ["Alpha is first [rel]. Beta is second. Gamma is third."]
    server.inject("copy_examples", times=None, prompt="context_relevancy")
    # Without examples in the repair request the server cannot copy: make it copy by leaving no repairs.
    res = _run(make_judge(max_repairs=0), ["context_relevancy"], [sample("a", contexts=contexts)])
    (failure,) = res.failures
    assert failure.cause == "invalid_output" and "repeats worked example 1" in failure.message


def test_answer_relevancy_examples_ask_for_as_many_questions_as_the_judge() -> None:
    from ragmetrics.judge.prompts import default_library

    prompt = default_library().get("answer_relevancy")
    assert {ex.values["n_questions"] for ex in prompt.examples} == {
        JudgeSettings().answer_relevancy_questions
    }


def test_an_answer_sharing_words_with_the_input_is_not_called_a_copy() -> None:
    from ragmetrics.judge.prompts import default_library

    prompt = default_library().get("answer_relevancy")
    answer = "Albert Einstein was born in Ulm, Germany, in 1879."
    values = {"answer": answer, "n_questions": 3, "language": "English (en)"}
    example = prompt.examples[0].output
    # Same subject as the example: identical questions are legitimate when the input makes them so...
    assert prompt.copied_example(example, {**values, "answer": answer + " Where and when was Albert "
                                           "Einstein born? In which German city was Einstein born? "
                                           "In what year was Albert Einstein born?"}) is None  # fmt: skip
    # ...but not for another answer.
    assert prompt.copied_example(example, {**values, "answer": "Paris is in France."}) == 1


# -- repairs are not replays ------------------------------------------------------------------------------


def test_repairs_change_the_sampling(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    server.inject("greedy_malformed", times=None)
    res = _run(make_judge(temperature=0.0, seed=7), ["context_recall"], [sample("a")])
    assert not res.failures and res.per_query["a"]["context_recall"] == 0.5
    first, repair = server.records
    assert (first.temperature, first.seed) == (0.0, 7)
    assert repair.repair and repair.temperature is not None and repair.temperature > 0 and repair.seed == 8


# -- answer caps ------------------------------------------------------------------------------------------


def test_max_tokens_is_sized_per_request_or_set(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    contexts = ["One [rel]. Two. Three. Four."]
    _run(make_judge(use_cache=False), ["context_relevancy"], [sample("a", contexts=contexts)])
    _run(make_judge(use_cache=False, max_tokens=200), ["context_relevancy"], [sample("a", contexts=contexts)])
    auto, fixed = server.records
    assert auto.max_tokens == AUTO_MAX_TOKENS_BASE + 4 * AUTO_MAX_TOKENS_PER_ITEM
    assert fixed.max_tokens == 200


def test_a_cut_off_answer_is_repaired_with_a_request_to_be_brief(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("length", times=1)
    res = _run(make_judge(), ["context_recall"], [sample("a")])
    assert not res.failures
    first, repair = server.records
    assert not first.repair and repair.repair
    server.inject("length", times=None)
    res = _run(make_judge(max_repairs=0, use_cache=False), ["context_recall"], [sample("b")])
    (failure,) = res.failures
    assert "cut off at" in failure.message and "finish_reason=length" in failure.message


def test_max_tokens_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        JudgeSettings(max_tokens=0)


# -- the server's words, and errors that asking again cannot fix ---------------------------------------------


def test_a_permanent_server_error_is_not_retried_and_keeps_its_text(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("unsupported_500", times=None, path=EMBED)
    res = _run(make_judge(max_retries=4), ["answer_similarity"], [sample("a")])
    (failure,) = res.failures
    assert failure.cause == "unsupported"
    assert "Llama model must be created with embedding=True" in failure.message
    assert server.count(path=EMBED) == 1  # not retried


def test_a_retried_error_keeps_the_servers_text_in_any_body_shape(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("detail_500", times=None)
    res = _run(make_judge(max_retries=2), ["context_recall"], [sample("a")])
    (failure,) = res.failures
    assert failure.cause == "server_error"
    assert "worker crashed: CUDA out of memory" in failure.message and "3 attempts" in failure.message


# -- embeddings: per-token vectors, and another embedder -----------------------------------------------------


def test_token_level_embeddings_are_refused_with_how_to_start_the_server(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("token_embeddings", times=None, path=EMBED)
    res = _run(make_judge(max_retries=3), ["answer_similarity"], [sample("a")])
    (failure,) = res.failures
    assert failure.cause == "unsupported" and "--pooling mean" in failure.message
    assert server.count(path=EMBED) == 1


def test_token_level_embeddings_are_pooled_when_asked(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("token_embeddings", times=None, path=EMBED)
    judge = make_judge(embeddings=EmbeddingSettings(pooling="mean"))
    s = sample("a", answer="red green blue", reference="blue sky")
    res = _run(judge, ["answer_similarity"], [s])
    assert not res.failures

    def pooled(text: str) -> np.ndarray:
        v = np.mean([_hash_vector(t) for t in text.split()], axis=0)
        return v / np.linalg.norm(v)

    expected = float(pooled("red green blue") @ pooled("blue sky"))
    assert res.per_query["a"]["answer_similarity"] == pytest.approx(expected, abs=1e-5)


def test_the_local_embedder_pairs_with_a_chat_only_server(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    judge = make_judge(embeddings=EmbeddingSettings(backend="local"))
    res = _run(judge, ["answer_relevancy"], [sample("a")])
    assert not res.failures and 0.0 <= res.per_query["a"]["answer_relevancy"] <= 1.0
    assert server.count(path=EMBED) == 0 and server.count(path=CHAT) == 1
    info = res.metadata.judge
    assert info is not None and "MiniLM" in str(info.embedding_model)


def test_a_second_endpoint_serves_the_embeddings(
    make_judge: JudgeFactory, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    second = LoopbackServer().start()
    try:
        monkeypatch.setenv("RAGMETRICS_TEST_EMBED_KEY", "sk-second-endpoint-key-123")
        judge = make_judge(
            embeddings=EmbeddingSettings(
                base_url=second.url, model="embed-2", api_key_env="RAGMETRICS_TEST_EMBED_KEY"
            )
        )
        res = _run(judge, ["answer_relevancy"], [sample("a")])
        assert not res.failures
        assert server.count(path=EMBED) == 0 and second.count(path=EMBED) == 1
        assert second.count(path=CHAT) == 0
    finally:
        second.stop()


# -- failures recorded, and the retry_failed policy ------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "calls_on_rerun"),
    [("always", 3), ("never", 0), ("1h", 0), ("0s", 3)],
)
def test_a_rerun_over_deterministic_failures_makes_the_calls_its_policy_says(
    make_judge: JudgeFactory, server: LoopbackServer, policy: str, calls_on_rerun: int
) -> None:
    server.inject("malformed", times=None, prompt="context_recall")
    samples = [sample("a"), sample("b"), sample("c")]
    first = _run(make_judge(max_repairs=0), ["context_recall"], samples)
    assert len(first.failures) == 3 and server.count(path=CHAT) == 3
    server.reset_records()
    again = _run(make_judge(max_repairs=0, retry_failed=policy), ["context_recall"], samples)
    assert server.count(path=CHAT) == calls_on_rerun
    assert len(again.failures) == 3 and {f.cause for f in again.failures} == {"invalid_output"}
    info = again.metadata.judge
    assert info is not None
    if calls_on_rerun:
        assert info.cache.failure_retries == 3 and info.cache.failure_hits == 0
    else:
        assert info.cache.failure_hits == 3
        assert all("recorded failure from" in f.message for f in again.failures)


def test_a_success_clears_the_recorded_failure(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    server.inject("malformed", times=1, prompt="context_recall")
    _run(make_judge(max_repairs=0), ["context_recall"], [sample("a")])
    res = _run(make_judge(max_repairs=0), ["context_recall"], [sample("a")])  # always: tried again, works
    assert not res.failures
    server.reset_records()
    res = _run(make_judge(max_repairs=0, retry_failed="never"), ["context_recall"], [sample("a")])
    assert not res.failures and server.count(path=CHAT) == 0  # a cached verdict, no recorded failure


def test_transient_failures_are_not_recorded(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    server.inject("rate_limit", times=None)
    res = _run(make_judge(max_retries=0), ["context_recall"], [sample("a")])
    assert res.failures[0].cause == "rate_limited"
    server.clear_faults()
    res = _run(make_judge(retry_failed="never"), ["context_recall"], [sample("a")])
    assert not res.failures


def test_retry_failed_accepts_policies_and_delays() -> None:
    assert retry_failed_delay_s("always") == 0 and math.isinf(retry_failed_delay_s("never"))
    assert retry_failed_delay_s("30m") == 1800 and retry_failed_delay_s("1.5h") == 5400
    with pytest.raises(ValueError, match="retry_failed"):
        JudgeSettings(retry_failed="sometimes")


# -- the response mode, remembered and reported truthfully ---------------------------------------------------


def test_the_negotiated_mode_is_remembered_per_endpoint_and_reported(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("refuse_json_schema", times=None)
    first = _run(make_judge(), ["context_recall"], [sample("a")], max_units_in_flight=1)
    assert first.metadata.judge is not None
    assert first.metadata.judge.settings["response_mode"] == "json_object_schema"
    # A cached rerun makes no request, and still says which mode produced its verdicts.
    server.reset_records()
    cached = _run(make_judge(), ["context_recall"], [sample("a")])
    assert server.count() == 0 and cached.metadata.judge is not None
    assert cached.metadata.judge.settings["response_mode"] == "json_object_schema"
    assert "remembered" in cached.metadata.judge.settings["response_mode_source"]
    # A new judge over new samples does not probe json_schema again.
    _run(make_judge(), ["context_recall"], [sample("b"), sample("c")])
    assert [r.mode for r in server.records] == ["json_object_schema", "json_object_schema"]


def test_without_any_request_no_mode_is_claimed(make_judge: JudgeFactory) -> None:
    judge = make_judge()
    info = judge.info()
    assert info.settings["response_mode"] is None
    assert "not negotiated" in info.settings["response_mode_source"]


# -- one request at a time: back off instead of timing out ------------------------------------------------


def test_a_single_slot_server_is_not_flooded_into_timeouts(tmp_path: Path, fake_key: str) -> None:
    # The server computes one request at a time (0.3 s each) and queues the rest; the client allows 8 in
    # flight and times out after 1 s, so a fixed limit would time out every request queued past the third.
    server = LoopbackServer(latency_s=0.3, slots=1).start()
    try:
        settings = JudgeSettings(
            backend="openai",
            model="test-model",
            base_url=server.url,
            api_key_env=KEY_ENV,
            cache_path=tmp_path / "c.sqlite",
            timeout_s=1.0,
            max_concurrency=8,
            max_retries=6,
        )
        judge = LLMJudge(settings, retry=FAST_RETRY)
        res = _run(judge, ["context_recall"], [sample(f"s{i}") for i in range(12)])
        assert not res.failures
        concurrency = res.metadata.judge.settings["concurrency"] if res.metadata.judge else {}
        assert concurrency["lowest"] <= 2  # backed off to what the server can take
        judge.cache.close()
    finally:
        server.wait_idle(timeout_s=30)
        server.stop()


def test_the_limit_halves_on_overload_and_grows_back_one_at_a_time() -> None:
    async def scenario() -> list[int]:
        limit = AdaptiveLimit(8)
        seen = [limit.limit]
        for _ in range(3):  # a burst of timeouts from requests sent together: one halving
            limit.record("overload")
        seen.append(limit.limit)
        for _ in range(4):  # a window of 4 successes: +1
            limit.record("ok", 0.1)
        seen.append(limit.limit)
        for _ in range(3):  # overloads within one window (of the limit's size): one halving
            limit.record("overload")
        seen.append(limit.limit)
        for _ in range(2):  # the next window overloads too: halved again
            limit.record("overload")
        seen.append(limit.limit)
        return seen

    assert asyncio.run(scenario()) == [8, 4, 5, 2, 1]


def test_the_limit_backs_off_when_latency_climbs() -> None:
    limit = AdaptiveLimit(8)
    for _ in range(8):
        limit.record("ok", 0.1)
    assert limit.limit == 8
    for _ in range(8):  # requests now wait in the server's queue: 8x slower
        limit.record("ok", 0.8)
    assert limit.limit < 8


def test_a_fixed_limit_stays_fixed() -> None:
    limit = AdaptiveLimit(4, adaptive=False)
    for _ in range(10):
        limit.record("overload")
    assert limit.limit == 4


def test_failures_never_store_a_secret(
    make_judge: JudgeFactory, server: LoopbackServer, fake_key: str
) -> None:
    server.inject("bad_request", times=None, prompt="context_recall")
    judge = make_judge()
    res = _run(judge, ["context_recall"], [sample("a")])
    assert res.failures[0].cause == "bad_request"
    assert judge.settings.cache_path is not None
    cache_file = Path(os.fspath(judge.settings.cache_path))
    recorded = VerdictCache(cache_file)
    key = judge._key(judge.prompts.get("context_recall"), {})  # any key: only the table's contents matter
    assert recorded.failure(key) is None
    recorded.close()
    data = b"".join(p.read_bytes() for p in cache_file.parent.iterdir())
    assert b"maximum context length" in data and fake_key.encode() not in data


def test_slots_are_first_come_first_served() -> None:
    # A task that releases a slot and asks again (a repair) queues behind the tasks already waiting.
    async def scenario() -> list[str]:
        limit = AdaptiveLimit(1)
        order: list[str] = []

        async def task(name: str, rounds: int) -> None:
            for _ in range(rounds):
                async with limit.slot():
                    order.append(name)
                    await asyncio.sleep(0.01)

        await asyncio.gather(task("a", 2), task("b", 1), task("c", 1))
        return order

    assert asyncio.run(scenario()) == ["a", "b", "c", "a"]
