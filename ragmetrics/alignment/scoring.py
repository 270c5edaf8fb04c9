"""Scoring labelled samples for alignment: once per (prompt edit, sample), remembered, counted and bounded.

Every step asks for the scores of some samples under some prompt edit (none for the local judge). A score
already computed in this alignment is reused; one not yet computed costs a judge call (one sample scored on
the metric: one or more requests for an LLM judge, cache hits aside), which `calls` counts and `budget`
bounds. The judge's verdict cache sits underneath, so a killed alignment resumes without paying twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ragmetrics.judge.aligned.prompt_edit import PromptEdit
from ragmetrics.judge.base import Judge, RagSample
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.schema import TokenUsage

__all__ = ["BudgetExceeded", "Judged", "Scorer"]


class BudgetExceeded(Exception):
    """A step would spend more judge calls than the budget leaves."""


@dataclass(frozen=True)
class Judged:
    """A sample's score under one edit, the verdicts behind it, or the cause it failed with."""

    value: float | None
    verdicts: list[dict[str, object]]
    failure: str | None = None


def _sum_known(total: float | None, more: float | None) -> float | None:
    return None if total is None or more is None else total + more


def _edit_key(edit: PromptEdit | None) -> str:
    return "" if edit is None or edit.empty() else edit.model_dump_json()


@dataclass
class Scorer:
    """Scores samples on `metric` with the judge `make(edit)` builds (module doc)."""

    metric: str
    make: Callable[[PromptEdit | None], Judge]
    budget: int | None = None
    calls: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    _memo: dict[tuple[str, str], Judged] = field(default_factory=dict)
    _batches: int = 0
    _seen: dict[int, TokenUsage] = field(default_factory=dict)

    def _count_usage(self, judge: Judge, now: TokenUsage) -> None:
        """Add what `judge` spent since it was last counted (a judge reused across batches reports its
        running total; a cost stays unknown when any part of it is)."""
        counted = id(judge) in self._seen
        before = self._seen.get(id(judge), TokenUsage())
        self._seen[id(judge)] = now
        u = self.usage
        if now.cost_usd is None or (counted and before.cost_usd is None):
            spent_cost = None  # no price, or a running total that was unknown before: not a difference
        else:
            spent_cost = now.cost_usd - (before.cost_usd if counted and before.cost_usd is not None else 0.0)
        self.usage = TokenUsage(
            calls=u.calls + now.calls - before.calls,
            prompt_tokens=u.prompt_tokens + now.prompt_tokens - before.prompt_tokens,
            completion_tokens=u.completion_tokens + now.completion_tokens - before.completion_tokens,
            embedding_tokens=u.embedding_tokens + now.embedding_tokens - before.embedding_tokens,
            retries=u.retries + now.retries - before.retries,
            repairs=u.repairs + now.repairs - before.repairs,
            cost_usd=spent_cost if not self._batches else _sum_known(u.cost_usd, spent_cost),
        )

    def missing(self, samples: Sequence[RagSample], edit: PromptEdit | None) -> int:
        key = _edit_key(edit)
        return sum(1 for s in samples if (key, s.id) not in self._memo)

    def remaining(self) -> int | None:
        return None if self.budget is None else max(0, self.budget - self.calls)

    def score(self, samples: Sequence[RagSample], edit: PromptEdit | None = None) -> list[Judged]:
        key = _edit_key(edit)
        todo = [s for s in samples if (key, s.id) not in self._memo]
        if todo:
            left = self.remaining()
            if left is not None and len(todo) > left:
                raise BudgetExceeded(f"{len(todo)} judge calls needed, {left} left of the budget")
            judge = self.make(edit)
            result = evaluate_rag(todo, [self.metric], judge, name="align", progress=False)
            self.calls += len(todo)
            info = result.metadata.judge
            if info is not None:
                self._count_usage(judge, info.usage)
            self._batches += 1
            failed = {
                f.query_id: f"{f.cause}: {f.message}" for f in result.failures if f.metric == self.metric
            }
            for sample in todo:
                value = result.per_query.get(sample.id, {}).get(self.metric)
                detail = result.details.get(sample.id, {}).get(self.metric)
                verdicts = list(detail.verdicts) if detail is not None else []
                failure = None if value is not None else failed.get(sample.id, "not applicable")
                self._memo[(key, sample.id)] = Judged(value, verdicts, failure)
        return [self._memo[(key, s.id)] for s in samples]
