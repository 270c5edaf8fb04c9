"""Spans with the OpenInference conventions turned into what ragmetrics scores.

One trace is one question. Its root span (no parent in the trace) gives the question (`input.value`) and the
answer (`output.value`; a JSON object's "answer", "output" or "response", else the text), its latency (end
minus start) and its session (`session.id`, a conversation). Each RETRIEVER span gives a ranking
(`retrieval.documents.{i}.document.id`, `.content`, `.score`), named by the span's name, and the last one (or a
RERANKER's `reranker.output_documents`, when there is one) gives the contexts the answer was written from.
LLM spans give tokens (`llm.token_count.total`, else prompt + completion), cost (`llm.cost.total`) and the model
(`llm.model_name`), and the tool calls the model made (`llm.output_messages.{i}.message.tool_calls.{j}.
tool_call.function.name` / `.arguments`). What a trace lacks for a field is a problem named per trace, with the
attribute looked for, never a silent drop.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ragmetrics._numbers import number_problem
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.tool_calls import ToolCall, parse_tool_calls
from ragmetrics.traces.otlp import Span

__all__ = ["TraceProblem", "TraceSet", "TracedRun", "traces_from_spans"]

KIND = "openinference.span.kind"
DOCUMENTS_PROBLEM = "ragmetrics.documents.problem"
"""Set by a reader (Langfuse) on a retriever span whose output it could not read as documents: a problem of
the trace, never an empty retrieval."""
SAMPLE_ID_KEYS = ("sample_id", "question_id", "id")
"""Keys of a root span's `metadata` that give the question's id in the team's QA dataset."""
_DOC_PARTS = frozenset({"id", "content", "score", "metadata"})
"""`{prefix}.{i}.document.{part}`: the parts of a retrieved or reranked document that are read."""
METADATA_ID_KEYS = ("id", "doc_id", "document_id", "chunk_id")
"""Where a document's id is looked for in its `document.metadata` when `document.id` is absent (the LangChain
instrumentor records a Document's metadata but not its `id` field)."""
METADATA_SCORE_KEYS = ("score", "relevance_score")
_TOOL = re.compile(
    r"^llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.function\.(name|arguments)$"
)


@dataclass(frozen=True)
class TraceProblem:
    """What one trace lacks: the field that cannot be filled and the attribute that would fill it."""

    trace_id: str
    field: str
    message: str


@dataclass
class TracedRun:
    """One traced retriever or reranker: per trace (query), document id -> score, in rank order."""

    name: str
    rankings: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass
class TraceSet:
    """The samples the traces hold, the rankings of their retrievers, operational figures per trace, and
    what could not be read."""

    source: str
    samples: list[RagSample] = field(default_factory=list)
    runs: dict[str, TracedRun] = field(default_factory=dict)
    latency_s: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, float] = field(default_factory=dict)
    cost: dict[str, float] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)
    sample_ids: dict[str, str] = field(default_factory=dict)
    """trace id -> the id the team gave the question (root `metadata` JSON: "sample_id", "question_id" or
    "id"), for matching traces to a QA dataset's questions."""
    final_span: dict[str, str] = field(default_factory=dict)
    """trace id -> the retriever or reranker whose documents became the contexts (its run's name)."""
    problems: list[TraceProblem] = field(default_factory=list)


def _first(meta: dict[str, Any], keys: tuple[str, ...], kind: Any) -> Any:
    """The first of `keys` whose value in `meta` is of `kind` (booleans never count as numbers)."""
    return next(
        (meta[k] for k in keys if isinstance(meta.get(k), kind) and not isinstance(meta.get(k), bool)), None
    )


def _documents(span: Span, prefix: str) -> list[dict[str, Any]]:
    """The span's documents in order; an id or score missing as an attribute is taken from the document's
    `metadata` (a JSON object) where it holds one (`METADATA_ID_KEYS`, `METADATA_SCORE_KEYS`)."""
    found: dict[int, dict[str, Any]] = defaultdict(dict)
    head = prefix + "."
    for key, value in span.attributes.items():
        if not key.startswith(head):
            continue
        index, dot, part = key[len(head) :].partition(".document.")
        if dot and part in _DOC_PARTS and index.isascii() and index.isdigit():
            found[int(index)][part] = value
    for doc in found.values():
        meta = doc.pop("metadata", None)
        if isinstance(meta, str):
            try:
                meta = json.loads(meta)
            except json.JSONDecodeError:
                meta = None
        if not isinstance(meta, dict):
            continue
        if "id" not in doc:
            given = _first(meta, METADATA_ID_KEYS, str | int)
            if given is not None and str(given).strip():
                doc["id"] = str(given)
        if "score" not in doc:
            score = _first(meta, METADATA_SCORE_KEYS, int | float)
            if score is not None:
                doc["score"] = score
    return [found[i] for i in sorted(found)]


def _text(value: Any, keys: tuple[str, ...], role: str) -> str | None:
    """A span's input or output as text: a JSON object's first known key, the last `role` message of a chat
    message list (or of an object's "messages"), else the value itself."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value
        value = parsed
    if (
        isinstance(value, dict)
        and isinstance(value.get("messages"), list)
        and not any(k in value for k in keys)
    ):
        value = value["messages"]
    if isinstance(value, list) and value and all(isinstance(m, dict) and "content" in m for m in value):
        said = [m["content"] for m in value if m.get("role", role) == role and isinstance(m["content"], str)]
        return said[-1] if said else None
    if isinstance(value, dict):
        for key in keys:
            if isinstance(value.get(key), str):
                return str(value[key])
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _tool_calls(llm_spans: list[Span]) -> list[ToolCall]:
    """The calls the model made, read by the dataset's own parser (`judge.tool_calls.parse_tool_calls`):
    arguments that are not a JSON object are a ValueError naming the call, never a guessed value."""
    raw: list[dict[str, Any]] = []
    for span in llm_spans:
        parts: dict[tuple[int, int], dict[str, Any]] = defaultdict(dict)
        for key, value in span.attributes.items():
            match = _TOOL.match(key)
            if match:
                parts[(int(match.group(1)), int(match.group(2)))][match.group(3)] = value
        raw.extend(part for _, part in sorted(parts.items()))
    return parse_tool_calls(raw, "tool_calls") or []


def _one_trace(trace_id: str, spans: list[Span], out: TraceSet) -> None:
    ids = {s.span_id for s in spans}
    roots = sorted(
        (s for s in spans if s.parent_id is None or s.parent_id not in ids), key=lambda s: s.start_ns
    )
    if not roots:  # every span's parent is in the trace: the parent links go round in a circle
        out.problems.append(
            TraceProblem(trace_id, "question", "no root span: the spans' parent ids form a cycle")
        )
        return
    root = roots[0]
    question = _text(root.attributes.get("input.value"), ("question", "query", "input", "user_input"), "user")
    if not question or not question.strip():
        out.problems.append(TraceProblem(trace_id, "question", f"root span {root.name!r} has no input.value"))
        return
    answer = _text(
        root.attributes.get("output.value"), ("answer", "output", "response", "result"), "assistant"
    )
    if answer is None:
        out.problems.append(TraceProblem(trace_id, "answer", f"root span {root.name!r} has no output.value"))
    by_start = sorted(spans, key=lambda s: s.start_ns)
    retrievers = [s for s in by_start if s.attributes.get(KIND) == "RETRIEVER"]
    rerankers = [s for s in by_start if s.attributes.get(KIND) == "RERANKER"]
    llms = [s for s in by_start if s.attributes.get(KIND) == "LLM"]
    read: dict[str, list[dict[str, Any]]] = {}  # span id -> its documents, read once
    for span, prefix, what in [
        *((span, "retrieval.documents", "retriever") for span in retrievers),
        *((span, "reranker.output_documents", "reranker") for span in rerankers),
    ]:
        docs = read[span.span_id] = _documents(span, prefix)
        run = out.runs.setdefault(span.name, TracedRun(span.name))
        if span.attributes.get(DOCUMENTS_PROBLEM) is not None:  # no ranking for this query, not an empty one
            out.problems.append(
                TraceProblem(
                    trace_id, "retrieved_ids", f"{what} {span.name!r}: {span.attributes[DOCUMENTS_PROBLEM]}"
                )
            )
            continue
        run.rankings[trace_id] = _ranking(docs, trace_id, f"{what} {span.name!r}", out)
    final = rerankers[-1] if rerankers else (retrievers[-1] if retrievers else None)
    contexts: list[str] | None = None
    context_ids: list[str] | None = None
    if final is None:
        out.problems.append(
            TraceProblem(trace_id, "contexts", "no RETRIEVER or RERANKER span (openinference.span.kind)")
        )
    else:
        out.final_span[trace_id] = final.name
        docs = read[final.span_id]
        if final.attributes.get(DOCUMENTS_PROBLEM) is not None:
            out.problems.append(
                TraceProblem(
                    trace_id, "contexts", f"span {final.name!r}: {final.attributes[DOCUMENTS_PROBLEM]}"
                )
            )
        elif any("content" not in d for d in docs):
            out.problems.append(
                TraceProblem(
                    trace_id, "contexts", f"span {final.name!r}: a document without document.content"
                )
            )
        else:
            contexts = [str(d["content"]) for d in docs]
            if docs and all("id" in d for d in docs):
                context_ids = [str(d["id"]) for d in docs]
    tokens: float | None = 0.0 if llms else None
    cost: float | None = None
    for span in llms:
        total = _measure(span, "llm.token_count.total", trace_id, out)
        if total is None and "llm.token_count.total" not in span.attributes:
            parts = [_measure(span, f"llm.token_count.{k}", trace_id, out) for k in ("prompt", "completion")]
            # No count at all is unknown, not 0 tokens; one part given counts alone.
            total = None if all(p is None for p in parts) else sum(p for p in parts if p is not None)
        tokens = None if tokens is None or total is None else tokens + total
        spent = _measure(span, "llm.cost.total", trace_id, out)
        if spent is not None:
            cost = (cost or 0.0) + spent
        if isinstance(span.attributes.get("llm.model_name"), str):
            out.models[trace_id] = span.attributes["llm.model_name"]
    try:
        calls = _tool_calls(llms)
    except ValueError as exc:  # named for this trace; the sample keeps no tool calls rather than wrong ones
        out.problems.append(TraceProblem(trace_id, "tool_calls", f"{exc} (llm.output_messages...tool_call)"))
        calls = []
    sample = RagSample(id=trace_id, question=question, answer=answer, contexts=contexts, context_ids=context_ids,
                       tool_calls=calls if calls else None)  # fmt: skip
    out.samples.append(sample)
    out.latency_s[trace_id] = root.seconds
    if tokens is not None:
        out.tokens[trace_id] = tokens
    if cost is not None:
        out.cost[trace_id] = cost
    given = _given_id(root.attributes.get("metadata"))
    if given is not None:
        out.sample_ids[trace_id] = given
    session = root.attributes.get("session.id")
    if isinstance(session, str) and session:
        out.sessions[trace_id] = session


def _measure(span: Span, key: str, trace_id: str, out: TraceSet) -> float | None:
    """A count or cost attribute as a number; absent: None; present but not a usable number (text, not finite,
    beyond `_numbers.MAX_MAGNITUDE`): a named problem of the trace, and None (the figure is not counted)."""
    value = span.attributes.get(key)
    if value is None:
        return None
    problem = number_problem(value)
    if problem is not None:
        field = "cost" if "cost" in key else "tokens"
        out.problems.append(
            TraceProblem(trace_id, field, f"span {span.name!r}: {key}: {problem}; not counted")
        )
        return None
    return float(value)


def _given_id(metadata: Any) -> str | None:
    """The question's own id from the root span's `metadata` (a JSON object, or an object already)."""
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError:
            return None
    if isinstance(metadata, dict):
        for key in SAMPLE_ID_KEYS:
            value = metadata.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
                return str(value)
    return None


def _ranking(docs: list[dict[str, Any]], trace_id: str, what: str, out: TraceSet) -> dict[str, float]:
    """Document id -> score; without scores, rank order gives n, n-1, ..., 1 (the span lists best first)."""
    ranking: dict[str, float] = {}
    for rank, doc in enumerate(docs):
        if "id" not in doc:
            out.problems.append(
                TraceProblem(trace_id, "retrieved_ids", f"{what}: document {rank} has no document.id")
            )
            continue
        score = doc.get("score")
        usable = isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score)
        if score is not None and not usable:
            out.problems.append(
                TraceProblem(trace_id, "retrieved_scores", f"{what}: document {rank} has score {score!r}; "
                             "ranked by its position instead")
            )  # fmt: skip
        ranking[str(doc["id"])] = float(score) if usable and score is not None else float(len(docs) - rank)
    return ranking


def traces_from_spans(spans: list[Span], *, source: str = "spans") -> TraceSet:
    """Group spans by trace and read each (module doc); traces in order of their first span's start."""
    out = TraceSet(source=source)
    by_trace: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    for trace_id, members in sorted(by_trace.items(), key=lambda kv: min(s.start_ns for s in kv[1])):
        _one_trace(trace_id, members, out)
    turns: dict[str, int] = {}
    for i, sample in enumerate(out.samples):  # a session's traces, in start order, are its turns
        session = out.sessions.get(sample.id)
        if session is not None:
            turns[session] = turns.get(session, 0) + 1
            out.samples[i] = sample.model_copy(update={"conversation_id": session, "turn": turns[session]})
    return out
