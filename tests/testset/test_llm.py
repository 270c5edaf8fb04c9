"""The LLM generator through the real `openai` client against the loopback server (plumbing, not quality):
every draft one validated, cached request; failures recorded with their cause; reruns free; dry run exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragmetrics.cli import main
from ragmetrics.judge.backends.llm import LLMJudge
from ragmetrics.judge.openai.client import RetryPolicy
from ragmetrics.testset import build_testset

from .conftest import KEY_ENV, corpus_rows, judge_settings, write_jsonl

FAST = RetryPolicy(base_delay_s=0.005, max_delay_s=0.02, max_retry_after_s=0.05)


def llm_judge(server: Any, cache: Path) -> LLMJudge:
    return LLMJudge(judge_settings(server, cache), retry=FAST)


def marked_rows() -> list[dict[str, Any]]:
    """Every chunk answers its question ([g3]) except the chess ones; the bread ones' references are not
    supported by them ([nosup])."""
    rows = []
    for row in corpus_rows():
        mark = "" if row["id"].startswith("chess") else " [g3]"
        if row["id"].startswith("bread"):
            mark += " [nosup]"
        rows.append({**row, "text": row["text"] + mark})
    return rows


def test_llm_drafts_are_checked_cached_and_free_on_a_rerun(loopback: Any, tmp_path: Path) -> None:
    cache = tmp_path / "verdicts.sqlite"
    ts = build_testset(
        marked_rows(), size=20, seed=0, judge=llm_judge(loopback, cache), kinds={"factoid": 1.0}
    )
    asked = loopback.count(prompt="testset_question")
    assert asked == ts.drafts >= 20
    assert ts.generator == "llm:test-model"
    assert all(i.generator == "llm:test-model" for i in ts.items)
    assert all(i.question.startswith("factoid question about") for i in ts.items)
    sources = {sid.split("-")[0] for i in ts.items for sid in i.source_ids}
    assert "chess" not in sources and "bread" not in sources
    counts = ts.filter_counts()
    assert counts["not_answered"] >= 1 and counts["unsupported_reference"] >= 1
    assert loopback.count(prompt="passage_relevance") >= asked
    assert loopback.count(prompt="faithfulness") >= 1

    before = len(loopback.records)
    again = build_testset(
        marked_rows(), size=20, seed=0, judge=llm_judge(loopback, cache), kinds={"factoid": 1.0}
    )
    assert (
        len(loopback.records) == before
    )  # every verdict from the cache: a resumed or repeated build pays nothing
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in ts.items]


def test_a_failing_endpoint_is_recorded_per_draft_with_its_cause(loopback: Any, tmp_path: Path) -> None:
    loopback.inject("server_error", times=None, prompt="testset_question", match="Volcano")
    ts = build_testset(
        marked_rows(),
        size=12,
        seed=0,
        judge=llm_judge(loopback, tmp_path / "v.sqlite"),
        kinds={"factoid": 1.0},
    )
    failed = [f for f in ts.filtered if f.filter == "generation_failed"]
    assert failed and all(f.detail.startswith("server_error") for f in failed)
    assert all(any(s.startswith("volcano") for s in f.source_ids) for f in failed)
    assert ts.items and not any(s.startswith("volcano") for i in ts.items for s in i.source_ids)


def test_invalid_output_is_repaired_before_it_is_used(loopback: Any, tmp_path: Path) -> None:
    loopback.inject("schema_violation", times=1, prompt="testset_question")
    ts = build_testset(
        marked_rows(),
        size=4,
        seed=0,
        judge=llm_judge(loopback, tmp_path / "v.sqlite"),
        kinds={"factoid": 1.0},
        judge_checks=False,
    )
    assert len(ts.items) == 4 and ts.filter_counts()["generation_failed"] == 0
    assert loopback.count(prompt="testset_question") == ts.drafts + 1  # one repair round


def test_cli_with_a_config_uses_the_endpoint_and_dry_run_counts_the_cache(
    loopback: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    corpus = write_jsonl(tmp_path / "corpus.jsonl", marked_rows())
    config = {
        "dataset": {"builtin": "pydocs"},
        "judge": {
            "backend": "openai",
            "model": "test-model",
            "base_url": loopback.url,
            "api_key_env": KEY_ENV,
            "cache_path": str(tmp_path / "verdicts.sqlite"),
            "max_retries": 1,
            "metrics": ["faithfulness"],
        },
        "testset": {"size": 6, "kinds": {"factoid": 1.0}, "judge_checks": False},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["testset", str(corpus), "-o", str(tmp_path / "ts"), "--config", str(path), "--dry-run"]) == 0
    first = capsys.readouterr().out
    assert "0 already in the cache" in first and loopback.count(prompt="testset_question") == 0
    assert main(["testset", str(corpus), "-o", str(tmp_path / "ts"), "--config", str(path)]) == 0
    capsys.readouterr()
    assert main(["testset", str(corpus), "-o", str(tmp_path / "ts"), "--config", str(path), "--dry-run"]) == 0
    again = capsys.readouterr().out
    assert ", 0 to ask" in again
