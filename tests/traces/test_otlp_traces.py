"""OTLP JSON with OpenInference attributes, as the Collector's file exporter writes it, read as samples,
rankings and operational figures; what a trace lacks is named per trace (issue 42, part 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.errors import InputError
from ragmetrics.traces import read_traces


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}  # int64 as a string, protobuf's JSON mapping
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def _span(trace: str, span: str, parent: str | None, name: str, start: int, end: int, **attrs: Any) -> dict[str, Any]:
    out = {"traceId": trace, "spanId": span, "name": name, "kind": 1,
           "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
           "attributes": [_attr(k.replace("__", "."), v) for k, v in attrs.items()]}  # fmt: skip
    if parent:
        out["parentSpanId"] = parent
    return out


def _docs(prefix: str, docs: list[tuple[str, str, float]]) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for i, (doc_id, text, score) in enumerate(docs):
        attrs[f"{prefix}.{i}.document.id"] = doc_id
        attrs[f"{prefix}.{i}.document.content"] = text
        attrs[f"{prefix}.{i}.document.score"] = score
    return attrs


def _request(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}


def _write(path: Path, requests: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    return path


def _trace_one() -> list[dict[str, Any]]:
    root = _span("t1", "a", None, "rag", 1_000_000_000, 3_500_000_000,
                 **{"openinference.span.kind": "CHAIN", "input.value": json.dumps({"question": "What is 2+2?"}),
                    "output.value": "4", "session.id": "conv-1"})  # fmt: skip
    retriever = _span("t1", "b", "a", "bm25", 1_100_000_000, 1_200_000_000,
                      **{"openinference.span.kind": "RETRIEVER", "input.value": "What is 2+2?",
                         **_docs("retrieval.documents", [("d1", "Two plus two is four.", 3.5), ("d2", "Cats.", 1.0)])})  # fmt: skip
    reranker = _span("t1", "c", "a", "cross_encoder", 1_200_000_000, 1_300_000_000,
                     **{"openinference.span.kind": "RERANKER",
                        **_docs("reranker.output_documents", [("d1", "Two plus two is four.", 0.99)])})  # fmt: skip
    llm = _span("t1", "d", "a", "llm", 1_300_000_000, 3_400_000_000,
                **{"openinference.span.kind": "LLM", "llm.model_name": "gpt-x", "llm.token_count.prompt": 120,
                   "llm.token_count.completion": 5, "llm.cost.total": 0.0021,
                   "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "calculator",
                   "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"expr": "2+2"}'})  # fmt: skip
    return [root, retriever, reranker, llm]


def test_a_trace_becomes_a_sample_rankings_and_figures(tmp_path: Path) -> None:
    path = _write(tmp_path / "traces.jsonl", [_request(_trace_one())])
    traces = read_traces(str(path))
    assert traces.problems == []
    (sample,) = traces.samples
    assert sample.id == "t1" and sample.question == "What is 2+2?" and sample.answer == "4"
    assert sample.contexts == ["Two plus two is four."] and sample.context_ids == ["d1"]  # the reranker's output
    assert sample.tool_calls is not None and sample.tool_calls[0].name == "calculator"
    assert sample.tool_calls[0].args == {"expr": "2+2"}
    assert traces.runs["bm25"].rankings["t1"] == {"d1": 3.5, "d2": 1.0}
    assert traces.runs["cross_encoder"].rankings["t1"] == {"d1": 0.99}
    assert traces.latency_s["t1"] == pytest.approx(2.5) and traces.tokens["t1"] == 125
    assert traces.cost["t1"] == pytest.approx(0.0021) and traces.models["t1"] == "gpt-x"
    assert traces.sessions["t1"] == "conv-1"


def test_what_a_trace_lacks_is_named_with_the_attribute(tmp_path: Path) -> None:
    no_input = _span("t2", "x", None, "rag", 0, 10, **{"openinference.span.kind": "CHAIN", "output.value": "?"})
    no_retriever = _span("t3", "y", None, "rag", 20, 30, **{"input.value": "Why?", "output.value": "Because."})
    path = _write(tmp_path / "traces.jsonl", [_request(_trace_one()), _request([no_input, no_retriever])])
    traces = read_traces(str(path))
    assert [s.id for s in traces.samples] == ["t3", "t1"]  # in order of their start
    problems = {(p.trace_id, p.field): p.message for p in traces.problems}
    assert "has no input.value" in problems[("t2", "question")]
    assert "no RETRIEVER or RERANKER span (openinference.span.kind)" in problems[("t3", "contexts")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json\n", "line 1"),
        (json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}) + "\n", "without traceId"),
        (json.dumps({"resourceSpans": []}) + "\n", "no span in the file"),
    ],
)
def test_a_file_that_is_not_an_otlp_export_is_an_input_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        read_traces(str(path), format="otlp")
    with pytest.raises(InputError):  # detected from the content, or named as neither format
        read_traces(str(path))


def test_one_pretty_printed_document_is_read_too(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(_request(_trace_one()), indent=2), encoding="utf-8")
    assert [s.id for s in read_traces(str(path)).samples] == ["t1"]


def test_tool_call_arguments_that_are_not_json_are_a_named_problem(tmp_path: Path) -> None:
    spans = _trace_one()
    for attribute in spans[3]["attributes"]:
        if attribute["key"].endswith("function.arguments"):
            attribute["value"] = {"stringValue": "{not json"}
    traces = read_traces(str(_write(tmp_path / "traces.jsonl", [_request(spans)])))
    (problem,) = traces.problems
    assert problem.field == "tool_calls" and "not JSON" in problem.message
    assert traces.samples[0].tool_calls is None
