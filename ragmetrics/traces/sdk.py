"""Spans straight from the OpenTelemetry SDK: evaluate in process, or write the Collector's file format.

A team that already instruments its pipeline with the OpenTelemetry SDK (and the OpenInference conventions)
adds one of these exporters to its tracer provider:

- `SpanCollector` keeps the finished spans in memory; `collector.traces()` is the same `TraceSet` that
  `read_traces` gives for a file, so a test or a notebook scores the pipeline it just ran;
- `OtlpJsonFileExporter(path)` appends each export as one OTLP JSON line, as the Collector's `file` exporter
  writes it (hex trace and span ids, 64-bit integers as strings), for `dataset: {traces: PATH}` in a nightly
  config without running a Collector.

Needs `opentelemetry-sdk` (pip install '.[traces]' in a clone of ragmetrics).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import StatusCode

from ragmetrics.traces.openinference import TraceSet, traces_from_spans
from ragmetrics.traces.otlp import Span

__all__ = ["OtlpJsonFileExporter", "SpanCollector", "otlp_json_request", "span_from_sdk"]


def span_from_sdk(span: ReadableSpan) -> Span:
    """One finished SDK span as ragmetrics' plain span (ids in the hex form OTLP JSON uses)."""
    context = span.get_span_context()
    if context is None:
        raise ValueError(f"span {span.name!r} has no span context")
    attributes = {
        key: list(value) if isinstance(value, tuple) else value
        for key, value in (span.attributes or {}).items()
    }
    return Span(
        trace_id=format(context.trace_id, "032x"),
        span_id=format(context.span_id, "016x"),
        parent_id=format(span.parent.span_id, "016x") if span.parent is not None else None,
        name=span.name,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        attributes=attributes,
        error=span.status.status_code == StatusCode.ERROR,
    )


class SpanCollector(SpanExporter):
    """An exporter that keeps every finished span in memory (thread-safe), for scoring in process."""

    def __init__(self) -> None:
        self._spans: list[Span] = []
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        converted = [span_from_sdk(span) for span in spans]
        with self._lock:
            self._spans.extend(converted)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to release: the spans stay readable after the provider shuts down."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    @property
    def spans(self) -> list[Span]:
        with self._lock:
            return list(self._spans)

    def clear(self) -> None:
        with self._lock:
            self._spans.clear()

    def traces(self) -> TraceSet:
        """The collected traces as samples, runs and operational figures (`ragmetrics.traces` doc)."""
        return traces_from_spans(self.spans, source="in-process spans")


def _any_value(value: Any) -> dict[str, Any]:
    """A Python attribute value as an OTLP JSON AnyValue (int64 as a string, as protobuf's JSON mapping)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    raise TypeError(f"attribute value of type {type(value).__name__} is not an OTLP value")


def _attributes(attributes: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": key, "value": _any_value(value)} for key, value in (attributes or {}).items()]


def _span_json(span: ReadableSpan) -> dict[str, Any]:
    context = span.get_span_context()
    assert context is not None
    out: dict[str, Any] = {
        "traceId": format(context.trace_id, "032x"),
        "spanId": format(context.span_id, "016x"),
        "name": span.name,
        "kind": span.kind.value + 1,  # OTLP numbers kinds from 1 (INTERNAL); the SDK's enum from 0
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or 0),
        "attributes": _attributes(span.attributes),
        "status": {"code": span.status.status_code.value} if span.status.status_code.value else {},
    }
    if span.parent is not None:
        out["parentSpanId"] = format(span.parent.span_id, "016x")
    if span.status.description:
        out["status"]["message"] = span.status.description
    if span.events:
        out["events"] = [
            {"timeUnixNano": str(e.timestamp), "name": e.name, "attributes": _attributes(e.attributes)}
            for e in span.events
        ]
    return out


def otlp_json_request(spans: Iterable[ReadableSpan]) -> dict[str, Any]:
    """One OTLP ExportTraceServiceRequest as JSON: spans grouped by resource, then by instrumentation scope."""
    resources: dict[int, tuple[Any, dict[tuple[str, str], list[dict[str, Any]]]]] = {}
    for span in spans:
        resource = span.resource
        _, scopes = resources.setdefault(id(resource), (resource, {}))
        scope = span.instrumentation_scope
        key = (scope.name, scope.version or "") if scope is not None else ("", "")
        scopes.setdefault(key, []).append(_span_json(span))
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(resource.attributes if resource else None)},
                "scopeSpans": [
                    {"scope": {"name": name, **({"version": version} if version else {})}, "spans": members}
                    for (name, version), members in scopes.items()
                ],
            }
            for resource, scopes in resources.values()
        ]
    }


class OtlpJsonFileExporter(SpanExporter):
    """Appends each export to `path` as one OTLP JSON line, the OpenTelemetry Collector file exporter's format
    (`read_traces(path)` and `dataset: {traces: path}` read it back). Writes are serialised by a lock."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._closed = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._closed:
            return SpanExportResult.FAILURE
        line = json.dumps(otlp_json_request(spans), ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._closed = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
