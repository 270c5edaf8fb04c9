"""Traces in: what a RAG system recorded as it ran (OpenTelemetry spans with the OpenInference conventions),
read back as samples, rankings and operational figures (docs/traces.md)."""

from __future__ import annotations

from ragmetrics.traces.openinference import TracedRun, TraceProblem, TraceSet, traces_from_spans
from ragmetrics.traces.otlp import Span, read_otlp_json

__all__ = [
    "Span",
    "TraceProblem",
    "TraceSet",
    "TracedRun",
    "read_otlp_json",
    "read_traces",
    "traces_from_spans",
]


def read_traces(path: str, *, format: str = "otlp") -> TraceSet:
    """The traces of an OTLP JSON file (the OpenTelemetry Collector's file exporter: one export request per
    line, or one JSON document) as samples and runs; `format` is "otlp" (the only one read so far)."""
    from pathlib import Path

    from ragmetrics.errors import InputError

    if format != "otlp":
        raise InputError(f"trace format {format!r} is not read yet; use 'otlp'", field="format")
    return traces_from_spans(read_otlp_json(Path(path)), source=str(path))
