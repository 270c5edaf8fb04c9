"""Time put where it was spent (issue 66, item 4): a retriever run's latency includes its retrieval, the retrievers'
index building is its own line apart from the pipeline's calls (on a cached night too), and a dry run builds a
retriever on a sample of the corpus instead of all of it.

No assertion on how long anything took: each check is structural (a part is inside its whole, a sum equals its
parts, a call happened once per question), so it holds on any machine and load.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.retrievers import search

from .conftest import ConfigWriter
from .helpers import latest, report_of, run_cli, write_jsonl

TEAM = """
import pathlib, time

HERE = pathlib.Path(__file__).parent


def _log(kind):
    with open(HERE / "calls.log", "a", encoding="utf-8") as fh:
        fh.write(kind + "\\n")


def answer(sample):
    _log("pipeline")
    return {"answer": "It depends.", "contexts": ["Notes on nothing in particular."]}


def generate(inputs):
    _log("generator")
    contexts = inputs["contexts"]
    return {"answer": contexts[0] if contexts else "I don't know."}


def slow_scores(question, passages):
    # a reranker that does measurable work per question: what a cross-encoder spends
    _log("rerank")
    time.sleep(0.005)
    return [float(len(p)) for p in passages]
"""


def _config(write_config: ConfigWriter, module: str, *, pipeline: bool = False) -> Path:
    runs: list[dict[str, Any]] = [
        {"source": "retriever", "retriever": "bm25", "name": "bm25"},
        {"source": "retriever", "retriever": "bm25_embedding_rerank", "name": "slow_rerank",
         "params": {"candidates": 3, "reranker": f"{module}:slow_scores"}},
        {"source": "fusion", "name": "hybrid", "runs": ["bm25", "slow_rerank"], "method": "rrf"},
    ]  # fmt: skip
    if pipeline:
        runs.insert(0, {"source": "pipeline", "name": "team", "target": f"{module}:answer"})
    return write_config(
        runs=runs,
        generator={"target": f"{module}:generate", "top_k": 2, "runs": ["bm25", "slow_rerank", "hybrid"]},
        output={"dir": "out", "plots": False, "formats": ["json", "md"]},
    )


def _team(qa_dir: Path, module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (qa_dir / f"{module}.py").write_text(textwrap.dedent(TEAM), encoding="utf-8")
    monkeypatch.syspath_prepend(str(qa_dir))  # the reranker is named "module:function"


def _generator_latency(folder: Path, run: str) -> dict[str, float]:
    lines = [json.loads(line) for line in (folder / "pipeline_outputs.jsonl").read_text(encoding="utf-8").splitlines()]
    return {r["query_id"]: r["latency_s"] for r in lines if r["run"] == run and r["role"] == "generator"}


def test_a_retriever_runs_latency_is_its_retrieval_plus_its_generation(
    qa_dir: Path, write_config: ConfigWriter, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _team(qa_dir, "team_time_latency", monkeypatch)
    code, _, err = run_cli([str(_config(write_config, "team_time_latency"))], capsys)
    assert code == 0, err
    report = report_of(qa_dir / "out")
    nightly = report.metadata.nightly
    assert nightly is not None
    questions = list(nightly.samples)
    assert set(nightly.retrievers) == {"bm25", "slow_rerank"}
    for name, timing in nightly.retrievers.items():
        assert set(timing.search_s) == set(questions), name  # every question's search timed on its own
        assert timing.index_s >= 0 and all(v > 0 for v in timing.search_s.values())
    # the reranker's work happens per question, inside its search: its scorer ran once for each question that
    # has BM25 candidates to rerank
    passages = [json.loads(line) for line in (qa_dir / "passages.jsonl").read_text(encoding="utf-8").splitlines()]
    asked = {q: s.question for q, s in nightly.samples.items()}
    with_candidates = sum(1 for ranking in search("bm25", {"top_k": 3}, passages, asked).values() if ranking)
    assert with_candidates > 0 and (qa_dir / "calls.log").read_text().split().count("rerank") == with_candidates
    folder = latest(qa_dir / "out")
    for name in ("bm25", "slow_rerank"):
        latency = report.run(name).scores("latency_s")
        generated = _generator_latency(folder, name)
        searched = nightly.retrievers[name].search_s
        for qid, value in zip(report.run(name).per_query, latency, strict=True):
            assert value is not None and value >= searched[qid], (name, qid)
            assert value == pytest.approx(searched[qid] + generated[qid], abs=2e-5), (name, qid)
    # a fused run searches both of its runs before the generator answers
    hybrid = dict(zip(report.run("hybrid").per_query, report.run("hybrid").scores("latency_s"), strict=True))
    generated = _generator_latency(folder, "hybrid")
    for qid, value in hybrid.items():
        both = nightly.retrievers["bm25"].search_s[qid] + nightly.retrievers["slow_rerank"].search_s[qid]
        assert value == pytest.approx(both + generated[qid], abs=3e-5)
    stages = report.run("slow_rerank").metadata.metric_settings.get("operational_stages")
    assert stages == ["retrieval", "generator"]


def test_index_building_is_its_own_line_apart_from_the_pipelines_calls_and_stays_on_a_cached_night(
    qa_dir: Path, write_config: ConfigWriter, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _team(qa_dir, "team_time_lines", monkeypatch)
    config = _config(write_config, "team_time_lines", pipeline=True)
    for night in ("fresh", "cached"):
        code, _, err = run_cli([str(config)], capsys)
        assert code == 0, (night, err)
        report = report_of(qa_dir / "out")
        nightly = report.metadata.nightly
        assert nightly is not None and nightly.work is not None and nightly.work.actual is not None
        seconds = nightly.work.actual.seconds
        index = sum(t.index_s for t in nightly.retrievers.values())
        searches = sum(sum(t.search_s.values()) for t in nightly.retrievers.values())
        assert seconds["retriever index"] == pytest.approx(index, abs=1e-3)
        assert seconds["retrieval"] == pytest.approx(searches, abs=1e-3)
        # the pipeline's seconds are its calls alone: they, the index building and the searches all happened
        # inside the step that built the runs, and none of them holds another
        assert "pipeline" in seconds
        assert seconds["pipeline"] + index + searches <= nightly.timings_s["runs"] + 1e-3
        markdown = (latest(qa_dir / "out") / "report.md").read_text(encoding="utf-8")
        assert "| retriever index building seconds |" in markdown
        assert "| retrieval seconds (searches, reranks) |" in markdown
        if night == "fresh":
            assert nightly.work.actual.pipeline_calls == len(nightly.samples)
            assert "| pipeline seconds (its calls) |" in markdown
        else:  # every pipeline output from the cache: the line is still there, and says so
            assert nightly.work.actual.pipeline_calls == 0
            assert "| pipeline seconds (every output from the cache, none called) |" in markdown


def test_a_dry_run_builds_retrievers_on_a_sample_of_the_corpus_and_times_them(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]
    extra = [{"id": f"x{i}", "text": " ".join(words[(i + j) % len(words)] for j in range(8 + i % 5))} for i in range(900)]
    passages = [json.loads(line) for line in (qa_dir / "passages.jsonl").read_text(encoding="utf-8").splitlines()]
    write_jsonl(qa_dir / "passages.jsonl", passages + extra)
    config = write_config(
        runs=[
            {"source": "retriever", "retriever": "bm25", "name": "bm25"},
            {"source": "retriever", "retriever": "dense", "name": "dense"},
        ],
        judge={"backend": "local", "metrics": ["context_recall"]},
    )
    code, out, err = run_cli([str(config), "--dry-run"], capsys)
    assert code == 0, err
    total = len(passages) + len(extra)
    for name in ("bm25", "dense"):
        assert f"retriever run '{name}': built on 400 of {total} passages" in out
    assert "retriever index " in out and "retrieval " in out and "judge " in out  # the time's stages
    assert not (qa_dir / "out").exists()
