"""The sufficient-context breakdown in every format (terminal, Markdown, HTML and the PR summary all read these
grids and lines): per run the six cells with counts and Wilson intervals, per compared pair the sentences that
say where a drop comes from and the table of cells that moved.

It only reads `NightlyRun.sufficiency` (computed by `comparison.sufficiency`): every format shows the same
numbers.
"""

from __future__ import annotations

from ragmetrics.render._text import Grid, aligned, to_terminal
from ragmetrics.schema import Report
from ragmetrics.schema_sufficiency import OUTCOMES, RunSufficiency, SufficiencyPair, SufficiencySection

__all__ = ["breakdown_grid", "pair_grid", "report_sufficiency", "sufficiency_intro", "sufficiency_terminal"]


def report_sufficiency(report: Report) -> SufficiencySection | None:
    """The night's breakdown, when it has one (a night with `context_sufficiency` and an answer metric)."""
    nightly = report.metadata.nightly
    return nightly.sufficiency if nightly is not None else None


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _label(sufficient: bool) -> str:
    return "sufficient" if sufficient else "insufficient"


def sufficiency_intro(section: SufficiencySection) -> str:
    """What the cells mean and who rated them, in one sentence."""
    first = section.runs[0] if section.runs else None
    correct = f"correct = {first.answer_metric} >= {first.threshold:g}; " if first is not None else ""
    level = f"{100 * first.confidence:.0f}% " if first is not None else ""
    return (
        f"Context rated sufficient or not by {section.judge}, crossed with the answer: {correct}abstained = the "
        f"answer declines; hallucinated = anything else. Cells: count (share of rated questions, {level}Wilson "
        "interval). Insufficient context is a retrieval failure; a hallucination or abstention despite "
        "sufficient context is a generation failure (Joren et al., ICLR 2025)."
    )


def breakdown_grid(run: RunSufficiency) -> Grid:
    """Rows sufficient / insufficient, columns the outcomes and all, each 'count (share, low-high)'."""
    grid = Grid(
        headers=["context", *OUTCOMES, "all"],
        align=aligned(1, len(OUTCOMES) + 1),
        title=f"{run.run}: {run.rated} questions rated",
    )
    by_cell = {(c.sufficient, c.outcome): c for c in run.cells}
    for sufficient in (True, False):
        shown = []
        for outcome in OUTCOMES:
            c = by_cell[(sufficient, outcome)]
            shown.append(f"{c.count} ({_pct(c.share)}, {_pct(c.low)}-{_pct(c.high)})")
        total = run.sufficient if sufficient else run.rated - run.sufficient
        grid.rows.append([_label(sufficient), *shown, str(total)])
    if run.unrated:
        listed = "; ".join(f"{qid}: {why}" for qid, why in list(run.unrated.items())[:5])
        more = f" (+{len(run.unrated) - 5} more in report.json)" if len(run.unrated) > 5 else ""
        grid.notes.append(f"Not rated ({len(run.unrated)}): {listed}{more}")
    return grid


def pair_grid(pair: SufficiencyPair) -> Grid:
    """Each cell's count in A and B, the questions that left and entered it, and its exact McNemar p."""
    grid = Grid(
        headers=["context", "outcome", pair.run_a, pair.run_b, "left", "entered", "McNemar p"],
        align=aligned(2, 5),
        title=f"{pair.run_b} against {pair.run_a}: {pair.paired} questions rated in both",
    )
    for c in pair.cells:
        grid.rows.append([_label(c.sufficient), c.outcome, str(c.count_a), str(c.count_b), str(c.left),
                          str(c.entered), f"{c.p_value:.3g}"])  # fmt: skip
    if pair.not_paired:
        grid.notes.append(
            f"Not rated in both runs, left out ({len(pair.not_paired)}): {', '.join(pair.not_paired[:10])}"
            + (" ..." if len(pair.not_paired) > 10 else "")
        )
    return grid


def sufficiency_terminal(section: SufficiencySection) -> str:
    """The terminal's section: the pairs' sentences first (the answer), then the runs' cells (the evidence)."""
    lines = ["Sufficient context: retrieval or generation (docs/judge.md)"]
    for pair in section.pairs:
        lines += [f"  {pair.run_b} against {pair.run_a}:", *(f"    {line}" for line in pair.lines)]
    lines += [f"  {note}" for note in section.notes]
    text = "\n".join(lines) + "\n"
    for run in section.runs:
        text += "\n" + to_terminal(breakdown_grid(run)).rstrip() + "\n"
    return text + sufficiency_intro(section)
