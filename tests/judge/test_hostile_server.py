"""Issue 25: a hostile or broken judge server cannot hang the run, fill the memory, receive the samples
elsewhere, crash it, or get a key into the cache: every case ends as a recorded per-sample failure."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.openai.scrub import Scrubber
from ragmetrics.judge.verdicts import MAX_REASON_CHARS, ChunkVerdicts

from .conftest import FAKE_KEY, JudgeFactory, sample
from .loopback import LoopbackServer


@pytest.mark.parametrize(
    ("fault", "cause", "words"),
    [
        ("endless_body", "timeout", "no response within"),
        ("huge_body", "invalid_response", "larger than 8 MiB"),
        ("deep_json", "invalid_response", "nested too deeply"),
    ],
)
def test_a_body_that_never_ends_is_too_big_or_too_deep_fails_the_sample(
    make_judge: JudgeFactory, server: LoopbackServer, fault: str, cause: str, words: str
) -> None:
    server.inject(fault, times=None, prompt="context_precision")
    start = time.monotonic()
    res = evaluate_rag(
        [sample("a")], ["context_precision"], make_judge(timeout_s=1.0, max_retries=0), progress=False
    )
    assert time.monotonic() - start < 20
    (failure,) = res.failures
    assert failure.cause == cause and words in failure.message, failure


def test_a_redirect_is_not_followed_and_the_samples_go_nowhere_else(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    elsewhere = LoopbackServer().start()
    try:
        server.state.redirect_to = elsewhere.url + "/chat/completions"
        server.inject("redirect", times=None, prompt="context_precision")
        res = evaluate_rag([sample("a")], ["context_precision"], make_judge(max_retries=0), progress=False)
        assert res.failures and res.per_query["a"]["context_precision"] is None
        assert elsewhere.records == []
    finally:
        elsewhere.stop()


def test_a_key_echoed_in_a_reason_never_reaches_the_cache_or_the_result(
    make_judge: JudgeFactory, server: LoopbackServer, tmp_path: Path
) -> None:
    server.inject("key_in_reason", times=None, prompt="context_precision")
    res = evaluate_rag([sample("a")], ["context_precision"], make_judge(), progress=False)
    assert not res.failures
    assert FAKE_KEY not in res.model_dump_json()
    assert "[redacted]" in res.model_dump_json()
    for db in (tmp_path / "cache").glob("*.sqlite*"):
        assert FAKE_KEY.encode() not in db.read_bytes()
    with sqlite3.connect(tmp_path / "cache" / "verdicts.sqlite") as con:
        assert con.execute("select count(*) from sqlite_master").fetchone()[0] > 0


def test_reasons_are_capped_with_their_length_said() -> None:
    verdict = ChunkVerdicts.model_validate(
        {"verdicts": [{"chunk": 1, "reason": "x" * 10_000_000, "useful": True}]}, context={"count": 1}
    )
    reason = verdict.verdicts[0].reason
    assert len(reason) < MAX_REASON_CHARS + 60 and "10,000,000 characters" in reason


def test_basic_auth_in_the_url_is_scrubbed_in_every_form() -> None:
    scrub = Scrubber(base_url="http://alice:s3cret-key-value@127.0.0.1:1/v1")
    import base64

    basic = base64.b64encode(b"alice:s3cret-key-value").decode()
    text = f"Authorization: Basic {basic}; url http://alice:s3cret-key-value@host; quoted s3cret%2Dkey"
    cleaned = scrub(text)
    assert basic not in cleaned and "s3cret-key-value" not in cleaned
