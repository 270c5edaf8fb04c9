"""A Langfuse trace export read as spans with the OpenInference attributes, so one mapping
(`traces.openinference`) turns every trace format into samples and runs.

The file holds traces with their observations, as Langfuse's API returns them (`GET /api/public/traces/{id}`,
or a page of `GET /api/public/traces` with `{"data": [...]}`) or the UI's export: a JSON array, one JSON
object, or one trace per line. A trace's `input`/`output` become the root span's `input.value`/
`output.value`, its `sessionId` the `session.id`, its `metadata` the `metadata`. Observations map by `type`:

| Langfuse | OpenInference |
|---|---|
| `RETRIEVER` (or a SPAN named like a retriever, see below) | RETRIEVER; `output` (a list of documents, or `{"documents": [...]}`) -> `retrieval.documents.{i}.document.id/content/score` |
| `GENERATION` | LLM; `model` -> `llm.model_name`, `usageDetails`/`usage` -> `llm.token_count.prompt/completion/total`, `costDetails.total`/`calculatedTotalCost` -> `llm.cost.total`, an assistant message's `tool_calls` -> `llm.output_messages.0.message.tool_calls.{j}` |
| others | their type as the span kind (TOOL, AGENT, CHAIN, ...) |

A document is a string (content, no id) or an object: id from `id`, `document_id`, `doc_id` or
`metadata.id`; content from `content`, `page_content` or `text`; score from `score` or `metadata.score`.
Observations given only as ids (the list endpoint's short form) are an error naming the trace: export the
traces with their observations.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ragmetrics.errors import InputError
from ragmetrics.traces._lines import json_lines_or_document
from ragmetrics.traces.openinference import DOCUMENTS_PROBLEM
from ragmetrics.traces.otlp import Span

__all__ = ["read_langfuse_export", "spans_from_langfuse"]

_RETRIEVER_NAMES = ("retriev", "search", "rerank")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ns(value: Any, where: str) -> int:
    if value is None:
        return 0
    if not isinstance(value, str):
        raise ValueError(f"{where}: a time must be an ISO 8601 string")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{where}: {value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise ValueError(f"{where}: {value!r} has no time zone")
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000  # exact: no float seconds


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _documents(output: Any) -> list[Any] | None:
    if isinstance(output, dict):
        output = output.get("documents", output.get("output"))
    return output if isinstance(output, list) else None


def _document_attributes(prefix: str, documents: list[Any]) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for i, doc in enumerate(documents):
        key = f"{prefix}.{i}.document"
        if isinstance(doc, str):
            attributes[f"{key}.content"] = doc
            continue
        meta: dict[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
        doc_id = next(
            (doc[k] for k in ("id", "document_id", "doc_id") if doc.get(k) is not None), meta.get("id")
        )
        if isinstance(doc_id, str | int) and not isinstance(doc_id, bool):
            attributes[f"{key}.id"] = str(doc_id)
        content = next(
            (doc[k] for k in ("content", "page_content", "text") if isinstance(doc.get(k), str)), None
        )
        if content is not None:
            attributes[f"{key}.content"] = content
        score = _number(doc.get("score", meta.get("score")))
        if score is not None:
            attributes[f"{key}.score"] = score
    return attributes


def _unreadable(output: Any, docs: list[Any] | None) -> str | None:
    """Why a retriever's output cannot be read as documents (None when it can, or when there is no output)."""
    if output is None:
        return None
    if docs is None:
        return f"output is a {type(output).__name__}, not a list of documents (or {{'documents': [...]}})"
    odd = next((i for i, d in enumerate(docs) if not isinstance(d, str | dict)), None)
    if odd is not None:
        return f"document {odd} is a {type(docs[odd]).__name__}, not a text or an object"
    return None


def _generation_attributes(obs: dict[str, Any]) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    if isinstance(obs.get("model"), str):
        attributes["llm.model_name"] = obs["model"]
    usage = obs.get("usageDetails") or obs.get("usage") or {}
    if isinstance(usage, dict):
        prompt = _number(usage.get("input", usage.get("promptTokens")))
        completion = _number(usage.get("output", usage.get("completionTokens")))
        total = _number(usage.get("total", usage.get("totalTokens")))
        for name, value in (("prompt", prompt), ("completion", completion), ("total", total)):
            if value is not None:  # a count that is not a whole number is passed on, and named by the mapping
                attributes[f"llm.token_count.{name}"] = int(value) if value.is_integer() else value
    costs = obs.get("costDetails") if isinstance(obs.get("costDetails"), dict) else {}
    cost = _number(costs.get("total")) if costs else None
    cost = cost if cost is not None else _number(obs.get("calculatedTotalCost"))
    if cost is not None:
        attributes["llm.cost.total"] = cost
    output = obs.get("output")
    if (
        isinstance(output, dict)
        and "choices" in output
        and isinstance(output["choices"], list)
        and output["choices"]
    ):
        output = output["choices"][0].get("message") if isinstance(output["choices"][0], dict) else None
    calls = output.get("tool_calls") if isinstance(output, dict) else None
    for j, call in enumerate(calls if isinstance(calls, list) else []):
        function = call.get("function", call) if isinstance(call, dict) else {}
        prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call.function"
        if isinstance(function, dict):
            if function.get("name") is not None:
                attributes[f"{prefix}.name"] = function["name"]
            if function.get("arguments") is not None:
                attributes[f"{prefix}.arguments"] = _json_text(function["arguments"])
    return attributes


def _kind(obs: dict[str, Any]) -> str:
    kind = str(obs.get("type") or "SPAN").upper()
    if kind == "GENERATION":
        return "LLM"
    if kind == "SPAN":
        name = str(obs.get("name") or "").lower()
        if any(word in name for word in _RETRIEVER_NAMES) and _documents(obs.get("output")) is not None:
            return "RERANKER" if "rerank" in name else "RETRIEVER"
        return "CHAIN"
    return kind


def spans_from_langfuse(trace: Any, line: int = 0) -> Iterator[Span]:
    """One Langfuse trace (with its observations) as spans: the trace itself is the root span."""
    if not isinstance(trace, dict) or not isinstance(trace.get("id"), str) or not trace["id"]:
        raise ValueError("a trace must be an object with an 'id'")
    trace_id = trace["id"]
    where = f"trace {trace_id!r}"
    observations = trace.get("observations") or []
    if not isinstance(observations, list):
        raise ValueError(f"{where}: 'observations' must be a list")
    if any(isinstance(o, str) for o in observations):
        raise ValueError(
            f"{where}: observations are listed by id only; export the traces with their observations "
            "(GET /api/public/traces/{id})"
        )
    start = _ns(trace.get("timestamp"), f"{where}, timestamp")
    latency = _number(trace.get("latency"))
    ends = [_ns(o.get("endTime"), f"{where}, endTime") for o in observations if isinstance(o, dict)]
    end = start + int(latency * 1e9) if latency is not None else max([start, *ends])
    root_attributes: dict[str, Any] = {"openinference.span.kind": "CHAIN"}
    if trace.get("input") is not None:
        root_attributes["input.value"] = _json_text(trace["input"])
    if trace.get("output") is not None:
        root_attributes["output.value"] = _json_text(trace["output"])
    if isinstance(trace.get("sessionId"), str) and trace["sessionId"]:
        root_attributes["session.id"] = trace["sessionId"]
    if isinstance(trace.get("metadata"), dict):
        root_attributes["metadata"] = json.dumps(trace["metadata"], ensure_ascii=False)
    root_id = f"{trace_id}:root"
    yield Span(trace_id, root_id, None, str(trace.get("name") or "trace"), start, end, root_attributes, line)
    for obs in observations:
        if not isinstance(obs, dict) or not isinstance(obs.get("id"), str) or not obs["id"]:
            raise ValueError(f"{where}: an observation must be an object with an 'id'")
        parent = obs.get("parentObservationId")
        if parent is not None and not isinstance(parent, str):
            raise ValueError(f"{where}, observation {obs['id']!r}: parentObservationId must be a string")
        kind = _kind(obs)
        attributes: dict[str, Any] = {"openinference.span.kind": kind}
        docs = _documents(obs.get("output"))
        if kind in ("RETRIEVER", "RERANKER"):
            unreadable = _unreadable(obs.get("output"), docs)
            if unreadable is not None:  # named by the mapping, never read as "retrieved nothing"
                attributes[DOCUMENTS_PROBLEM] = unreadable
            else:
                prefix = "retrieval.documents" if kind == "RETRIEVER" else "reranker.output_documents"
                attributes.update(_document_attributes(prefix, docs or []))
        elif kind == "LLM":
            attributes.update(_generation_attributes(obs))
        obs_where = f"{where}, observation {obs['id']!r}"
        yield Span(
            trace_id,
            obs["id"],
            parent or root_id,
            str(obs.get("name") or kind.lower()),
            _ns(obs.get("startTime"), f"{obs_where}, startTime"),
            _ns(obs.get("endTime"), f"{obs_where}, endTime"),
            attributes,
            line,
        )


def _traces_in(document: Any) -> list[Any]:
    if isinstance(document, dict) and isinstance(document.get("data"), list):
        return list(document["data"])
    return list(document) if isinstance(document, list) else [document]


def read_langfuse_export(path: Path) -> list[Span]:
    """Every trace of a Langfuse export as spans (module doc); errors name the file and line. Each line
    becomes spans as it is read, so only the spans are held."""
    source = str(path)
    spans: list[Span] = []
    for number, document in json_lines_or_document(path, "a JSON line"):
        spans.extend(_checked_spans(document, number, source))
    if not spans:
        raise InputError("no trace in the file: is it a Langfuse trace export?", source=source)
    return spans


def _checked_spans(document: Any, line: int, source: str) -> list[Span]:
    spans: list[Span] = []
    for trace in _traces_in(document):
        try:
            spans.extend(spans_from_langfuse(trace, line))
        except (ValueError, TypeError, AttributeError, OverflowError) as exc:
            raise InputError(f"not a Langfuse trace: {exc}", source=source, line=line) from None
    return spans
