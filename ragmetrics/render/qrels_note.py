"""Where a report's relevance grades came from, said next to its numbers in every format (terminal, Markdown,
HTML, `ragmetrics score`): a retrieval verdict on pooled qrels is only as fair as the pool and its judge
(`nightly.qrels_provenance`)."""

from __future__ import annotations

from ragmetrics.schema import QrelsProvenance, Report

__all__ = ["AVOID", "qrels_lines", "report_qrels"]

AVOID = (
    "to avoid it: pool with an LLM judge, or with a judge model none of the compared systems uses (the local "
    "judge on e5: ragmetrics testset --pool-judge e5), or have people review the pooled grades (ragmetrics label "
    "DIR --metric qrels); docs/testset.md says what each choice measured"
)


def report_qrels(report: Report) -> QrelsProvenance | None:
    nightly = report.metadata.nightly
    return nightly.dataset.qrels if nightly is not None else None


def qrels_lines(provenance: QrelsProvenance | None) -> list[str]:
    """The provenance line, then one line per warning (prefixed '! '); [] without qrels."""
    if provenance is None:
        return []
    lines = [provenance.describe(), *(f"! {w}" for w in provenance.warnings)]
    return [*lines, AVOID] if provenance.warnings else lines
