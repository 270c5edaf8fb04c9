"""How fast traces are read: `read_traces` on an OTLP JSON file (the Collector's file exporter format) and on a
Langfuse export, against the floor of parsing the same bytes with `json.loads` alone (what any reader must do),
and against OpenTelemetry's own protobuf JSON parser for OTLP (`google.protobuf.json_format.Parse` into an
ExportTraceServiceRequest, where installed: the tool a Python user would reach for).

    python benchmarks/bench_traces.py [--traces 20000] [--docs 10]

Each trace: a CHAIN root with question and answer, a RETRIEVER span with --docs documents (id, text, score),
an LLM span with token counts and cost. Prints seconds, traces per second, peak memory and the ratios.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from ragmetrics.traces import read_traces


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def _otlp_line(n: int, docs: int) -> str:
    trace = f"{n:032x}"
    start = 1_700_000_000_000_000_000 + n * 10_000_000
    root = {"traceId": trace, "spanId": f"{n:015x}a", "name": "rag", "kind": 1,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 900_000_000),
            "attributes": [_attr("openinference.span.kind", "CHAIN"), _attr("input.value", f"Question number {n}?"),
                           _attr("output.value", f"The answer to question {n} is in passage {n % 97}."),
                           _attr("metadata", json.dumps({"id": f"q{n}"}))]}  # fmt: skip
    retriever_attrs = [_attr("openinference.span.kind", "RETRIEVER")]
    for i in range(docs):
        prefix = f"retrieval.documents.{i}.document"
        retriever_attrs += [_attr(f"{prefix}.id", f"p{(n + i) % 5000}"),
                            _attr(f"{prefix}.content", f"Passage {(n + i) % 5000} says something about topic {i}."),
                            _attr(f"{prefix}.score", float(docs - i) + 0.5)]  # fmt: skip
    retriever = {"traceId": trace, "spanId": f"{n:015x}b", "parentSpanId": root["spanId"], "name": "bm25",
                 "startTimeUnixNano": str(start + 1000), "endTimeUnixNano": str(start + 200_000_000),
                 "attributes": retriever_attrs}  # fmt: skip
    llm = {"traceId": trace, "spanId": f"{n:015x}c", "parentSpanId": root["spanId"], "name": "generate",
           "startTimeUnixNano": str(start + 200_000_000), "endTimeUnixNano": str(start + 890_000_000),
           "attributes": [_attr("openinference.span.kind", "LLM"), _attr("llm.token_count.total", 700 + n % 50),
                          _attr("llm.cost.total", 0.00035), _attr("llm.model_name", "m")]}  # fmt: skip
    request = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "b"}, "spans": [root, retriever, llm]}]}]}  # fmt: skip
    return json.dumps(request, separators=(",", ":"))


def _langfuse_line(n: int, docs: int) -> str:
    return json.dumps({
        "id": f"t{n}", "timestamp": "2026-11-01T10:00:00.000Z", "latency": 0.9,
        "input": {"question": f"Question number {n}?"}, "output": {"answer": f"The answer to question {n}."},
        "metadata": {"id": f"q{n}"},
        "observations": [
            {"id": f"t{n}-r", "type": "RETRIEVER", "name": "bm25", "startTime": "2026-11-01T10:00:00.010Z",
             "endTime": "2026-11-01T10:00:00.200Z",
             "output": [{"id": f"p{(n + i) % 5000}", "content": f"Passage {(n + i) % 5000} text.", "score": docs - i}
                        for i in range(docs)]},
            {"id": f"t{n}-g", "type": "GENERATION", "name": "generate", "model": "m",
             "startTime": "2026-11-01T10:00:00.200Z", "endTime": "2026-11-01T10:00:00.890Z",
             "usageDetails": {"input": 650, "output": 50, "total": 700}, "costDetails": {"total": 0.00035}},
        ],
    }, separators=(",", ":"))  # fmt: skip


def _timed(fn: Any) -> tuple[float, float, Any]:
    """Seconds of one run, then the peak traced memory of a second run (tracemalloc slows what it traces)."""
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak / 2**20, out


def _protobuf_parse(path: Path) -> Any:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    count = 0
    with path.open("rb") as handle:
        for line in handle:
            request = json_format.Parse(line, ExportTraceServiceRequest(), ignore_unknown_fields=True)
            count += sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--docs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for kind, make in (("otlp", _otlp_line), ("langfuse", _langfuse_line)):
            path = Path(folder) / f"{kind}.jsonl"
            with path.open("w", encoding="utf-8") as handle:
                for n in range(args.traces):
                    handle.write(make(n, args.docs) + "\n")
            size = path.stat().st_size / 2**20
            floor_s, floor_mb, _ = _timed(lambda p=path: [json.loads(line) for line in p.open("rb")])
            ours_s, ours_mb, traces = _timed(lambda p=path, k=kind: read_traces(p, format=k))
            assert len(traces.samples) == args.traces and not traces.problems
            print(f"{kind}: {args.traces} traces, {size:.1f} MB")
            print(f"  json.loads only      {floor_s:7.2f} s  peak {floor_mb:7.1f} MB")
            print(f"  read_traces          {ours_s:7.2f} s  peak {ours_mb:7.1f} MB  "
                  f"{args.traces / ours_s:,.0f} traces/s  {ours_s / floor_s:.2f}x json.loads")  # fmt: skip
            if kind == "otlp":
                try:
                    proto_s, proto_mb, spans = _timed(lambda p=path: _protobuf_parse(p))
                except ImportError:
                    print("  protobuf json_format: not installed (opentelemetry-proto)")
                else:
                    assert spans == 3 * args.traces
                    print(f"  protobuf json_format {proto_s:7.2f} s  peak {proto_mb:7.1f} MB  (parse only, no mapping); "
                          f"read_traces is {proto_s / ours_s:.2f}x its speed")  # fmt: skip


if __name__ == "__main__":
    main()
