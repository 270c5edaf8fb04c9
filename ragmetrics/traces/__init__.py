"""Traces in: what a RAG system recorded as it ran (OpenTelemetry spans with the OpenInference conventions),
read back as samples, rankings and operational figures (docs/traces.md)."""

from __future__ import annotations

from pathlib import Path

from ragmetrics.errors import InputError
from ragmetrics.traces.openinference import TracedRun, TraceProblem, TraceSet, traces_from_spans
from ragmetrics.traces.otlp import Span, read_otlp_json

__all__ = [
    "TRACE_FORMATS",
    "Span",
    "TraceProblem",
    "TraceSet",
    "TracedRun",
    "detect_trace_format",
    "read_otlp_json",
    "read_traces",
    "traces_from_spans",
]


TRACE_FORMATS = ("auto", "otlp", "langfuse")
_PEEK_BYTES = 1 << 20


def detect_trace_format(path: str | Path) -> str:
    """'otlp' when the file's first megabyte holds OTLP's `resourceSpans`, 'langfuse' when it holds a
    trace's `observations`; an InputError naming the file otherwise."""
    from ragmetrics._textfile import open_regular

    with open_regular(Path(path), prefix="cannot read: ") as handle:
        head = handle.read(_PEEK_BYTES)
    if b'"resourceSpans"' in head or b'"scopeSpans"' in head:
        return "otlp"
    if b'"observations"' in head:
        return "langfuse"
    if b'"trace_id"' in head and b'"span_id"' in head and b'"context"' in head:
        raise InputError(
            "this is the OpenTelemetry SDK's ConsoleSpanExporter output (a debugging print of each span, not "
            "OTLP: its ids and attributes are not in a form a reader can rely on); export the spans with "
            "ragmetrics.traces.sdk.OtlpJsonFileExporter(path) in a SimpleSpanProcessor instead, or through an "
            "OpenTelemetry Collector's file exporter (docs/traces.md)",
            source=str(path),
        )
    raise InputError(
        "cannot tell the trace format: no 'resourceSpans' (OTLP JSON, as OtlpJsonFileExporter or a "
        "Collector's file exporter writes it) and no 'observations' (a Langfuse export); if it is one of them, "
        "name it in the config: dataset.format: otlp or langfuse (docs/traces.md)",
        source=str(path),
    )


def read_traces(path: str | Path, *, format: str = "auto") -> TraceSet:
    """The traces of a file as samples, runs and operational figures (docs/traces.md). `format`: "otlp" (the
    OpenTelemetry Collector's file exporter: OTLP JSON, one export request per line or one document),
    "langfuse" (a Langfuse trace export with observations), or "auto" (from the file's content)."""
    if format not in TRACE_FORMATS:
        raise InputError(
            f"unknown trace format {format!r}; one of {', '.join(TRACE_FORMATS)}", field="format"
        )
    chosen = detect_trace_format(path) if format == "auto" else format
    if chosen == "otlp":
        spans = read_otlp_json(Path(path))
    else:
        from ragmetrics.traces.langfuse import read_langfuse_export

        spans = read_langfuse_export(Path(path))
    return traces_from_spans(spans, source=str(path))
