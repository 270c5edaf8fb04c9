"""A night's dataset from traces: what the traced system answered, retrieved and spent, per question.

With a QA dataset (`builtin` or `path`) beside `traces`, the dataset says what the system is judged against
(questions, references, qrels, reference tool calls) and the traces say what it did: a trace belongs to the
question whose id its root span's `metadata` gives, else to the question with the same text (spaces
normalised). A question traced twice is scored on its last trace (noted); a trace that matches no question
is noted, never scored against a wrong one; a question without a trace keeps no answer, contexts or ranking,
and its scores fail with cause `trace_missing`. Without a QA dataset the traces are the dataset (ids from
`metadata`, else the trace id).

The dataset's own run (`source: dataset`) is then the traced system: its answers and contexts, the ranking of
its last retriever or reranker, and latency, tokens and cost as operational metrics. Every other traced
retriever or reranker becomes a retrieval run of its own, named `<run>/<span name>`.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from ragmetrics.errors import InputError
from ragmetrics.nightly.qa_dataset import QADataset
from ragmetrics.nightly.qa_files import read_passages
from ragmetrics.nightly.qa_rows import validate_rows
from ragmetrics.nightly.traced_outputs import TracedOutputs

if TYPE_CHECKING:
    from ragmetrics.nightly.config_dataset import DatasetConfig
    from ragmetrics.traces import TraceSet

__all__ = ["attach_traces"]

_SPACE = re.compile(r"\s+")


def _key(question: str) -> str:
    return _SPACE.sub(" ", question).strip()


def _row(sample: Any, ranking: dict[str, float] | None, sample_id: str) -> dict[str, Any]:
    row: dict[str, Any] = {"id": sample_id, "question": sample.question, "answer": sample.answer}
    if sample.contexts is not None:
        row["contexts"] = sample.contexts
        if sample.context_ids is not None:
            row["context_ids"] = sample.context_ids
    if ranking:
        row["retrieved_ids"] = list(ranking)
        row["retrieved_scores"] = list(ranking.values())
    if sample.tool_calls is not None:
        row["tool_calls"] = [call.model_dump() for call in sample.tool_calls]
    if sample.conversation_id is not None:
        row["conversation_id"], row["turn"] = sample.conversation_id, sample.turn
    return row


def _match(traces: TraceSet, qa: QADataset | None) -> tuple[dict[str, str], list[str]]:
    """trace id -> question id, and what could not be matched."""
    notes: list[str] = []
    unmatched: list[str] = []
    if qa is None:
        return {s.id: traces.sample_ids.get(s.id, s.id) for s in traces.samples}, notes
    ids = {s.id for s in qa.samples}
    by_text: dict[str, list[str]] = {}
    for sample in qa.samples:
        by_text.setdefault(_key(sample.question), []).append(sample.id)
    matched: dict[str, str] = {}
    for sample in traces.samples:
        given = traces.sample_ids.get(sample.id)
        if given is not None and given in ids:
            matched[sample.id] = given
            continue
        same = by_text.get(_key(sample.question), [])
        if len(same) == 1:
            matched[sample.id] = same[0]
        elif len(same) > 1:
            notes.append(
                f"trace {sample.id}: its question is asked by {len(same)} rows of {qa.source} "
                f"({', '.join(same[:3])}); give the question's id in the root span's metadata to say which"
            )
        else:
            said = f"metadata id {given!r} and " if given is not None else ""
            unmatched.append(f"trace {sample.id}: {said}question {sample.question[:60]!r}")
    if unmatched:
        notes.append(
            f"{len(unmatched)} traces match no question of {qa.source} by metadata id or text, so are not "
            f"scored; e.g. {'; '.join(unmatched[:3])}"
        )
    return matched, notes


def attach_traces(config: DatasetConfig, qa: QADataset | None) -> QADataset:
    """The dataset a night scores when `dataset.traces` is set (module doc)."""
    from ragmetrics.traces import read_traces

    assert config.traces is not None
    fmt = config.format if config.path is None and config.format in ("otlp", "langfuse") else "auto"
    traces = read_traces(config.traces, format=fmt)
    source = str(config.traces)
    out = TracedOutputs(source=source)
    for problem in traces.problems:
        out.notes.append(f"trace {problem.trace_id}: {problem.field}: {problem.message}")
    matched, unmatched = _match(traces, qa)
    out.notes.extend(unmatched)
    finals: dict[str, int] = {}
    chosen: dict[str, str] = {}  # question id -> trace id (the last traced)
    retraced: list[str] = []
    for sample in traces.samples:
        qid = matched.get(sample.id)
        if qid is None:
            continue
        if qid in chosen and qid not in retraced:
            retraced.append(qid)
        chosen[qid] = sample.id
    if retraced:
        out.notes.append(
            f"{len(retraced)} questions were traced more than once (e.g. {', '.join(map(repr, retraced[:3]))}): "
            "the last trace of each is scored"
        )
    if qa is None and config.limit is not None:  # the first N traces, and only their figures and rankings
        chosen = dict(list(chosen.items())[: config.limit])
    by_trace = {s.id: s for s in traces.samples}
    problems: dict[str, dict[str, str]] = {}
    for problem in traces.problems:
        said = problems.setdefault(problem.trace_id, {})
        said[problem.field] = "; ".join(
            filter(None, [said.get(problem.field), f"trace {problem.trace_id}: {problem.message}"])
        )
    rows: list[dict[str, Any]] = []
    for qid, trace_id in chosen.items():
        span = traces.final_span.get(trace_id)
        if span is not None:
            finals[span] = finals.get(span, 0) + 1
        ranking = traces.runs[span].rankings.get(trace_id) if span is not None else None
        rows.append(_row(by_trace[trace_id], ranking, qid))
        if trace_id in problems:
            out.lacking[qid] = problems[trace_id]
        for name, run in traces.runs.items():
            if trace_id in run.rankings:
                out.rankings.setdefault(name, {})[qid] = run.rankings[trace_id]
        for measured, values in (
            (out.latency_s, traces.latency_s),
            (out.tokens, traces.tokens),
            (out.cost, traces.cost),
        ):
            if trace_id in values:
                measured[qid] = values[trace_id]
    out.final_span = max(finals, key=lambda s: finals[s]) if finals else None
    if not rows:
        raise InputError(
            "no trace could be scored" + (f": {out.notes[0]}" if out.notes else ""), source=source
        )
    traced = validate_rows(rows, source=source, mapping={}, on_bad_row=config.on_bad_row,
                           limit=None, language=config.language)  # fmt: skip
    if qa is None:
        traced.traced = out
        if config.passages is not None:
            traced.passages = read_passages(config.passages)
        return traced
    return _merged(qa, traced, out)


def _merged(qa: QADataset, traced: QADataset, out: TracedOutputs) -> QADataset:
    """The QA dataset's questions and truth with the traces' outputs (a question without a trace: none)."""
    outputs = {s.id: s for s in traced.samples}
    samples = []
    digest = hashlib.sha256(qa.truth_fingerprint.encode("utf-8"))
    for sample in qa.samples:
        got = outputs.get(sample.id)
        if got is None:
            out.missing[sample.id] = f"no trace in {out.source} for this question (by metadata id or text)"
        update = {
            "answer": got.answer if got else None,
            "contexts": got.contexts if got else None,
            "context_ids": got.context_ids if got else None,
            "tool_calls": got.tool_calls if got else None,
        }
        samples.append(sample.model_copy(update=update))
        digest.update(json.dumps(update, sort_keys=True, default=str, ensure_ascii=False).encode("utf-8"))
    if out.missing:
        out.notes.append(f"{len(out.missing)} of {len(qa.samples)} questions have no trace: their scores fail "
                         "with cause trace_missing")  # fmt: skip
    qa.samples = samples
    asked = {s.id for s in samples}
    qa.retrieved = {qid: ranking for qid, ranking in traced.retrieved.items() if qid in asked}
    qa.fingerprint = "sha256:" + digest.hexdigest()
    qa.source = f"{qa.source} + {out.source}"
    qa.traced = out
    return qa
