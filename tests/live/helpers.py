"""OTLP JSON traces with chosen times for the live tests: a question, retrieved passages, an answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FACTS = [
    "The harbour bridge opened to traffic in March 1932.",
    "The library lends books for three weeks and charges no fees.",
    "The market opens at seven on Saturdays and closes at noon.",
    "The museum holds a collection of maps from the sixteenth century.",
    "The station has four platforms and a ticket office on the north side.",
    "The river floods every spring when the snow melts in the mountains.",
]
QUESTIONS = [
    "When did the harbour bridge open?",
    "How long does the library lend books?",
    "When does the market open on Saturdays?",
    "What does the museum hold?",
    "How many platforms does the station have?",
    "When does the river flood?",
]
WRONG = "Penguins are flightless birds that live mostly in the southern hemisphere."


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def trace(n: int, start_s: float, *, good: bool = True, session: str | None = None, error: bool = False,
          seconds: float = 1.0) -> dict[str, Any]:  # fmt: skip
    """One export request holding one trace (root CHAIN, a RETRIEVER, an LLM), trace id from n."""
    k = n % len(FACTS)
    trace_id = f"{n:032x}"
    start = int(start_s * 1e9)
    end = start + int(seconds * 1e9)
    root_attrs = [
        _attr("openinference.span.kind", "CHAIN"),
        _attr("input.value", json.dumps({"question": QUESTIONS[k]})),
        _attr("output.value", FACTS[k] if good else WRONG),
    ]
    if session is not None:
        root_attrs.append(_attr("session.id", session))
    retriever = [_attr("openinference.span.kind", "RETRIEVER"),
                 _attr("retrieval.documents.0.document.id", f"d{k}"),
                 _attr("retrieval.documents.0.document.content", FACTS[k]),
                 _attr("retrieval.documents.0.document.score", 1.0)]  # fmt: skip
    llm = [_attr("openinference.span.kind", "LLM"), _attr("llm.token_count.total", 120),
           _attr("llm.cost.total", 0.0012)]  # fmt: skip
    spans = [
        {"traceId": trace_id, "spanId": f"{n:012x}0001", "name": "rag", "startTimeUnixNano": str(start),
         "endTimeUnixNano": str(end), "attributes": root_attrs,
         **({"status": {"code": 2}} if error else {})},
        {"traceId": trace_id, "spanId": f"{n:012x}0002", "parentSpanId": f"{n:012x}0001", "name": "retrieve",
         "startTimeUnixNano": str(start + 1000), "endTimeUnixNano": str(start + 2000), "attributes": retriever},
        {"traceId": trace_id, "spanId": f"{n:012x}0003", "parentSpanId": f"{n:012x}0001", "name": "llm",
         "startTimeUnixNano": str(start + 3000), "endTimeUnixNano": str(end - 1000), "attributes": llm},
    ]  # fmt: skip
    return {
        "resourceSpans": [
            {"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}
        ]
    }


def append(path: Path, requests: list[dict[str, Any]]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        for request in requests:
            handle.write(json.dumps(request) + "\n")
