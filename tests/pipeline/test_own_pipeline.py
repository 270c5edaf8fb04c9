"""Issue 24: data without ids, the team's pipeline and generator called by the night, latency and cost as
metrics, empty retrievals, and a night whose judge or pipeline fails being loud (exit 3)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from .conftest import ConfigWriter
from .helpers import TOPICS, latest, passages, report_of, run_cli
from .target_server import TargetServer

DOCS = Path(__file__).parents[2] / "docs" / "nightly.md"

TEAM_MODULE = """
import json, pathlib

HERE = pathlib.Path(__file__).parent
PASSAGES = [json.loads(line) for line in open(HERE / "passages.jsonl", encoding="utf-8")]


def _log(kind):
    with open(HERE / "calls.log", "a", encoding="utf-8") as fh:
        fh.write(kind + "\\n")


def _words(text):
    return {w.strip("?.,").lower() for w in text.split() if len(w) > 3}


def answer(sample):
    _log("pipeline")
    if sample.get("tier") == "broken":
        raise RuntimeError("index shard 3 is offline")
    q = _words(sample["question"])
    best = sorted(PASSAGES, key=lambda p: (-len(q & _words(p["text"])), p["id"]))[:2]
    return {
        "answer": best[0]["text"],
        "contexts": [p["text"] for p in best],
        "usage": {"prompt_tokens": 30, "completion_tokens": 5},
        "cost": 0.001,
    }


async def generate(inputs):
    _log("generator")
    contexts = inputs["contexts"]
    return {"answer": contexts[0] if contexts else "I don't know.", "tokens": 12, "cost": 0.0005}
"""


def doc_examples() -> dict[str, str]:
    """The files docs/nightly.md shows under `<!-- example:NAME -->` markers, verbatim."""
    text = DOCS.read_text(encoding="utf-8")
    found = re.findall(r"<!-- example:(\S+) -->\n```\w*\n(.*?)```", text, flags=re.S)
    return dict(found)


def test_the_docs_minimal_own_data_example_runs_verbatim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = doc_examples()
    assert set(files) == {"qa.jsonl", "my_eval.yaml"}
    for name, content in files.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    code, out, err = run_cli([str(tmp_path / "my_eval.yaml")], capsys)
    assert code == 0, err
    assert "runs[" not in out + err  # no message names a run the user never wrote
    report = report_of(tmp_path / "ragmetrics-out")
    (run,) = report.runs
    assert set(run.metrics) == {"faithfulness", "answer_relevancy", "context_precision", "context_recall"}
    assert list(run.per_query) == ["row-1", "row-2", "row-3", "row-4"]
    # Row 4 retrieved nothing: its context metrics score 0 with the reason, they are not left out.
    assert run.per_query["row-4"]["context_precision"] == 0.0
    assert run.per_query["row-4"]["context_recall"] == 0.0
    assert "no context was retrieved" in (run.details["row-4"]["context_recall"].reason or "")
    assert not run.failures


def test_judge_only_data_with_retrieval_metrics_skips_them_with_one_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = doc_examples()
    (tmp_path / "qa.jsonl").write_text(files["qa.jsonl"], encoding="utf-8")
    config = files["my_eval.yaml"] + "retrieval:\n  metrics: [ndcg@10, recall@5]\n"
    (tmp_path / "c.yaml").write_text(config, encoding="utf-8")
    code, out, err = run_cli([str(tmp_path / "c.yaml")], capsys)
    assert code == 0, err
    assert "runs[" not in out + err
    report = report_of(tmp_path / "ragmetrics-out")
    notes = [n for n in report.metadata.notes if "retrieval metrics not computed" in n]
    assert len(notes) == 1, report.metadata.notes
    assert "context_recall" in report.runs[0].metrics


def test_empty_contexts_lower_the_mean_and_mismatched_ids_are_row_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"question": t[1], "contexts": [t[3]], "answer": t[2], "reference": t[3]} for t in TOPICS[:4]]
    with_empty = [*rows, {"question": "What is x?", "contexts": [], "answer": "x.", "reference": "x is y."}]
    means = {}
    for name, data in (("full", rows), ("empty", with_empty)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
        (folder / "c.yaml").write_text(
            "dataset: {path: qa.jsonl}\njudge: {backend: local, metrics: [context_precision, context_recall]}\n",
            encoding="utf-8",
        )
        code, _, err = run_cli([str(folder / "c.yaml")], capsys)
        assert code == 0, err
        means[name] = report_of(folder / "ragmetrics-out").runs[0].aggregate
    for metric in ("context_precision", "context_recall"):
        assert means["empty"][metric] == pytest.approx(means["full"][metric] * 4 / 5)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "qa.jsonl").write_text(
        json.dumps({"question": "q?", "contexts": ["a", "b"], "context_ids": ["d1"]}) + "\n", encoding="utf-8"
    )
    (bad / "c.yaml").write_text(
        "dataset: {path: qa.jsonl}\njudge: {backend: local, metrics: [context_relevancy]}\n"
    )
    code, _, err = run_cli([str(bad / "c.yaml")], capsys)
    assert code == 2
    assert "row 1, field 'context_ids': has 1 ids but contexts has 2 entries" in err


def _team(qa_dir: Path) -> None:
    (qa_dir / "team_rag.py").write_text(textwrap.dedent(TEAM_MODULE), encoding="utf-8")


def _calls(qa_dir: Path) -> list[str]:
    log = qa_dir / "calls.log"
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def test_a_callable_pipeline_and_a_generator_over_two_retriever_runs(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("OPENAI_API_KEY", "sk-own-pipeline-test")
    _team(qa_dir)
    config = write_config(
        runs=[
            {"source": "pipeline", "name": "team", "target": "team_rag:answer", "concurrency": 4},
            {"source": "retriever", "retriever": "bm25", "params": {"top_k": 10}},
            {"source": "file", "path": "weaker.trec", "name": "weaker"},
        ],
        generator={"target": "team_rag:generate", "top_k": 2},
        judge={
            "backend": "openai",
            "base_url": loopback.url,
            "model": "test-model",
            "metrics": ["context_precision", "faithfulness", "answer_relevancy"],
            "cache_path": "cache/verdicts.sqlite",
        },
    )
    code, out, err = run_cli([str(config)], capsys)
    assert code == 0, err
    calls = _calls(qa_dir)
    lines = [
        json.loads(line)
        for line in (latest(qa_dir / "out") / "pipeline_outputs.jsonl").read_text().splitlines()
    ]
    assert len(lines) == 48  # 16 pipeline calls, 16 generator calls for each of bm25 and weaker
    # Where bm25 and weaker retrieved the same top 2 for a question, the generator's input is the same: one call.
    shared = sum(line["cached"] for line in lines)
    assert calls.count("pipeline") == 16 and calls.count("generator") == 32 - shared
    assert all(line["role"] == "generator" for line in lines if line["cached"])
    report = report_of(qa_dir / "out")
    assert [r.name for r in report.runs] == ["team", "bm25", "weaker"]
    for run in report.runs:  # answer metrics for every run, and what answering cost
        assert {"faithfulness", "answer_relevancy", "latency_s", "tokens", "cost"} <= set(run.metrics)
        assert not run.failures
    assert {"faithfulness", "answer_relevancy", "latency_s", "cost", "ndcg@10"} <= set(report.metrics)
    pair = next(
        c
        for c in report.comparisons
        if c.metric == "faithfulness" and {c.baseline, c.candidate} == {"bm25", "weaker"}
    )
    both = [
        q
        for q in report.run("bm25").per_query
        if None
        not in (
            report.run("bm25").per_query[q]["faithfulness"],
            report.run("weaker").per_query[q]["faithfulness"],
        )
    ]
    assert pair.n == len(both) >= 12  # refusals ("I don't know.") are not applicable, the rest paired
    team = report.run("team")
    assert team.aggregate["tokens"] == 35 and team.aggregate["cost"] == pytest.approx(0.001)
    assert report.run("bm25").aggregate["tokens"] == 12
    assert "ndcg@10" in team.metrics  # its contexts matched the passages by text
    assert any("contexts matched to dataset passages by their text" in n for n in report.metadata.notes)
    assert "latency_s ↓" in out and "cost ↓" in out
    judge_calls = loopback.count()

    code, _, err = run_cli([str(config)], capsys)
    assert code == 0, err
    assert len(_calls(qa_dir)) == len(calls)  # the rerun called neither the pipeline nor the generator
    assert loopback.count() == judge_calls  # nor the judge
    lines = (latest(qa_dir / "out") / "pipeline_outputs.jsonl").read_text().splitlines()
    assert all(json.loads(line)["cached"] for line in lines)
    assert report_of(qa_dir / "out").run("team").aggregate == team.aggregate

    code, _, err = run_cli([str(config), "--refresh-pipeline"], capsys)
    assert code == 0, err
    assert len(_calls(qa_dir)) == len(calls) + 48  # --refresh-pipeline: every call made again


def test_a_pipeline_that_raises_is_recorded_per_question_and_makes_the_night_incomplete(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    _team(qa_dir)
    rows = [json.loads(line) for line in (qa_dir / "qa.jsonl").read_text().splitlines()]
    for i, row in enumerate(rows):
        row["tier"] = "broken" if i < 2 else "gold"
    (qa_dir / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = write_config(
        runs=[{"source": "pipeline", "name": "team", "target": "team_rag:answer"}],
        judge={"backend": "local", "metrics": ["faithfulness"]},
    )
    code, _, err = run_cli([str(config)], capsys)
    assert code == 3, err
    assert (
        "run 'team': 2 questions failed (faithfulness, latency_s, tokens, cost, ndcg@10, map, mrr: 2 of 16): pipeline_target_error: team_rag:answer raised RuntimeError: index shard 3 is offline"
        in err
    )
    report = report_of(qa_dir / "out")
    team = report.run("team")
    for metric in ("ndcg@10", "faithfulness", "latency_s"):
        assert team.per_query["q00"][metric] is None
        assert any(
            f.query_id == "q00" and f.metric == metric and f.cause == "pipeline_target_error"
            for f in team.failures
        )
    assert report.metadata.nightly is not None and report.metadata.nightly.incomplete
    # Allowing that share of failures makes the same night complete.
    config = write_config(
        runs=[{"source": "pipeline", "name": "team", "target": "team_rag:answer"}],
        judge={"backend": "local", "metrics": ["faithfulness"]},
        max_failure_rate=0.2,
    )
    code, _, err = run_cli([str(config)], capsys)
    assert code == 0, err


def test_an_unreachable_judge_exits_3_with_the_cause_on_stderr(
    qa_dir: Path,
    write_config: ConfigWriter,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unreachable-judge")
    judge = {
        "backend": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "metrics": ["context_precision"],
        "max_retries": 0,
        "timeout_s": 5,
        "cache_path": "cache/v.sqlite",
        "retry_failed": "always",
    }
    config = write_config(judge=judge)
    code, _, err = run_cli([str(config)], capsys)
    assert code == 3, err
    assert re.search(
        r"run 'pipeline': 16 questions failed \(context_precision: 16 of 16\): \w+: .*127\.0\.0\.1:9", err
    ), err
    assert "connection" in err.lower()
    assert "INCOMPLETE" in err
    # Gated against a good baseline: the gate says incomplete, not "the baseline shares nothing".
    good = write_config(
        "good.yaml",
        judge={"backend": "local", "metrics": ["context_precision"]},
        output={"dir": "base", "plots": False},
    )
    assert run_cli([str(good)], capsys)[0] == 0
    code, out, err = run_cli(
        [str(config), "--baseline", str(latest(qa_dir / "base") / "report.json")], capsys
    )
    assert code == 3, err
    assert "regression gate: INCOMPLETE" in out and "shares no scored" not in out + err


def test_an_http_pipeline_target_through_its_faults(
    qa_dir: Path,
    write_config: ConfigWriter,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = "Bearer team-secret-token-8731"
    monkeypatch.setenv("TEAM_RAG_TOKEN", token)
    server = TargetServer(passages()).start()
    elsewhere = TargetServer(passages()).start()
    try:
        # With one call in flight and one retry, each question meets the faults queued for it, in order.
        server.fail("/answer", 503, times=1)  # q00: transient, retried, then answered
        server.ok("/answer")
        server.redirect("/answer", elsewhere.url("/steal"))  # refused: the samples never go there
        server.endless("/answer", times=2)  # a body that never ends, twice: the deadline ends each attempt
        server.huge("/answer", 20)  # 20 MiB: over the cap
        server.garbage("/answer")  # not JSON
        server.fail("/answer", 400)  # a client error: not retried; its body echoes the token
        target = {
            "url": server.url("/answer"),
            "headers_env": {"Authorization": "TEAM_RAG_TOKEN"},
            "timeout_s": 2,
        }
        config = write_config(
            runs=[{"source": "pipeline", "name": "svc", "target": target, "concurrency": 1, "retries": 1}],
            judge={"backend": "local", "metrics": ["context_recall"]},
            max_failure_rate=0.5,
        )
        code, _, err = run_cli([str(config)], capsys)
        assert code == 0, err
        assert elsewhere.requests == []
        assert all(r["headers"].get("Authorization") == token for r in server.requests)
        assert {r["body"]["id"] for r in server.requests} == {f"q{i:02d}" for i in range(16)}
        assert all("reference" not in r["body"] and "answer" not in r["body"] for r in server.requests)
        report = report_of(qa_dir / "out")
        svc = report.run("svc")
        causes = sorted({f.cause for f in svc.failures if f.metric == "latency_s"})
        assert causes == [
            "pipeline_http_400",
            "pipeline_invalid_output",
            "pipeline_redirect_refused",
            "pipeline_response_too_large",
            "pipeline_timeout",
        ]
        assert len([f for f in svc.failures if f.metric == "latency_s"]) == 5
        assert svc.aggregate["cost"] == pytest.approx(0.002) and svc.aggregate["tokens"] == 50
        folder = latest(qa_dir / "out")
        for artifact in folder.iterdir():
            assert "team-secret-token-8731" not in artifact.read_text(encoding="utf-8", errors="replace")
    finally:
        server.stop()
        elsewhere.stop()


def test_bad_pipeline_configs_fail_before_any_call(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [
        ({"target": "no_such_module_xyz:answer"}, "cannot import module 'no_such_module_xyz'"),
        ({"target": "json:no_such_function"}, "module 'json' has no attribute 'no_such_function'"),
        ({"target": "not a callable"}, "expected 'package.module:function'"),
        ({"target": {"url": "ftp://x/answer"}}, "expected an http:// or https:// URL"),
        ({"target": {"url": "http://user:pw@127.0.0.1:1/a"}}, "credentials in the URL are refused"),
        ({"target": {"url": "http://127.0.0.1:1/a", "headers_env": {"Authorization": "UNSET_VAR_FOR_TEST"}}},
         "needs $UNSET_VAR_FOR_TEST, which is not set"),
    ]  # fmt: skip
    for spec, message in cases:
        config = write_config(
            runs=[{"source": "pipeline", "name": "p", **spec}],
            judge={"backend": "local", "metrics": ["faithfulness"]},
        )
        code, _, err = run_cli([str(config)], capsys)
        assert code == 2, (spec, err)
        assert message in err, (spec, err)


def test_a_token_the_target_echoes_is_stored_nowhere(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_RAG_TOKEN", "Bearer echo-secret-5521")
    server = TargetServer(passages()).start()
    try:
        target = {"url": server.url("/echo"), "headers_env": {"Authorization": "TEAM_RAG_TOKEN"}}
        config = write_config(
            runs=[{"source": "pipeline", "name": "svc", "target": target}],
            judge={"backend": "local", "metrics": ["faithfulness"]},
        )
        code, _, err = run_cli([str(config)], capsys)
        assert code == 0, err
        out = qa_dir / "out"
        stored = [p for p in out.rglob("*") if p.is_file()]
        assert any(p.name == "pipeline_cache.sqlite" for p in stored)
        for path in stored:
            assert b"echo-secret-5521" not in path.read_bytes(), path
        assert "[redacted]" in (latest(out) / "report.json").read_text(encoding="utf-8")
    finally:
        server.stop()
