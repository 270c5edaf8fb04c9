"""Scores that do not apply, and scores whose input is missing: said per question, never a silent 0.

Two cases a night meets between its steps:

- **Not applicable.** An unanswerable question (`answerable: false`, a test set's `unanswerable` kind) has no
  relevant chunk and a placeholder reference: no ranking can be judged against it, so every retrieval metric is
  recorded as not applicable for it, with the reason, apart from the means (as reference-based judge metrics
  are, by `judge.base.reference_not_applicable`). So is a question without relevance judgments in a dataset
  that has them (trec_eval leaves such a query out); before this, a night scoring retrieval and judge metrics
  on such a dataset stopped with an internal error.
- **Missing input.** A question whose trace is missing has no ranking in any run built from the traces: every
  score of such a run for it fails with cause `trace_missing` (a run lacking a query would otherwise score it
  0 by trec_eval's convention, dragging the mean down by the missing share without a word).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from ragmetrics.schema import NotApplicableScore, RunResult, SampleFailure

__all__ = ["mark_missing", "mark_not_applicable", "not_applicable_note"]


def mark_not_applicable(result: RunResult, unjudged: Mapping[str, str]) -> RunResult:
    """`result` with every metric of every question in `unjudged` (id -> reason) recorded as not applicable."""
    if not unjudged:
        return result
    metrics = list(result.metadata.metrics)
    for qid in unjudged:
        result.per_query[qid] = {m: None for m in metrics}
    result.failures = [f for f in result.failures if f.query_id not in unjudged]
    result.not_applicable = [n for n in result.not_applicable if n.query_id not in unjudged] + [
        NotApplicableScore(query_id=qid, metric=m, reason=reason)
        for qid, reason in unjudged.items()
        for m in metrics
    ]
    result.metadata.extra_queries = [q for q in result.metadata.extra_queries if q not in unjudged]
    result.metadata.missing_queries = [q for q in result.metadata.missing_queries if q not in unjudged]
    result.metadata.num_queries = len(result.per_query)
    result.recompute_aggregate()
    return result


def mark_missing(result: RunResult, missing: Mapping[str, tuple[str, str]]) -> RunResult:
    """`result` with every score of every question in `missing` (id -> (cause, message)) failed with that
    cause, except scores already not applicable (an unanswerable question stays not applicable)."""
    if not missing:
        return result
    inapplicable = {(n.query_id, n.metric) for n in result.not_applicable}
    failures = [f for f in result.failures if f.query_id not in missing]
    for qid, (cause, message) in missing.items():
        scores = result.per_query.setdefault(qid, {})
        for metric in result.metadata.metrics:
            if (qid, metric) in inapplicable:
                scores[metric] = None
                continue
            scores[metric] = None
            failures.append(SampleFailure(query_id=qid, metric=metric, cause=cause, message=message))
    result.failures = failures
    result.metadata.missing_queries = [q for q in result.metadata.missing_queries if q not in missing]
    result.metadata.num_queries = len(result.per_query)
    result.recompute_aggregate()
    return result


def not_applicable_note(
    unjudged: Mapping[str, str], unanswerable: set[str], attacks: AbstractSet[str] = frozenset()
) -> str | None:
    """One line for the notes: how many questions retrieval metrics do not apply to, and why."""
    if not unjudged:
        return None
    named = sorted(q for q in unjudged if q in unanswerable)
    attacked = sorted(q for q in unjudged if q in attacks and q not in unanswerable)
    other = sorted(q for q in unjudged if q not in unanswerable and q not in attacks)
    parts = []
    if named:
        parts.append(f"{len(named)} unanswerable questions (answerable: false; e.g. {', '.join(named[:3])})")
    if attacked:
        parts.append(f"{len(attacked)} attack questions (scored by the attack metrics)")
    if other:
        parts.append(f"{len(other)} questions without relevance judgments (e.g. {', '.join(other[:3])})")
    return (
        f"not applicable, apart from the means: retrieval metrics for {' and '.join(parts)}; "
        "reference-based judge metrics for the unanswerable ones"
    )
