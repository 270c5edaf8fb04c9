"""Every way traces come in (issue 42, part 1): SDK spans in process, the OTLP JSON file exporter (checked
against OpenTelemetry's own protobuf encoder), a Langfuse export; and a night's dataset built from traces:
matched to a QA dataset's questions, questions without a trace failing with a named cause, each traced
retriever a run of its own."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs opentelemetry-sdk (the 'traces' extra)")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Tracer

from ragmetrics.errors import InputError
from ragmetrics.nightly.config import DatasetConfig, NightlyConfig
from ragmetrics.nightly.load import load_dataset
from ragmetrics.nightly.pipeline import run_pipeline
from ragmetrics.traces import detect_trace_format, read_otlp_json, read_traces
from ragmetrics.traces.sdk import OtlpJsonFileExporter, SpanCollector

QA = [
    {"id": "q1", "question": "What colour is the sky?", "reference": "The sky is blue.", "relevant_ids": ["d1"]},
    {"id": "q2", "question": "How many legs does a spider have?", "reference": "Eight.", "relevant_ids": ["d3"]},
    {"id": "q3", "question": "What is the capital of France?", "reference": "Paris.", "relevant_ids": ["d5"]},
]
DOCS = {
    "d1": "The sky is blue on a clear day.",
    "d2": "Grass is green.",
    "d3": "A spider has eight legs.",
    "d4": "Insects have six legs.",
    "d5": "Paris is the capital of France.",
}


def _traced_question(tracer: Tracer, question: str, answer: str, retrieved: list[str], reranked: list[str],
                     *, sample_id: str | None = None, tokens: int = 100) -> None:  # fmt: skip
    with tracer.start_as_current_span("rag") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", json.dumps({"question": question}))
        if sample_id is not None:
            root.set_attribute("metadata", json.dumps({"id": sample_id}))
        for name, kind, prefix, ids in (("bm25", "RETRIEVER", "retrieval.documents", retrieved),
                                        ("rerank", "RERANKER", "reranker.output_documents", reranked)):  # fmt: skip
            with tracer.start_as_current_span(name) as span:
                span.set_attribute("openinference.span.kind", kind)
                for i, doc in enumerate(ids):
                    span.set_attribute(f"{prefix}.{i}.document.id", doc)
                    span.set_attribute(f"{prefix}.{i}.document.content", DOCS[doc])
                    span.set_attribute(f"{prefix}.{i}.document.score", float(len(ids) - i))
        with tracer.start_as_current_span("llm") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.token_count.total", tokens)
            llm.set_attribute("llm.cost.total", tokens / 1e5)
            llm.set_attribute("llm.model_name", "m")
        root.set_attribute("output.value", answer)


def _provider(*exporters: Any) -> tuple[TracerProvider, Tracer]:
    provider = TracerProvider()
    for exporter in exporters:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, provider.get_tracer("tests")


def _three_traces(tracer: Tracer) -> None:
    _traced_question(tracer, "What colour is the sky?", "Blue.", ["d2", "d1"], ["d1", "d2"], sample_id="q1")
    # No id: matched by the question's text (spaces normalised).
    _traced_question(tracer, "How many legs  does a spider have?", "Eight.", ["d4", "d3"], ["d3"], tokens=50)
    _traced_question(tracer, "Who wrote Hamlet?", "Shakespeare.", ["d2"], ["d2"])  # in no QA row


def test_sdk_spans_in_process_and_through_the_file_exporter_read_the_same(tmp_path: Path) -> None:
    collector = SpanCollector()
    path = tmp_path / "traces.jsonl"
    provider, tracer = _provider(collector, OtlpJsonFileExporter(path))
    _three_traces(tracer)
    provider.shutdown()
    in_process, from_file = collector.traces(), read_traces(path)
    assert detect_trace_format(path) == "otlp"
    assert in_process.samples == from_file.samples and len(from_file.samples) == 3
    assert in_process.runs == from_file.runs and set(from_file.runs) == {"bm25", "rerank"}
    assert in_process.tokens == from_file.tokens and sorted(from_file.tokens.values()) == [50.0, 100.0, 100.0]
    first = from_file.samples[0]
    assert first.contexts == [DOCS["d1"], DOCS["d2"]] and first.context_ids == ["d1", "d2"]  # the reranker's
    assert from_file.sample_ids == {first.id: "q1"}
    assert set(from_file.final_span.values()) == {"rerank"}


def test_the_file_exporter_writes_what_opentelemetrys_own_encoder_writes(tmp_path: Path) -> None:
    """OTLP JSON from our writer reads back span for span like the official protobuf encoding turned into JSON
    as the Collector writes it (hex ids, not protobuf's base64)."""
    encoder = pytest.importorskip("opentelemetry.exporter.otlp.proto.common.trace_encoder")
    json_format = pytest.importorskip("google.protobuf.json_format")
    kept: list[Any] = []

    class Keep(SpanCollector):
        def export(self, spans: Any) -> Any:
            kept.extend(spans)
            return super().export(spans)

    ours = tmp_path / "ours.jsonl"
    provider, tracer = _provider(Keep(), OtlpJsonFileExporter(ours))
    _three_traces(tracer)
    provider.shutdown()
    official = json_format.MessageToDict(encoder.encode_spans(kept))
    for resource in official["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    theirs = tmp_path / "theirs.json"
    theirs.write_text(json.dumps(official), encoding="utf-8")

    def strip(spans: list[Any]) -> list[Any]:
        return sorted((s.trace_id, s.span_id, s.parent_id, s.name, s.start_ns, s.end_ns, json.dumps(s.attributes, sort_keys=True)) for s in spans)  # fmt: skip

    assert strip(read_otlp_json(ours)) == strip(read_otlp_json(theirs))
    assert len(read_otlp_json(ours)) == 12


def _langfuse_trace(trace_id: str, question: str, answer: str, docs: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "id": trace_id, "timestamp": "2026-11-01T10:00:00.000Z", "name": "rag", "latency": 1.25,
        "input": {"question": question}, "output": {"answer": answer}, "sessionId": extra.get("session"),
        "metadata": extra.get("metadata", {}),
        "observations": [
            {"id": f"{trace_id}-r", "type": "RETRIEVER", "name": "vector-search",
             "startTime": "2026-11-01T10:00:00.100Z", "endTime": "2026-11-01T10:00:00.300Z",
             "output": [{"page_content": DOCS[d], "metadata": {"id": d, "score": 0.9 - i / 10}} for i, d in enumerate(docs)]},
            {"id": f"{trace_id}-g", "type": "GENERATION", "name": "answer", "model": "gpt-x",
             "startTime": "2026-11-01T10:00:00.300Z", "endTime": "2026-11-01T10:00:01.200Z",
             "usageDetails": {"input": 120, "output": 30, "total": 150}, "costDetails": {"total": 0.0021},
             "output": {"role": "assistant", "content": None, "tool_calls": [
                 {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": \"sky\"}"}}]}},
        ],
    }  # fmt: skip


def test_a_langfuse_export_maps_like_openinference_spans(tmp_path: Path) -> None:
    path = tmp_path / "langfuse.json"
    page = {"data": [_langfuse_trace("lf1", "What colour is the sky?", "Blue.", ["d1", "d2"], session="s1",
                                     metadata={"sample_id": "q1"})], "meta": {"page": 1}}  # fmt: skip
    path.write_text(json.dumps(page), encoding="utf-8")
    assert detect_trace_format(path) == "langfuse"
    traces = read_traces(path)
    (sample,) = traces.samples
    assert (sample.id, sample.question, sample.answer) == ("lf1", "What colour is the sky?", "Blue.")
    assert sample.context_ids == ["d1", "d2"] and sample.contexts == [DOCS["d1"], DOCS["d2"]]
    assert traces.runs["vector-search"].rankings["lf1"] == pytest.approx({"d1": 0.9, "d2": 0.8})
    assert traces.latency_s["lf1"] == pytest.approx(1.25)
    assert (traces.tokens["lf1"], traces.cost["lf1"], traces.models["lf1"]) == (150.0, 0.0021, "gpt-x")
    assert traces.sessions == {"lf1": "s1"} and traces.sample_ids == {"lf1": "q1"}
    assert sample.tool_calls is not None and sample.tool_calls[0].name == "lookup"
    assert sample.tool_calls[0].args == {"q": "sky"}
    # One trace per line reads the same.
    lines = tmp_path / "langfuse.jsonl"
    lines.write_text(json.dumps(page["data"][0]) + "\n", encoding="utf-8")
    assert read_traces(lines, format="langfuse").samples == traces.samples


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"id": "t", "observations": ["obs-1", "obs-2"]}, "listed by id only"),
        ({"id": "t", "timestamp": "2026-11-01T10:00:00", "observations": []}, "has no time zone"),
        ({"observations": []}, "an object with an 'id'"),
        ({"id": "t", "timestamp": "yesterday", "observations": []}, "is not an ISO 8601 time"),
    ],
)
def test_a_bad_langfuse_export_is_named(tmp_path: Path, content: dict[str, Any], message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n" + json.dumps(content) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=message) as caught:
        read_traces(path, format="langfuse")
    assert str(path) in str(caught.value) and "line 2" in str(caught.value)


def test_a_file_of_neither_format_is_named(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"question": "q"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="cannot tell the trace format"):
        read_traces(path)
    with pytest.raises(InputError, match="unknown trace format 'zipkin'"):
        read_traces(path, format="zipkin")


def _qa_file(tmp_path: Path) -> Path:
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in QA), encoding="utf-8")
    return path


def _otlp_file(tmp_path: Path) -> Path:
    path = tmp_path / "traces.jsonl"
    provider, tracer = _provider(OtlpJsonFileExporter(path))
    _three_traces(tracer)
    _traced_question(tracer, "What colour is the sky?", "Azure.", ["d1"], ["d1"], sample_id="q1")  # again
    provider.shutdown()
    return path


def test_traces_are_matched_to_the_qa_datasets_questions(tmp_path: Path) -> None:
    config = DatasetConfig(path=_qa_file(tmp_path), traces=_otlp_file(tmp_path))
    dataset = load_dataset(config, progress=False)
    by_id = {s.id: s for s in dataset.samples}
    assert [s.id for s in dataset.samples] == ["q1", "q2", "q3"]
    assert by_id["q1"].answer == "Azure." and by_id["q1"].reference == "The sky is blue."  # the last trace
    assert by_id["q2"].answer == "Eight." and by_id["q2"].context_ids == ["d3"]  # matched by text
    assert by_id["q3"].answer is None and by_id["q3"].contexts is None  # never traced
    assert dataset.retrieved["q2"] == {"d3": 1.0} and "q3" not in dataset.retrieved
    traced = dataset.traced
    assert traced is not None and traced.final_span == "rerank"
    assert set(traced.missing) == {"q3"} and set(traced.latency_s) == {"q1", "q2"}
    notes = " | ".join(traced.notes)
    assert "1 traces match no question" in notes and "'Who wrote Hamlet?'" in notes
    assert "1 questions were traced more than once (e.g. 'q1')" in notes
    assert "1 of 3 questions have no trace" in notes
    assert set(traced.span_runs("pipeline")) == {"pipeline/bm25"}


def test_a_night_on_traces_fails_untraced_questions_and_scores_each_retriever(tmp_path: Path) -> None:
    config = NightlyConfig.model_validate({
        "dataset": {"path": str(_qa_file(tmp_path)), "traces": str(_otlp_file(tmp_path))},
        "retrieval": {"metrics": ["recall@2", "mrr"]},
        "judge": {"metrics": ["faithfulness"], "backend": "local", "cache_path": str(tmp_path / "c.sqlite")},
        "output": {"dir": str(tmp_path / "out"), "formats": ["json"], "history": False},
        "max_failure_rate": 0.5,
        "progress": False,
    })  # fmt: skip
    outcome = run_pipeline(config, write=False, progress=False)
    runs = {r.name: r for r in outcome.report.runs}
    assert set(runs) == {"pipeline", "pipeline/bm25"}
    traced = runs["pipeline"]
    assert traced.per_query["q2"]["mrr"] == 1.0 and runs["pipeline/bm25"].per_query["q2"]["mrr"] == 0.5
    # q3 has no trace: every score of it fails with the cause, none is a silent 0.
    assert all(v is None for v in traced.per_query["q3"].values())
    causes = {(f.query_id, f.metric): f.cause for f in traced.failures}
    assert causes[("q3", "mrr")] == causes[("q3", "faithfulness")] == causes[("q3", "latency_s")] == "trace_missing"
    assert traced.per_query["q1"]["tokens"] == 100.0 and traced.per_query["q2"]["tokens"] == 50.0
    assert any("match no question" in note for note in outcome.notes)
    # The traced first-stage retriever has no ranking for q3 either: a named failure, not a 0 (issue 47, 2).
    stage = runs["pipeline/bm25"]
    assert all(stage.per_query["q3"][m] is None for m in ("recall@2", "mrr"))
    assert {(f.metric, f.cause) for f in stage.failures if f.query_id == "q3"} >= {
        ("recall@2", "trace_missing"), ("mrr", "trace_missing")}


def test_traces_alone_are_the_dataset(tmp_path: Path) -> None:
    config = DatasetConfig(traces=_otlp_file(tmp_path), format="otlp")
    dataset = load_dataset(config, progress=False)
    ids = [s.id for s in dataset.samples]
    assert ids[0] == "q1" and len(ids) == 3 and not dataset.has_qrels  # q1 from metadata, the rest trace ids
    assert dataset.traced is not None and not dataset.traced.missing


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"path": "qa.jsonl", "traces": "t.jsonl", "format": "otlp"}, "format 'otlp' is the format of dataset.traces"),
        ({"traces": "t.jsonl", "format": "csv"}, "format 'csv' is for 'path'"),
        ({"format": "langfuse", "path": "qa.jsonl"}, "format 'langfuse' is the format of dataset.traces"),
        ({}, "give exactly one of 'builtin' or 'path', or 'traces'"),
    ],
)
def test_trace_settings_that_cannot_work_are_refused(section: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DatasetConfig.model_validate(section)


def test_builtin_with_traces_takes_the_traces_format() -> None:
    config = DatasetConfig.model_validate({"builtin": "pydocs", "traces": "t.jsonl", "format": "langfuse"})
    assert config.format == "langfuse"


def test_fuzz_findings_are_named(tmp_path: Path) -> None:
    """Found by tests/fuzz: a span that is its own parent (no root), a parent id that is not a string."""
    cycle = tmp_path / "cycle.jsonl"
    cycle.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "t1", "spanId": "a", "parentSpanId": "a"}]}]}]}) + "\n", encoding="utf-8")  # fmt: skip
    traces = read_traces(cycle)
    assert not traces.samples and "parent ids form a cycle" in traces.problems[0].message
    parent = tmp_path / "parent.json"
    parent.write_text(json.dumps({"data": [{"id": "t", "observations": [{"id": "o", "parentObservationId": [None]}]}]}))
    with pytest.raises(InputError, match="parentObservationId must be a string"):
        read_traces(parent)


def test_ragmetrics_score_reads_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragmetrics.cli import main

    qa, traces = _qa_file(tmp_path), _otlp_file(tmp_path)
    code = main(["score", str(qa), "--traces", str(traces), "-m", "mrr", "faithfulness", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 3  # q3 has no trace: its scores fail, summarised by cause on stderr, every one in the JSON
    assert "1 questions failed (mrr, faithfulness, latency_s, tokens, cost: 1 of 3): trace_missing" in err
    (system,) = json.loads(out)  # one document, one system
    assert {(f["query_id"], f["cause"]) for f in system["failures"]} == {("q3", "trace_missing")}
    assert {"mrr", "faithfulness", "tokens", "latency_s"} <= set(system["aggregate"])
    assert main(["score", "-m", "mrr"]) == 2


def test_token_and_cost_values_that_are_not_numbers_are_named_not_counted(tmp_path: Path) -> None:
    collector = SpanCollector()
    provider, tracer = _provider(collector)
    with tracer.start_as_current_span("rag") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", "q?")
        root.set_attribute("output.value", "a.")
        with tracer.start_as_current_span("llm") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.token_count.total", "many")
            llm.set_attribute("llm.cost.total", float("nan"))
        with tracer.start_as_current_span("llm2") as silent:
            silent.set_attribute("openinference.span.kind", "LLM")  # no counts: unknown, not 0
    provider.shutdown()
    traces = collector.traces()
    assert traces.tokens == {} and traces.cost == {}
    named = {(p.field, p.message.split(":")[1].strip()) for p in traces.problems if p.field in ("tokens", "cost")}
    assert named == {("tokens", "llm.token_count.total"), ("cost", "llm.cost.total")}


def test_what_a_trace_lacks_is_named_on_the_scores_that_need_it(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    provider, tracer = _provider(OtlpJsonFileExporter(path))
    _traced_question(tracer, "What colour is the sky?", "Blue.", ["d1"], ["d1"], sample_id="q1")
    with tracer.start_as_current_span("rag") as root:  # q2: answered without any retriever span
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", "How many legs does a spider have?")
        root.set_attribute("output.value", "Eight.")
    _traced_question(tracer, "What is the capital of France?", "Paris.", ["d5"], ["d5"])
    provider.shutdown()
    config = NightlyConfig.model_validate({
        "dataset": {"path": str(_qa_file(tmp_path)), "traces": str(path)},
        "judge": {"metrics": ["faithfulness", "answer_relevancy"], "backend": "local",
                  "cache_path": str(tmp_path / "c.sqlite")},
        "output": {"dir": str(tmp_path / "out"), "formats": ["json"], "history": False},
        "max_failure_rate": 0.5, "progress": False,
    })  # fmt: skip
    (run,) = run_pipeline(config, write=False, progress=False).report.runs
    (failure,) = [f for f in run.failures if f.query_id == "q2"]
    assert (failure.metric, failure.cause) == ("faithfulness", "trace_incomplete")
    assert "no RETRIEVER or RERANKER span (openinference.span.kind)" in failure.message
    assert run.per_query["q2"]["answer_relevancy"] is not None and run.per_query["q2"]["latency_s"] is not None


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("three documents", "output is a str, not a list of documents"),
        ([{"id": "d1", "content": "x"}, 7], "document 1 is a int, not a text or an object"),
    ],
)
def test_a_retriever_output_that_is_not_documents_is_named_not_an_empty_retrieval(
    tmp_path: Path, output: Any, message: str
) -> None:
    trace = _langfuse_trace("lf1", "What colour is the sky?", "Blue.", ["d1"])
    trace["observations"][0]["output"] = output
    path = tmp_path / "lf.json"
    path.write_text(json.dumps([trace]), encoding="utf-8")
    traces = read_traces(path)
    (sample,) = traces.samples
    assert sample.contexts is None  # unknown, never [] (which would score as "retrieved nothing")
    assert "lf1" not in traces.runs["vector-search"].rankings
    assert {p.field for p in traces.problems} == {"contexts", "retrieved_ids"}
    assert all(message in p.message for p in traces.problems)


def test_a_limit_on_traces_alone_keeps_only_those_traces_figures(tmp_path: Path) -> None:
    dataset = load_dataset(DatasetConfig(traces=_otlp_file(tmp_path), limit=2), progress=False)
    assert dataset.traced is not None and len(dataset.samples) == 2
    ids = {s.id for s in dataset.samples}
    assert set(dataset.traced.latency_s) == ids and set(dataset.traced.tokens) == ids
    assert all(set(ranking) <= ids for ranking in dataset.traced.rankings.values())
