"""Issue 47's end-to-end path, as a new user takes it: a corpus with empty and duplicate chunks -> `ragmetrics
testset --pool bm25 --pool dense` -> a night with a traced system (some traces missing, traces written by the
OpenTelemetry SDK) and retriever runs -> `ragmetrics score` on the traces -> the report in every format.

Exit 0 (or the documented code), no internal error, no value for a question whose trace is missing or that is
unanswerable, and the qrels' provenance with the shared-model warning in report.json, report.md and
report.html."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs opentelemetry-sdk (the 'traces' extra)")
pytest.importorskip("openinference.semconv", reason="needs openinference-semantic-conventions")
pytest.importorskip("bm25s", reason="the pool and the traced app use BM25 (the 'examples' extra)")

from ragmetrics.cli import main

pytestmark = pytest.mark.slow


def _corpus(tmp: Path) -> Path:
    from ragmetrics.collection import load_passages

    rows: list[dict[str, Any]] = [{"id": p["id"], "title": p["title"], "text": p["text"]} for p in load_passages()]
    rows += [{"id": f"{r['id']}-mirror", "title": r["title"], "text": r["text"]} for r in rows[:8]]
    rows += [{"id": "empty-1", "text": ""}, {"id": "empty-2", "text": " \n\t "}]
    path = tmp / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _traced_app(corpus: Path, testset: Path, out: Path) -> set[str]:
    """A small RAG app instrumented with the OpenTelemetry SDK: BM25 top 10, a reranker keeping 3, an answer
    from the first context; every fourth question is never traced. Returns the traced question ids."""
    from openinference.semconv.trace import DocumentAttributes, SpanAttributes
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from ragmetrics.retrievers import search
    from ragmetrics.traces.sdk import OtlpJsonFileExporter

    docs = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    text = {d["id"]: d["text"] for d in docs}
    questions = [json.loads(line) for line in (testset / "questions.jsonl").read_text().splitlines()]
    hits = search("bm25", {"top_k": 10}, docs, {q["id"]: q["question"] for q in questions})
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(out)))
    tracer = provider.get_tracer("app")
    kind = SpanAttributes.OPENINFERENCE_SPAN_KIND
    traced = set()

    def put(span: Any, key: str, ranked: list[tuple[str, float]]) -> None:
        for i, (doc, score) in enumerate(ranked):
            span.set_attribute(f"{key}.{i}.{DocumentAttributes.DOCUMENT_ID}", doc)
            span.set_attribute(f"{key}.{i}.{DocumentAttributes.DOCUMENT_CONTENT}", text[doc])
            span.set_attribute(f"{key}.{i}.{DocumentAttributes.DOCUMENT_SCORE}", float(score))

    for n, q in enumerate(questions):
        if n % 4 == 3:
            continue
        traced.add(q["id"])
        found = hits[q["id"]]
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute(kind, "CHAIN")
            root.set_attribute(SpanAttributes.INPUT_VALUE, q["question"])
            root.set_attribute(SpanAttributes.METADATA, json.dumps({"id": q["id"]}))
            with tracer.start_as_current_span("bm25") as span:
                span.set_attribute(kind, "RETRIEVER")
                put(span, SpanAttributes.RETRIEVAL_DOCUMENTS, found)
            kept = sorted(found, key=lambda h: -len(text[h[0]]))[:3]
            with tracer.start_as_current_span("rerank") as span:
                span.set_attribute(kind, "RERANKER")
                put(span, "reranker.input_documents", found)
                put(span, "reranker.output_documents", kept)
            answer = text[kept[0][0]].split(". ")[0] + "." if kept else "I do not know."
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)
    provider.shutdown()
    return traced


def test_corpus_to_testset_to_traced_night_to_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _corpus(tmp_path)
    testset = tmp_path / "testset"
    assert main(["testset", str(corpus), "-o", str(testset), "--size", "40", "--seed", "1",
                 "--pool", "bm25", "--pool", "dense"]) == 0  # fmt: skip
    manifest = json.loads((testset / "testset.json").read_text())
    assert manifest["chunks"]["skipped"]["empty"] == 2
    assert manifest["qrels"]["shared_with_copies"] >= 0 and len(manifest["duplicates"]["groups"]) >= 8
    unanswerable = {
        q["id"] for line in (testset / "questions.jsonl").read_text().splitlines() if not (q := json.loads(line))["answerable"]
    }
    assert unanswerable, "the default kinds include unanswerable questions"

    traces = tmp_path / "traces.jsonl"
    traced = _traced_app(corpus, testset, traces)
    config = tmp_path / "night.yaml"
    config.write_text(json.dumps({
        "name": "second-hour",
        "dataset": {"path": str(testset), "traces": str(traces)},
        "runs": [{"source": "dataset", "name": "myapp"}, {"source": "retriever", "retriever": "bm25"},
                 {"source": "retriever", "retriever": "dense"}],
        "retrieval": {"metrics": ["ndcg@10", "recall@10"]},
        "judge": {"backend": "local", "metrics": ["context_recall", "faithfulness"],
                  "cache_path": str(tmp_path / "v.sqlite")},
        "output": {"dir": str(tmp_path / "out"), "formats": ["json", "md", "html"], "history": False},
        "max_failure_rate": 0.5,
        "progress": False,
    }))  # fmt: skip
    capsys.readouterr()
    assert main(["run", str(config), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Verdict:")
    assert err.count("\n") <= 6, err  # failures summarised by run and cause, not one line per question

    folder = tmp_path / "out" / "latest"
    report = json.loads((folder / "report.json").read_text())
    runs = {r["name"]: r for r in report["runs"]}
    assert set(runs) == {"myapp", "myapp/bm25", "bm25", "dense"}
    ids = [json.loads(line)["id"] for line in (testset / "questions.jsonl").read_text().splitlines()]
    missing = set(ids) - traced
    for name, run in runs.items():
        failed = {(f["query_id"], f["metric"]): f["cause"] for f in run["failures"]}
        na = {(n["query_id"], n["metric"]) for n in run["not_applicable"]}
        for qid in ids:
            for metric, value in run["per_query"][qid].items():
                if qid in unanswerable and metric in ("ndcg@10", "recall@10", "context_recall"):
                    assert value is None and (qid, metric) in na, (name, qid, metric)
                elif qid in missing and name.startswith("myapp"):
                    assert value is None and failed[(qid, metric)] == "trace_missing", (name, qid, metric)
                else:
                    assert value is not None or (qid, metric) in na, (name, qid, metric, failed.get((qid, metric)))

    qrels = report["metadata"]["nightly"]["dataset"]["qrels"]
    assert qrels["by_origin"]["judge"] > 0 and "MiniLM" in qrels["pool_judge"]["model"]
    dense = [w for w in qrels["warnings"] if "'dense'" in w]
    assert dense and "ranks with all-MiniLM-L6-v2" in dense[0] and "ranks as the pooled run" in dense[0]
    md = (folder / "report.md").read_text()
    html = (folder / "report.html").read_text()
    assert "## Where the relevance grades came from" in md and "**Warning:** the comparison may favour run 'dense'" in md
    assert "qrels-provenance" in html and "the comparison may favour run &#x27;dense&#x27;" in html
    assert "% from the pooling judge" in out

    assert main(["score", str(testset), "--traces", str(traces), "-m", "ndcg@10", "faithfulness",
                 "--format", "json"]) == 3  # fmt: skip
    out, err = capsys.readouterr()
    (system,) = json.loads(out)  # one document
    assert system["metadata"]["extra"]["qrels"]["by_origin"]["judge"] > 0
    assert {f["cause"] for f in system["failures"]} == {"trace_missing"}
    assert err.count("questions failed") == 1 and "trace_missing" in err
