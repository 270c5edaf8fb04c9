"""OTLP JSON, as the OpenTelemetry Collector's file exporter writes it, read into plain spans.

The file holds export requests (`{"resourceSpans": [...]}`), one per line (JSON Lines) or a single document;
each resource holds scopes (`scopeSpans`, or `instrumentationLibrarySpans` from older exporters) holding spans.
A span's attributes are `{"key", "value": {"stringValue" | "intValue" | "doubleValue" | "boolValue" |
"arrayValue" | "kvlistValue" | "bytesValue"}}`; integers come as strings (protobuf's JSON mapping of int64).
Read line by line, so a large file is never held whole; every malformed line or span is an InputError naming
the file and line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmetrics.errors import InputError
from ragmetrics.traces._lines import json_lines_or_document

__all__ = ["Span", "read_otlp_json", "spans_of_request"]


@dataclass(frozen=True)
class Span:
    """One span: ids, name, times in nanoseconds since the epoch, and its attributes as Python values."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    line: int = 0
    error: bool = False
    """The span's status is ERROR (OTLP `status.code` 2, or "STATUS_CODE_ERROR" as some exporters write it)."""

    @property
    def seconds(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e9


def _value(value: Any, where: str) -> Any:
    """An OTLP AnyValue as a Python value."""
    if not isinstance(value, dict) or len(value) > 1:
        raise ValueError(f"{where}: not an OTLP value")
    if not value:
        return None
    ((kind, inner),) = value.items()
    if kind == "stringValue":
        return str(inner)
    if kind == "intValue":
        return int(inner)
    if kind == "doubleValue":
        number = float(inner)
        return number
    if kind == "boolValue":
        return bool(inner)
    if kind == "arrayValue":
        return [_value(v, where) for v in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return {kv["key"]: _value(kv.get("value", {}), where) for kv in (inner or {}).get("values", [])}
    if kind == "bytesValue":
        return str(inner)
    raise ValueError(f"{where}: unknown value kind {kind!r}")


def _attributes(items: Any, where: str) -> dict[str, Any]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise ValueError(f"{where}: attributes must be a list")
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise ValueError(f"{where}: an attribute without a key")
        out[item["key"]] = _value(item.get("value", {}), f"{where}, attribute {item['key']!r}")
    return out


def _spans_of(request: Any, line: int) -> Iterator[Span]:
    if not isinstance(request, dict):
        raise ValueError("expected an OTLP export request (an object with resourceSpans)")
    for resource in request.get("resourceSpans", []) or []:
        scopes = resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []
        for scope in scopes:
            for raw in scope.get("spans", []) or []:
                if not isinstance(raw, dict):
                    raise ValueError("a span that is not an object")
                trace_id, span_id = raw.get("traceId"), raw.get("spanId")
                if (
                    not isinstance(trace_id, str)
                    or not trace_id
                    or not isinstance(span_id, str)
                    or not span_id
                ):
                    raise ValueError("a span without traceId or spanId")
                parent = raw.get("parentSpanId")
                if parent is not None and not isinstance(parent, str):
                    raise ValueError(f"span {span_id!r}: parentSpanId must be a string")
                name = raw.get("name", "")
                try:
                    start, end = int(raw.get("startTimeUnixNano", 0)), int(raw.get("endTimeUnixNano", 0))
                except (TypeError, ValueError):
                    raise ValueError(f"span {name!r}: start or end time is not a whole number") from None
                yield Span(
                    trace_id=trace_id,
                    span_id=span_id,
                    parent_id=parent or None,
                    name=str(name),
                    start_ns=start,
                    end_ns=end,
                    attributes=_attributes(raw.get("attributes"), f"span {name!r}"),
                    line=line,
                    error=_is_error(raw.get("status")),
                )


def _is_error(status: Any) -> bool:
    if not isinstance(status, dict):
        return False
    code = status.get("code")
    return code in (2, "2", "STATUS_CODE_ERROR", "ERROR")


def spans_of_request(request: Any, *, line: int = 0, source: str = "request") -> list[Span]:
    """The spans of one OTLP JSON export request; an InputError naming `source` and `line` if it is not one."""
    return _checked_spans(request, line, source)


def read_otlp_json(path: Path) -> list[Span]:
    """Every span of the file, in file order (module doc). Each line becomes spans as it is read, so only the
    spans are held, never the whole file's parsed JSON."""
    source = str(path)
    spans: list[Span] = []
    for number, request in json_lines_or_document(path, "an OTLP JSON line"):
        for item in request if isinstance(request, list) else [request]:
            spans.extend(_checked_spans(item, number, source))
    if not spans:
        raise InputError("no span in the file: is it the collector's traces export?", source=source)
    return spans


def _checked_spans(request: Any, line: int, source: str) -> list[Span]:
    try:
        return list(_spans_of(request, line))
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise InputError(f"not an OTLP trace export: {exc}", source=source, line=line) from None
