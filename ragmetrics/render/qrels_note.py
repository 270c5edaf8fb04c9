"""Where a report's relevance grades came from, said next to its numbers in every format (terminal, Markdown,
HTML, `ragmetrics score`): a retrieval verdict on pooled qrels is only as fair as the pool and its judge
(`nightly.qrels_provenance`). The warnings about runs the qrels may favour go with the verdict, before any
table (`verdict_warnings`); the shares and the source-only means go with the provenance (`qrels_lines`)."""

from __future__ import annotations

from ragmetrics.schema import QrelsProvenance, Report

__all__ = ["AVOID", "qrels_lines", "report_qrels", "verdict_warnings"]

AVOID = (
    "to avoid it: pool every run you compare (ragmetrics testset --config night.yaml --pool config) and grade "
    "with a model none of them ranks with (--pool-judge e5, or an LLM judge), or have people review the pooled "
    "grades (ragmetrics label DIR --metric qrels); docs/testset.md says what each choice measured"
)


def report_qrels(report: Report) -> QrelsProvenance | None:
    nightly = report.metadata.nightly
    return nightly.dataset.qrels if nightly is not None else None


def verdict_warnings(provenance: QrelsProvenance | None) -> list[str]:
    """One line per compared run the qrels may favour (prefixed '! '), then how to avoid it; [] without any."""
    if provenance is None or not provenance.warnings:
        return []
    return [*(f"! {w}" for w in provenance.warnings), AVOID]


def qrels_lines(provenance: QrelsProvenance | None, *, warnings: bool = True) -> list[str]:
    """The provenance line, the source-only means, the runs that could not be checked, then (with `warnings`)
    one line per warning (prefixed '! '); [] without qrels."""
    if provenance is None:
        return []
    lines = [provenance.describe()]
    check = provenance.source_only
    if check is not None:
        for metric in check.metrics[:3]:
            means = sorted(
                ((run, v) for run, m in check.means.items() if (v := m.get(metric)) is not None),
                key=lambda rv: -rv[1],
            )
            lines.append(
                f"on source-only qrels ({check.questions} questions, each with its own source chunk, no grader), "
                f"{metric}: " + ", ".join(f"{run} {value:.3f}" for run, value in means)
            )
    if provenance.unchecked and provenance.by_origin.get("judge"):
        lines.append(
            "not checked for the pool's bias (rankings ragmetrics did not build, so what ranks them is unknown): "
            + ", ".join(provenance.unchecked)
        )
    return [*lines, *verdict_warnings(provenance)] if warnings else lines
