"""Tables of the all-pairs and multi-seed comparisons: Tukey's HSD per metric, and systems run with several
seeds (one row per pair of systems), for the terminal, Markdown and LaTeX reports."""

from __future__ import annotations

from ragmetrics._format import format_p
from ragmetrics.options import improvement
from ragmetrics.render._text import Grid, aligned
from ragmetrics.schema import Report

__all__ = ["seeds_grid", "tukey_grid"]

_SIGNIFICANT = "*"


def tukey_grid(report: Report, digits: int) -> Grid | None:
    """Every pair of runs per metric under Tukey's HSD, or None when the report has none."""
    pairs = report.metadata.tukey
    if not pairs:
        return None
    headers = ["metric", "baseline", "candidate", "n", "Δ mean", "simultaneous CI", "p (Tukey)", "sig"]
    grid = Grid(headers=headers, align=aligned(3, len(headers) - 3))
    blocked = "queries as blocks (two-way ANOVA)" if pairs[0].blocked else "one-way ANOVA (pairing unused)"
    grid.title = f"Tukey's HSD: all pairs at once, one family per metric; {blocked}"
    grid.styles = []
    previous = None
    for t in pairs:
        if previous is not None and t.metric != previous:
            grid.sections.add(len(grid.rows) - 1)
        previous = t.metric
        grid.rows.append([
            t.metric, t.baseline, t.candidate, str(t.n), f"{t.mean_diff:+.{digits}f}",
            f"[{t.ci_low:+.{digits}f}, {t.ci_high:+.{digits}f}]", format_p(t.p_value),
            _SIGNIFICANT if t.significant else "",
        ])  # fmt: skip
        style = ("green" if improvement(t.metric, t.mean_diff) > 0 else "red") if t.significant else None
        grid.styles.append([style] * len(headers))
    grid.notes = [
        f"{_SIGNIFICANT} significant: Tukey p <= {report.settings.alpha:g} (the studentized range over every run "
        "already accounts for the number of pairs; no further correction); CI: simultaneous, every pair at once"
    ]
    return grid


def seeds_grid(report: Report, digits: int) -> Grid | None:
    """Systems run with several seeds, compared pairwise, or None when the report has none."""
    pairs = report.metadata.seed_comparisons
    if not pairs:
        return None
    headers = ["metric", "baseline", "candidate", "seeds", "n", "Δ mean", "95% CI (hier.)", "seed sd", "p",
               "p (corr.)", "sig"]  # fmt: skip
    grid = Grid(headers=headers, align=aligned(3, len(headers) - 3))
    grid.title = "Systems over several seeds (candidate minus baseline; seeds averaged per query)"
    grid.styles = []
    for s in pairs:
        grid.rows.append([
            s.metric, s.baseline, s.candidate, f"{len(s.seeds_baseline)}/{len(s.seeds_candidate)}", str(s.n),
            f"{s.mean_diff:+.{digits}f}", f"[{s.ci_low:+.{digits}f}, {s.ci_high:+.{digits}f}]",
            f"{s.seed_sd_baseline:.{digits}f}/{s.seed_sd_candidate:.{digits}f}", format_p(s.p_value),
            format_p(s.p_corrected), _SIGNIFICANT if s.significant else "",
        ])  # fmt: skip
        style = ("green" if improvement(s.metric, s.mean_diff) > 0 else "red") if s.significant else None
        grid.styles.append([style] * len(headers))
    grid.notes = [
        f"test: {pairs[0].test} over queries on seed-averaged scores; CI: hierarchical bootstrap (queries "
        "resampled for both systems, then each system's seeds); seed sd: spread of the per-seed means"
    ]
    return grid
