"""What traces measured per question of a night's dataset (filled by `nightly.traced`, read by the runs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragmetrics.retrieval.run import Run

__all__ = ["TracedOutputs"]


@dataclass
class TracedOutputs:
    """Per question id: what its trace measured, which questions have none and why, and the ranking of
    every traced retriever or reranker."""

    source: str
    latency_s: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, float] = field(default_factory=dict)
    cost: dict[str, float] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    lacking: dict[str, dict[str, str]] = field(default_factory=dict)
    """question id -> sample field -> what its trace lacks for it, with the attribute looked for."""
    final_span: str | None = None
    rankings: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    """span name -> question id -> document id -> score."""
    notes: list[str] = field(default_factory=list)

    def span_run_names(self, prefix: str) -> dict[str, str]:
        """run name -> span name, for every traced retriever or reranker other than the one whose documents
        became the contexts."""
        return {
            f"{prefix}/{span}": span
            for span, ranking in self.rankings.items()
            if span != self.final_span and any(ranking.values())
        }

    def span_runs(self, prefix: str) -> dict[str, Run]:
        """A Run per traced retriever or reranker of `span_run_names`; a question without a trace is absent
        from each (its scores fail with `trace_missing`: `nightly.applicability.mark_missing`)."""
        from ragmetrics.retrieval.run import Run

        return {
            name: Run.from_dict(self.rankings[span], name=name, source=self.source)
            for name, span in self.span_run_names(prefix).items()
        }

    def missing_failures(self) -> dict[str, tuple[str, str]]:
        """question id -> (cause, message) for every question without a trace."""
        return {qid: ("trace_missing", why) for qid, why in self.missing.items()}
