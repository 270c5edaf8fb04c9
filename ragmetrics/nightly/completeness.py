"""Is the night complete? Failure rates per run and metric, failures grouped by cause, call failures marked.

A night whose judge or pipeline could not be reached must not look like a quiet night: when the share of
failed scores of any run and metric exceeds `max_failure_rate`, the night is incomplete (exit 3), the causes
are printed grouped ("60 of 60 context_precision scores of run 'rag': connection refused at ..."), and the
gate says "incomplete" instead of "ok" or a data mismatch.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmetrics.schema import RunResult, SampleFailure

if TYPE_CHECKING:
    from ragmetrics.nightly.answers import AnsweredRun

__all__ = ["Incomplete", "failure_summary", "find_incomplete", "mark_call_failures", "outputs_jsonl"]

_SHOWN_GROUPS = 12


@dataclass(frozen=True)
class Incomplete:
    """A run/metric whose share of failed scores exceeds the allowed rate."""

    run: str
    metric: str
    failed: int
    total: int
    top_cause: str

    def describe(self) -> str:
        return (
            f"{self.run} / {self.metric}: {self.failed} of {self.total} scores failed "
            f"({self.failed / self.total:.0%}); most often: {self.top_cause}"
        )


def scored_units(result: RunResult, metric: str) -> int:
    """How many scores of `metric` the run was to have: queries holding the metric, plus failed ones, less
    those where it does not apply (an unanswerable question's retrieval metrics)."""
    queries = {q for q, s in result.per_query.items() if metric in s}
    queries.update(f.query_id for f in result.failures if f.metric == metric)
    queries.difference_update(n.query_id for n in result.not_applicable if n.metric == metric)
    return len(queries)


def _cause_text(failure: SampleFailure) -> str:
    """The failure's cause and message with what varies per sample (ids, counts) left out, so equal causes group."""
    message = failure.message.replace(repr(failure.query_id), "<sample>").replace(
        failure.query_id, "<sample>"
    )
    message = re.sub(r"\b(sample|query) '<sample>'\s*", "", message)
    return f"{failure.cause}: {message}" if not message.startswith(failure.cause) else message


def find_incomplete(results: Sequence[RunResult], max_failure_rate: float) -> list[Incomplete]:
    """Every run/metric whose failed share exceeds `max_failure_rate`, in report order."""
    found = []
    for result in results:
        for metric in result.metrics:
            failures = [f for f in result.failures if f.metric == metric]
            if not failures:
                continue
            total = scored_units(result, metric)
            if total and len(failures) / total > max_failure_rate:
                top = Counter(_cause_text(f) for f in failures).most_common(1)[0][0]
                found.append(Incomplete(result.name, metric, len(failures), total, top))
    return found


def failure_summary(
    results: Sequence[RunResult], incomplete: Sequence[Incomplete], max_failure_rate: float
) -> list[str]:
    """stderr lines: one per run and cause, with how many questions it cost and which metrics (the per-sample
    detail is in report.json's failures); the verdict on completeness is said by whoever ends the night."""
    lines: list[str] = []
    groups: dict[tuple[str, str], dict[str, int]] = {}
    questions: dict[tuple[str, str], set[str]] = {}
    totals: dict[tuple[str, str], int] = {}
    for result in results:
        for failure in result.failures:
            key = (result.name, _cause_text(failure))
            by_metric = groups.setdefault(key, {})
            by_metric[failure.metric] = by_metric.get(failure.metric, 0) + 1
            questions.setdefault(key, set()).add(failure.query_id)
            totals.setdefault((result.name, failure.metric), scored_units(result, failure.metric))
    ordered = sorted(groups, key=lambda k: -len(questions[k]))
    for i, (run, cause) in enumerate(ordered):
        if i == _SHOWN_GROUPS:
            lines.append(
                f"ragmetrics: ... {len(ordered) - _SHOWN_GROUPS} more causes of failure in report.json"
            )
            break
        by_metric = groups[(run, cause)]
        counts: dict[str, list[str]] = {}
        for metric, count in by_metric.items():
            counts.setdefault(f"{count} of {totals[(run, metric)]}", []).append(metric)
        said = "; ".join(f"{', '.join(metrics)}: {count}" for count, metrics in counts.items())
        lines.append(
            f"ragmetrics: run {run!r}: {len(questions[(run, cause)])} questions failed ({said}): {_clip(cause)}"
        )
    return lines


def _clip(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _lacking(answers: AnsweredRun, failure: SampleFailure) -> tuple[str, str] | None:
    """Why the output lacks the fields `failure.metric` reads, where the run knows (`AnsweredRun.lacking`)."""
    lacks = answers.lacking.get(failure.query_id)
    if not lacks:
        return None
    from ragmetrics.judge.registry import required_fields

    try:
        needed = set(required_fields(failure.metric))
    except (KeyError, ValueError):  # not a judge metric of the registry: nothing to name
        return None
    said = [why for name, why in lacks.items() if name in needed]
    return ("trace_incomplete", "; ".join(said)) if said else None


def mark_call_failures(results: dict[str, RunResult], answered: Mapping[str, AnsweredRun]) -> None:
    """Questions the pipeline or generator produced nothing for: every score of theirs that the missing
    output made impossible carries the call's cause, and a retrieval score computed from an absent ranking
    (0 by convention) is replaced by that failure, so a broken call never scores as a bad answer."""
    for name, run_answers in answered.items():
        result = results.get(name)
        if result is None or not (run_answers.failed or run_answers.lacking):
            continue
        changed = False
        failures = []
        recorded = {(f.query_id, f.metric) for f in result.failures}
        for failure in result.failures:
            call = run_answers.failed.get(failure.query_id) or _lacking(run_answers, failure)
            if call is not None and failure.cause == "missing_field":
                failure = SampleFailure(
                    query_id=failure.query_id, metric=failure.metric, cause=call[0], message=call[1]
                )
                changed = True
            failures.append(failure)
        pipeline_failed = {
            q: c for q, c in run_answers.failed.items() if c[0].startswith(("pipeline_", "trace_"))
        }
        for qid, (cause, message) in pipeline_failed.items():
            scores = result.per_query.get(qid, {})
            for metric in result.metrics:
                if metric in scores and scores[metric] is not None and (qid, metric) not in recorded:
                    scores[metric] = None
                    failures.append(SampleFailure(query_id=qid, metric=metric, cause=cause, message=message))
                    changed = True
        if changed:
            result.failures = failures
            result.recompute_aggregate()


def outputs_jsonl(records: Sequence[Mapping[str, Any]]) -> str:
    """pipeline_outputs.jsonl: one line per call, with its output or its failure."""
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n" for r in records)
